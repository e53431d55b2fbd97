package runmetrics_test

import (
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/runmetrics"
	"github.com/gpu-rightsizing/recommender/internal/summary"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	end   = start.Add(2500 * time.Millisecond)
)

func aSummary(o summary.Outcome) summary.Summary {
	var err error
	if o == summary.Failed {
		err = errors.New("clone: 401")
	}
	return summary.New(summary.Run{
		Outcome: o, Err: err, Started: start, Duration: end.Sub(start),
		Plan: &plan.Plan{At: start, Decisions: []plan.Decision{
			{Decision: engine.Decision{Action: engine.ScaleBack, Current: engine.Allocation{Form: engine.Fraction, GPUs: 0.5},
				Recommended: engine.Allocation{Form: engine.Fraction, GPUs: 0.3}}},
		}, Problems: []plan.Problem{{Message: "bad", Cause: engine.CausePolicyInvalid}}},
		Report: &publish.Report{Results: []publish.Result{{Key: "a", Outcome: publish.Opened, Number: 1}}},
	})
}

// TestWriteTextfile: the textfile as the node exporter reads it; a
// failed run keeps the last success time of the file it replaces.
func TestWriteTextfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "recommender.prom")
	tests := []struct {
		name    string
		outcome summary.Outcome
		end     time.Time
		golden  string
	}{
		{name: "a run with problems succeeds", outcome: summary.Problems, end: end, golden: "problems.prom"},
		{name: "a failure keeps the last success", outcome: summary.Failed, end: end.Add(time.Hour), golden: "failed-after-success.prom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, runmetrics.WriteTextfile(path, aSummary(tt.outcome), tt.end))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			golden(t, tt.golden, got)
		})
	}
	t.Run("a failure with no earlier file has no last success", func(t *testing.T) {
		p := filepath.Join(dir, "fresh.prom")
		require.NoError(t, runmetrics.WriteTextfile(p, aSummary(summary.Failed), end))
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotContains(t, string(got), runmetrics.LastSuccess)
	})
	t.Run("an earlier file that is not ours is an error naming it", func(t *testing.T) {
		p := filepath.Join(dir, "bad.prom")
		require.NoError(t, os.WriteFile(p, []byte(runmetrics.LastSuccess+" yesterday\n"), 0o644))
		err := runmetrics.WriteTextfile(p, aSummary(summary.Failed), end)
		require.ErrorContains(t, err, p)
		got, _ := os.ReadFile(p)
		require.Equal(t, runmetrics.LastSuccess+" yesterday\n", string(got), "nothing written")
	})
}

// TestWriteTextfileFIFO: a FIFO at the textfile's path is refused at once
// by a failed run, which reads the file it replaces: opening it waited
// for a writer for ever, and the run never ended.
func TestWriteTextfileFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo.prom")
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	done := make(chan error, 1)
	go func() { done <- runmetrics.WriteTextfile(p, aSummary(summary.Failed), end) }()
	select {
	case err := <-done:
		require.EqualError(t, err, "metrics textfile: read "+p+": not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("writing the textfile hangs on a FIFO")
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// TestPush: pushes to a real Pushgateway; a failed run's push keeps the
// last success time an earlier push left, and the next success replaces
// the group.
func TestPush(t *testing.T) {
	pg := testenv.StartPushgateway(t)
	if pg == nil {
		return
	}
	client := &http.Client{Timeout: 10 * time.Second}
	exposed := func() string {
		resp, err := client.Get(pg.URL + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	line := func(metric string) string {
		for _, l := range strings.Split(exposed(), "\n") {
			if strings.HasPrefix(l, metric) {
				return l
			}
		}
		return ""
	}
	const job = `{instance="",job="gpu-rightsizing-recommender"}`

	require.NoError(t, runmetrics.Push(t.Context(), client, pg.URL, runmetrics.DefaultJob, aSummary(summary.ChangesProposed), end))
	require.Equal(t, runmetrics.LastSuccess+job+" 1.7960400025e+09", line(runmetrics.LastSuccess+"{"))
	require.Equal(t, `gpu_rightsizing_run_outcome{instance="",job="gpu-rightsizing-recommender",outcome="changes-proposed"} 1`,
		line(`gpu_rightsizing_run_outcome{instance="",job="gpu-rightsizing-recommender",outcome="changes-proposed"}`))

	later := end.Add(time.Hour)
	require.NoError(t, runmetrics.Push(t.Context(), client, pg.URL, runmetrics.DefaultJob, aSummary(summary.Failed), later))
	require.Equal(t, runmetrics.LastSuccess+job+" 1.7960400025e+09", line(runmetrics.LastSuccess+"{"), "the failure keeps the last success")
	require.Equal(t, "gpu_rightsizing_last_run_timestamp_seconds"+job+" 1.7960436025e+09", line("gpu_rightsizing_last_run_timestamp_seconds{"))
	require.Equal(t, `gpu_rightsizing_run_outcome{instance="",job="gpu-rightsizing-recommender",outcome="failed"} 1`,
		line(`gpu_rightsizing_run_outcome{instance="",job="gpu-rightsizing-recommender",outcome="failed"}`))

	require.NoError(t, runmetrics.Push(t.Context(), client, pg.URL, runmetrics.DefaultJob, aSummary(summary.NothingToDo), later))
	require.Equal(t, runmetrics.LastSuccess+job+" 1.7960436025e+09", line(runmetrics.LastSuccess+"{"))

	err := runmetrics.Push(t.Context(), client, pg.URL+"/nowhere", runmetrics.DefaultJob, aSummary(summary.NothingToDo), later)
	require.ErrorContains(t, err, "push metrics to the pushgateway")
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name, url, err string
	}{
		{name: "http", url: "http://pushgateway.monitoring:9091"},
		{name: "https with a path", url: "https://metrics.example/pushgateway"},
		{name: "no scheme", url: "pushgateway:9091", err: "want http:// or https:// and a host"},
		{name: "a password", url: "https://u:secret@metrics.example", err: "pushgateway URL https://metrics.example: carries user information"},
		{name: "a query", url: "https://metrics.example/?token=secret", err: "takes no query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runmetrics.CheckURL(tt.url)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.err)
			require.NotContains(t, err.Error(), "secret")
		})
	}
}
