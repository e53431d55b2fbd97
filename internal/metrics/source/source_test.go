package source_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

const (
	quickstart = "../../../examples/quickstart"
	recording  = quickstart + "/metrics.om"
)

// parse registers the usage flags on a flag set, parses args and checks
// them.
func parse(t *testing.T, args ...string) (source.Options, error) {
	t.Helper()
	var o source.Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	check := source.AddFlags(fs, &o)
	require.NoError(t, fs.Parse(args))
	return o, check()
}

func TestAddFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want source.Options
	}{
		{name: "a recording", args: []string{"--metrics-file", "m.om"},
			want: source.Options{MetricsFile: "m.om", Preset: preset.Kubex, Prometheus: prometheus.Config{Timeout: prometheus.DefaultTimeout}}},
		{name: "a server, a header, a label and a time", args: []string{"--prometheus-url", "http://p:9090", "--prometheus-header", "X-Scope-OrgID: gpu",
			"--cluster-label", `cluster="prod"`, "--at", "1796040000", "--metrics-preset", "hami"},
			want: source.Options{Preset: preset.HAMi, At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Prometheus: prometheus.Config{
				URL: "http://p:9090", Timeout: prometheus.DefaultTimeout, Headers: http.Header{"X-Scope-Orgid": {"gpu"}}},
				ClusterLabel: plan.ClusterLabel{Name: "cluster", Value: "prod"}}},
		{name: "a recording of one cluster among several", args: []string{"--metrics-file", "m.om", "--cluster-label", "cluster = prod-eu"},
			want: source.Options{MetricsFile: "m.om", Preset: preset.Kubex, Prometheus: prometheus.Config{Timeout: prometheus.DefaultTimeout},
				ClusterLabel: plan.ClusterLabel{Name: "cluster", Value: "prod-eu"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(t, tt.args...)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestAddFlagsMistakes: each mistake names its flag, as a usage mistake.
func TestAddFlagsMistakes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{name: "no source", err: "`--metrics-file` or `--prometheus-url` is required"},
		{name: "two sources", args: []string{"--metrics-file", "m", "--prometheus-url", "http://p"},
			err: "`--metrics-file` and `--prometheus-url` exclude each other: usage comes from one source"},
		{name: "a server's flag without one", args: []string{"--metrics-file", "m", "--prometheus-timeout", "1m"}, err: "`--prometheus-timeout` needs `--prometheus-url`"},
		{name: "a URL of another scheme", args: []string{"--prometheus-url", "ftp://p"}, err: "invalid `--prometheus-url`: prometheus URL ftp://p: want http:// or https:// and a host"},
		{name: "a header without a colon", args: []string{"--prometheus-url", "http://p", "--prometheus-header", "X-Token secret"},
			err: "invalid `--prometheus-header` \"X-Token\"…: write it as 'Name: value'"},
		{name: "a label without a value", args: []string{"--prometheus-url", "http://p", "--cluster-label", "prod"},
			err: "invalid `--cluster-label` \"prod\": write it as name=value, e.g. cluster=prod-eu"},
		{name: "a label name Prometheus refuses", args: []string{"--metrics-file", "m", "--cluster-label", "k8s-cluster=a"},
			err: "invalid `--cluster-label` \"k8s-cluster=a\": write it as name=value, e.g. cluster=prod-eu"},
		{name: "an unknown preset", args: []string{"--metrics-file", "m", "--metrics-preset", "nvml"}, err: "invalid `--metrics-preset`: "},
		{name: "no timeout", args: []string{"--prometheus-url", "http://p", "--prometheus-timeout", "0s"}, err: "invalid `--prometheus-timeout` 0s: want a positive duration"},
		{name: "a time in milliseconds", args: []string{"--metrics-file", "m", "--at", "1796040000000"}, err: "invalid `--at`: \"1796040000000\" is not a plausible time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.args...)
			require.ErrorContains(t, err, tt.err)
			var fe *config.FlagError
			require.True(t, errors.As(err, &fe), "%T", err)
		})
	}
}

func TestParseTime(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "2026-11-30T12:00:00Z", want: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)},
		{in: "2026-11-30T13:00:00+01:00", want: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)},
		{in: "1796040000.5", want: time.Date(2026, 11, 30, 12, 0, 0, 5e8, time.UTC)},
		{in: "yesterday", err: `"yesterday" is neither RFC 3339 (2026-11-30T12:00:00Z) nor Unix seconds`},
		{in: "0", err: `"0" is not a plausible time: Unix seconds from 946684800 (2000) to 32503680000 (3000)`},
		{in: "NaN", err: `"NaN" is neither RFC 3339`},
		{in: "3001-01-01T00:00:00Z", err: "use one from the year 2000 to 3000"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := source.ParseTime(tt.in)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// counter records what a plan tells its progress.
type counter struct{ events []string }

func (c *counter) Start(label string, total int) {
	c.events = append(c.events, "start "+label)
	_ = total
}
func (c *counter) Step()  { c.events = append(c.events, "step") }
func (c *counter) Clear() { c.events = append(c.events, "clear") }

// TestPlanCountsQueries: a plan of the quickstart tells its progress of
// each stage and counts one step per query; without a progress it tells
// nothing, and plans the same.
func TestPlanCountsQueries(t *testing.T) {
	c := &counter{}
	o := source.Options{MetricsFile: recording, Progress: c}
	p, name, err := o.Plan(context.Background(), plan.Options{Repo: quickstart}, slog.New(slog.DiscardHandler), time.Now)
	require.NoError(t, err)
	require.Equal(t, "the recording metrics.om", name)
	require.Equal(t, []string{"start reading the repository", "start querying usage"}, c.events[:2])
	steps := 0
	for _, e := range c.events {
		if e == "step" {
			steps++
		}
	}
	require.Equal(t, len(p.Queries), steps)
	require.Equal(t, "clear", c.events[len(c.events)-1])

	quiet := source.Options{MetricsFile: recording}
	q, _, err := quiet.Plan(context.Background(), plan.Options{Repo: quickstart}, slog.New(slog.DiscardHandler), time.Now)
	require.NoError(t, err)
	require.Equal(t, p.Summary(), q.Summary())
}

// TestPlanAtOutsideTheRecording: an evaluation time far from every sample
// is a usage mistake naming the recording's span.
func TestPlanAtOutsideTheRecording(t *testing.T) {
	o := source.Options{MetricsFile: recording, At: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	_, _, err := o.Plan(context.Background(), plan.Options{Repo: quickstart}, slog.New(slog.DiscardHandler), time.Now)
	require.ErrorContains(t, err, "`--at` 2025-01-01T00:00:00Z is outside the recording: its samples run from ")
	var fe *config.FlagError
	require.True(t, errors.As(err, &fe))
}

// gcPercent is the GC percent now.
func gcPercent() int {
	v := debug.SetGCPercent(-1)
	debug.SetGCPercent(v)
	return v
}

// gcWatch is a progress that notes the GC percent at each query, and as
// the edits begin.
type gcWatch struct {
	during  []int
	editing []int
	// cyclesQueried and cyclesEditing count the collections at the last
	// query and as the edits begin.
	cyclesQueried, cyclesEditing uint64
}

func (w *gcWatch) Start(label string, _ int) {
	if label == "editing the manifests" {
		w.editing = append(w.editing, gcPercent())
		w.cyclesEditing = gcCycles()
	}
}
func (w *gcWatch) Step() {
	w.during = append(w.during, gcPercent())
	w.cyclesQueried = gcCycles()
}

// gcCycles counts the collections so far.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
func (w *gcWatch) Clear() {}

// TestPlanCollectsOftenWhileHoldingARecording: while a plan evaluates
// against the recording it holds, the GC percent lets garbage grow to a
// tenth of the live heap, or to 48 MiB when that is more (TestHeldPercent
// has the large heaps), and never past 100. The quickstart's heap is far
// below 48 MiB, so the percent stays unless it was above 100. The edits
// and their proofs, and all after, run at what it was (at 10, 300
// overlays took 1.39 times krusty's CPU; at 100, 1.29). A lower setting,
// GOGC=off included, stays.
func TestPlanCollectsOftenWhileHoldingARecording(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct{ before, during int }{
		{200, 100},
		{100, 100},
		{50, 50},
		{5, 5},
		{-1, -1},
	} {
		debug.SetGCPercent(tc.before)
		w := &gcWatch{}
		o := source.Options{MetricsFile: recording, Progress: w}
		_, _, err := o.Plan(context.Background(), plan.Options{Repo: quickstart}, slog.New(slog.DiscardHandler), time.Now)
		require.NoError(t, err)
		require.NotEmpty(t, w.during)
		for _, v := range w.during {
			require.Equal(t, tc.during, v, "GC percent while evaluating, with %d before", tc.before)
		}
		require.Equal(t, []int{tc.before}, w.editing, "GC percent as the edits begin")
		require.Equal(t, tc.before, gcPercent(), "GC percent after the plan")
	}
}

// TestPlanCollectsBeforeTheEdits: once decided, the plan holds nothing of
// its recording, and a collection before the edits sets the next one's
// goal by what they hold: without it the goal was twice a heap that held
// the recording (at 10,000 changes, 343 MiB reached with 121 MiB live).
// With collections off, none is made.
func TestPlanCollectsBeforeTheEdits(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		percent int
		collect bool
	}{
		{200, true},
		{100, true},
		{50, true},
		{-1, false},
	} {
		debug.SetGCPercent(tc.percent)
		w := &gcWatch{}
		o := source.Options{MetricsFile: recording, Progress: w}
		_, _, err := o.Plan(context.Background(), plan.Options{Repo: quickstart}, slog.New(slog.DiscardHandler), time.Now)
		require.NoError(t, err)
		require.Equal(t, tc.collect, w.cyclesEditing > w.cyclesQueried, "GC percent %d: collections at the last query %d, as the edits begin %d",
			tc.percent, w.cyclesQueried, w.cyclesEditing)
	}
}
