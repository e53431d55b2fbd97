package openmetrics_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// hang bounds what must return at once and would otherwise hang or run
// for hours: a minute, which a loaded 2-core machine under -race does
// not take for work of milliseconds, and which tells it from a hang.
const hang = time.Minute

// TestOpenRecordedGzipBomb opens a small gzip file of many zeros: no
// newline, so the line bound stops it after a megabyte, where reading the
// whole file first would take all it inflates to.
func TestOpenRecordedGzipBomb(t *testing.T) {
	var buf bytes.Buffer
	z, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	zeros := make([]byte, 1<<20)
	for range 64 {
		_, err := z.Write(zeros)
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())
	require.Less(t, buf.Len(), 1<<20, "the bomb should be small")
	path := filepath.Join(t.TempDir(), "zeros.om.gz")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = openmetrics.OpenRecorded(path)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	require.EqualError(t, err, path+":1: line longer than 1 MiB (a recording's lines are short: is this OpenMetrics text?)")
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20), "allocated for 64 MiB of zeros")
	require.Less(t, elapsed, hang)
}

// TestOpenRecordedTruncatedGzip cuts a gzipped recording short: the read
// error names the file and the line it broke off in.
func TestOpenRecordedTruncatedGzip(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join("..", "testdata", "cluster.om"))
	require.NoError(t, err)
	z := metricstest.Gzipped(t, plain)
	path := filepath.Join(t.TempDir(), "cut.om.gz")
	require.NoError(t, os.WriteFile(path, z[:len(z)/2], 0o644))
	_, err = openmetrics.OpenRecorded(path)
	require.ErrorContains(t, err, "read recorded usage "+path+":")
	require.ErrorContains(t, err, "unexpected EOF")
}

func TestParseRecordedLongLines(t *testing.T) {
	const bound = 1 << 20
	// line returns a valid sample line of n bytes, its newline included.
	line := func(n int) string {
		head, tail := `x{l="`, `"} 1 1700000000`+"\n"
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	tests := []struct {
		name    string
		file    string
		wantErr string
	}{
		{name: "a line of exactly the bound", file: "# TYPE x gauge\n" + line(bound) + "# EOF\n"},
		{name: "long lines one after the other", file: line(bound) + line(bound-1) + line(70<<10) + "# EOF\n"},
		{
			name:    "a byte over the bound",
			file:    "# TYPE x gauge\n" + line(bound+1) + "# EOF\n",
			wantErr: "long.om:2: line longer than 1 MiB (a recording's lines are short: is this OpenMetrics text?)",
		},
		{
			name:    "no newline at all",
			file:    strings.Repeat("x", 3*bound),
			wantErr: "long.om:1: line longer than 1 MiB (a recording's lines are short: is this OpenMetrics text?)",
		},
		{
			name:    "a long last line without its newline",
			file:    line(bound)[:bound-1],
			wantErr: `long.om:1: file ends without "# EOF" (OpenMetrics requires it as the last line)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := openmetrics.ParseRecorded(strings.NewReader(tt.file), "long.om")
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotEmpty(t, r.Series())
		})
	}
}

// TestKeep checks what the options keep, and that the span and the ends
// of the recording are those of the whole file whatever is dropped.
func TestKeep(t *testing.T) {
	const pod = "chat-7d9f8c6b5d-x2b4z"
	nan := math.NaN() // a staleness marker
	rec := new(metricstest.Recording).
		Add(metricstest.UsageOf(metricstest.SM, "team-a", pod, "server"), 0, time.Minute, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9).
		Add(`other{pod="`+pod+`"}`, 0, time.Minute, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9).
		Add(metricstest.PodOwner("team-a", pod, "ReplicaSet", "chat-7d9f8c6b5d"), 0, time.Minute, 1, 1, nan).
		Add(metricstest.Series("kube_pod_start_time", "namespace", "team-a", "pod", pod), 0, time.Minute, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9).
		// A wrong clock, a year ahead.
		Add(`other{pod="`+pod+`"}`, 365*24*time.Hour, time.Minute, 10).String()
	all, err := openmetrics.ParseRecorded(strings.NewReader(rec), "keep.om")
	require.NoError(t, err)
	require.Equal(t, 1, all.Span().Stragglers)
	require.Equal(t, 34, all.Span().Line)

	var (
		owner = `kube_pod_owner{namespace="team-a",owner_is_controller="true",owner_kind="ReplicaSet",owner_name="chat-7d9f8c6b5d",pod="` + pod + `",uid="u-` + pod + `"}`
		start = `kube_pod_start_time{namespace="team-a",pod="` + pod + `"}`
		other = `other{pod="` + pod + `"}`
		smS   = metricstest.SM + `{container="server",namespace="team-a",pod="` + pod + `"}`
		every = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	)
	// minutes lists the samples of a series at the given minutes, each
	// valued its minute.
	minutes := func(s string, ms ...int) []string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s %d@%d", s, m, metricstest.T0.Add(time.Duration(m)*time.Minute).UnixMilli()))
		}
		return out
	}
	// The owner reports 1 at minutes 0 and 1, then goes stale.
	ownerAt := func(m int, v string) string {
		return fmt.Sprintf("%s %s@%d", owner, v, metricstest.T0.Add(time.Duration(m)*time.Minute).UnixMilli())
	}
	window := openmetrics.KeepWindow(metricstest.T0.Add(3*time.Minute), metricstest.T0.Add(6*time.Minute))
	tests := []struct {
		name string
		opts []openmetrics.Option
		want []string
	}{
		{
			name: "the named metrics and kube-state-metrics",
			opts: []openmetrics.Option{openmetrics.KeepMetrics(metricstest.SM)},
			want: slices.Concat([]string{ownerAt(0, "1"), ownerAt(1, "1"), ownerAt(2, "NaN")}, minutes(start, every...), minutes(smS, every...)),
		},
		{
			name: "kube-state-metrics alone",
			opts: []openmetrics.Option{openmetrics.KeepMetrics()},
			want: slices.Concat([]string{ownerAt(0, "1"), ownerAt(1, "1"), ownerAt(2, "NaN")}, minutes(start, every...)),
		},
		{
			// kube-state-metrics series keep their newest report before
			// the window (not the staleness marker): it still answers.
			name: "a window",
			opts: []openmetrics.Option{openmetrics.KeepMetrics(metricstest.SM), window},
			want: slices.Concat([]string{ownerAt(1, "1")}, minutes(start, 2, 3, 4, 5, 6), minutes(smS, 3, 4, 5, 6)),
		},
		{
			name: "a window over every metric",
			opts: []openmetrics.Option{window},
			want: slices.Concat([]string{ownerAt(1, "1")}, minutes(start, 2, 3, 4, 5, 6), minutes(smS, 3, 4, 5, 6), minutes(other, 3, 4, 5, 6)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := openmetrics.ParseRecorded(strings.NewReader(rec), "keep.om", tt.opts...)
			require.NoError(t, err)
			got := metricstest.Dump(r)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			require.Equal(t, want, got)
			require.Equal(t, all.Span(), r.Span())
			require.Equal(t, all.Oldest(), r.Oldest())
			require.Equal(t, all.Newest(), r.Newest())
		})
	}
}

// TestKeepAnswersAlike opens the quickstart's recording with only what its
// plan reads, over windows ending at several times, and checks every
// answer against the whole recording's.
func TestKeepAnswersAlike(t *testing.T) {
	const repo = "../../../examples/quickstart"
	path := filepath.Join(repo, "metrics.om")
	gov, err := plan.Govern(context.Background(), plan.Options{Repo: repo})
	qs := gov.Queries
	require.NoError(t, err)
	require.NotEmpty(t, qs)
	names := preset.Kubex.MetricsOf(qs)
	// The SM counter too: the exporter writes it where Kubex's stack does
	// not record the gauge from it.
	require.Equal(t, []string{"kubex_gpu_container_memory_footprint_percent", metricstest.SM, metricstest.SM + "_seconds_total"}, names)

	all, err := openmetrics.OpenRecorded(path)
	require.NoError(t, err)
	end := all.Span().Newest
	var longest time.Duration
	for _, q := range qs {
		longest = max(longest, q.Lookback)
	}
	for _, at := range []time.Time{end, end.Add(-90 * time.Minute), end.Add(-longest / 2), end.Add(-longest), all.Oldest().Add(time.Hour)} {
		t.Run(at.Format(time.RFC3339), func(t *testing.T) {
			kept, err := openmetrics.OpenRecorded(path, openmetrics.KeepMetrics(names...), openmetrics.KeepWindow(at.Add(-longest), at))
			require.NoError(t, err)
			require.LessOrEqual(t, len(metricstest.Dump(kept)), len(metricstest.Dump(all)))
			for _, q := range qs {
				q.At = at
				want, err := all.Usage(context.Background(), q)
				require.NoError(t, err)
				got, err := kept.Usage(context.Background(), q)
				require.NoError(t, err)
				require.Equal(t, want, got)
			}
		})
	}
}

// TestSpanStreamed checks the span found while streaming against a sort of
// every sample time, on recordings with stragglers and outages.
func TestSpanStreamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 200 {
		var b strings.Builder
		var ts []int64
		n := 1 + rng.IntN(400)
		tm := int64(1700000000000)
		for range n {
			switch day := openmetrics.StragglerGap.Milliseconds(); rng.IntN(40) {
			case 0:
				tm += int64(1+rng.IntN(3)) * day // an outage of a few days
			case 1:
				tm += day + int64(rng.IntN(3)) - 1 // a day, give or take a millisecond
			default:
				tm += 1 + int64(rng.IntN(120000))
			}
			ts = append(ts, tm)
			fmt.Fprintf(&b, "x{s=\"%d\"} %d %s\n", rng.IntN(3), rng.IntN(100), metricstest.Seconds(tm))
		}
		b.WriteString("# EOF\n")
		r, err := openmetrics.ParseRecorded(strings.NewReader(b.String()), "span.om", openmetrics.KeepMetrics())
		require.NoError(t, err)
		require.Empty(t, r.Series())

		slices.Sort(ts)
		want := openmetrics.Span{Oldest: time.UnixMilli(ts[0]).UTC(), Newest: time.UnixMilli(ts[n-1]).UTC()}
		series := 0
		for v := range 3 {
			if strings.Contains(b.String(), fmt.Sprintf("x{s=\"%d\"}", v)) {
				series++
			}
		}
		for k := max(1, n-max(1, n/100)); k < n; k++ {
			if ts[k]-ts[k-1] > openmetrics.StragglerGap.Milliseconds() && n-k < series {
				want.Newest = time.UnixMilli(ts[k-1]).UTC()
				want.Stragglers, want.Straggler, want.Line = n-k, time.UnixMilli(ts[n-1]).UTC(), n
				break
			}
		}
		require.Equal(t, want, r.Span(), "recording %d", i)
	}
}
