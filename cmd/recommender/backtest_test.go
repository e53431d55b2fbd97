package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
)

func TestNewCmdBacktest(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want backtest.Options
		err  string
	}{
		{
			name: "defaults",
			args: []string{"--traces", "t.csv"},
			want: backtest.Options{Traces: []string{"t.csv"}, Start: 1, Cadence: time.Hour, MergeDelay: 2 * time.Hour, OOMKill: true, Restart: 2 * time.Minute,
				LiveMaxChanges: 3},
		},
		{
			name: "everything",
			args: []string{"--traces", "a.csv", "--traces", "b.csv.gz", "--policies", "g=p", "--start", "0.5", "--cadence", "30m",
				"--merge-delay", "0s", "--oom-kill=false", "--restart-time", "5m", "--out", "o", "--plot", "w", "--max-peak", "100", "--live-max-changes", "0", "--against", "g", "--protocol", "p.md", "--fresh"},
			want: backtest.Options{Traces: []string{"a.csv", "b.csv.gz"}, Policies: []string{"g=p"}, Start: 0.5, Cadence: 30 * time.Minute,
				Restart: 5 * time.Minute, OutDir: "o", Plot: []string{"w"}, MaxPeak: 100, Against: "g", Protocol: "p.md", Fresh: true},
		},
		{name: "no traces", args: nil, err: "`--traces` or `--metrics-file` is required"},
		{name: "recording without repo", args: []string{"--metrics-file", "m.om"}, err: "`--metrics-file` and `--repo` go together: the repository names the workloads of the recording"},
		{name: "bad start", args: []string{"--traces", "t", "--start", "none"}, err: "invalid `--start` \"none\": a KAI fraction (0.01 to 0.99, two decimals) or whole GPUs (1 to 64)"},
		{name: "start off KAI's grid", args: []string{"--traces", "t", "--start", "0.555"}, err: "invalid `--start` \"0.555\": a KAI fraction (0.01 to 0.99, two decimals) or whole GPUs (1 to 64)"},
		{name: "start between whole GPUs", args: []string{"--traces", "t", "--start", "1.5"}, err: "invalid `--start` \"1.5\": a KAI fraction (0.01 to 0.99, two decimals) or whole GPUs (1 to 64)"},
		{name: "tiny cadence", args: []string{"--traces", "t", "--cadence", "10s"}, err: "`--cadence` must be at least 1m"},
		{name: "negative restart", args: []string{"--traces", "t", "--restart-time", "-1m"}, err: "`--restart-time` must not be negative"},
		{name: "negative live cap", args: []string{"--traces", "t", "--live-max-changes", "-1"}, err: "`--live-max-changes` must be 0 or more, got -1"},
		{name: "negative delay", args: []string{"--traces", "t", "--merge-delay", "-1h"}, err: "`--merge-delay` must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *backtest.Options
			io := streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
			cmd := newCmdBacktest(io, func() (*slog.Logger, error) { return newLogger(io, "warn") }, func(_ context.Context, o *backtest.Options) error {
				got = o
				return nil
			})
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Out)
			cmd.SetErr(io.Err)
			err := cmd.Execute()
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got.Out, got.Logger = nil, nil
			require.Equal(t, tt.want, *got)
		})
	}
}

func TestBacktestRun(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := cli(t, "backtest", "--traces", "testdata/trace.csv", "--policies", "kubex-guide="+quickstartRepo+"/policies",
		"--start", "0.5", "--out", out, "--plot", "quiet")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "2 workloads from testdata/trace.csv; start 0.50, a run every 1h0m0s, merged after 2h0m0s, at most 3 live changes per run; memory breaches kill the container, restarting in 2m0s\n\npull requests:\n")
	require.Contains(t, stdout, "\npull requests + live fast path:\n")
	for _, s := range []string{"static", "kubex-guide", "vpa", "vpa-auto", "krr-simple", `peak\+15%`, "oracle-weekly", "oracle-daily", "oracle"} {
		require.Regexp(t, `(?m)^\s+`+s+`\s+\d+\.\d%`, stdout)
	}
	for _, f := range []string{"results.txt", "results.json", "results.md", "tradeoff.svg", "tradeoff-live.svg", "workload-quiet.svg", "workload-bursty.svg"} {
		require.FileExists(t, filepath.Join(out, f))
	}
	var doc struct {
		Deliveries []struct {
			Name       string
			Strategies []struct {
				Name  string
				Total struct {
					RelativeSlack float64 `json:"relativeSlack"`
					Workloads     int     `json:"workloads"`
				}
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Deliveries, 2)
	for _, d := range doc.Deliveries {
		require.Len(t, d.Strategies, 13)
		for _, s := range d.Strategies {
			require.Equal(t, 2, s.Total.Workloads, s.Name)
			require.True(t, s.Total.RelativeSlack >= 0 && s.Total.RelativeSlack < 1, s.Name)
		}
		// The oracle is the lower bound on slack.
		last := len(d.Strategies) - 1
		require.Equal(t, "oracle", d.Strategies[last].Name)
		for _, s := range d.Strategies[:last] {
			require.GreaterOrEqual(t, s.Total.RelativeSlack, d.Strategies[last].Total.RelativeSlack, s.Name)
		}
	}

	_, stderr, code = cli(t, "backtest", "--traces", "testdata/trace.csv", "--policies", "nope.yaml")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, "error: policies nope.yaml: stat nope.yaml: no such file or directory")
}

// TestBacktestAgainst: with --against, only the policies are replayed,
// and each other one is paired with the one named, in candidates.md.
func TestBacktestAgainst(t *testing.T) {
	out := t.TempDir()
	policies := quickstartRepo + "/policies"
	stdout, stderr, code := cli(t, "backtest", "--traces", "testdata/trace.csv", "--policies", "guide="+policies,
		"--policies", "recommended=../../examples/policies/recommended.yaml", "--against", "guide", "--start", "0.5", "--out", out)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "*candidates − guide, pull requests, all half*")
	require.Regexp(t, `(?m)^\| recommended \| \d+\.\d %`, stdout)
	require.NotRegexp(t, `(?m)^\s+(static|vpa|oracle)\s`, stdout, "no baseline is replayed")
	b, err := os.ReadFile(filepath.Join(out, "candidates.md"))
	require.NoError(t, err)
	require.Contains(t, stdout, string(b))
	require.NoFileExists(t, filepath.Join(out, "results.json"))

	_, stderr, code = cli(t, "backtest", "--traces", "testdata/trace.csv", "--policies", "guide="+policies, "--against", "nope")
	require.Equal(t, exitError, code)
	require.Contains(t, stderr, `error: against "nope": no such policies among --policies`)
}

// TestBacktestRecording replays the quickstart's recording for its GPU
// Deployments: the OpenMetrics input of the recorded source.
func TestBacktestRecording(t *testing.T) {
	stdout, stderr, code := cli(t, "backtest", "--metrics-file", quickstartMetrics, "--repo", quickstartRepo,
		"--policies", "kubex-guide="+quickstartRepo+"/policies", "--start", "0.5", "--cadence", "10m", "--merge-delay", "20m")
	require.Equal(t, exitOK, code, stderr)
	// Seven GPU Deployments have samples (ocr too: scope is the policy's
	// business, not the recording's); the gateway has no GPU.
	require.Contains(t, stdout, "7 workloads from ../../examples/quickstart/metrics.om (for ../../examples/quickstart)")
	require.Regexp(t, `(?m)^\s+kubex-guide\s+\d+\.\d%`, stdout)
}

// TestBacktestWritesOnlyUnderOut: a workload name from a trace cannot put
// a file outside --out, and two names that read alike do not overwrite
// each other's plot.
func TestBacktestWritesOnlyUnderOut(t *testing.T) {
	tmp := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "trace.csv"))
	require.NoError(t, err)
	const evil, alike = "x/../../../pwned", "x_.._.._.._pwned"
	csv := strings.ReplaceAll(strings.ReplaceAll(string(b), "\nquiet,", "\n"+evil+","), "\nbursty,", "\n"+alike+",")
	traces := filepath.Join(tmp, "trace.csv")
	require.NoError(t, os.WriteFile(traces, []byte(csv), 0o644))
	out := filepath.Join(tmp, "a", "b", "c", "out")

	_, stderr, code := cli(t, "backtest", "--traces", traces, "--policies", "kubex-guide="+quickstartRepo+"/policies",
		"--start", "0.5", "--out", out, "--plot", evil, "--plot", alike)
	require.Equal(t, exitOK, code, stderr)

	var files []string
	require.NoError(t, filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(tmp, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	}))
	require.ElementsMatch(t, []string{
		"trace.csv",
		"a/b/c/out/results.txt", "a/b/c/out/results.json", "a/b/c/out/results.md", "a/b/c/out/tradeoff.svg", "a/b/c/out/tradeoff-live.svg",
		"a/b/c/out/split.md", "a/b/c/out/verdicts.md", "a/b/c/out/pareto.md",
		"a/b/c/out/pareto-memory.svg", "a/b/c/out/pareto-memory-live.svg", "a/b/c/out/pareto-compute.svg", "a/b/c/out/pareto-compute-live.svg",
		"a/b/c/out/workload-x_.._.._.._pwned.svg", "a/b/c/out/workload-x_.._.._.._pwned-2.svg",
	}, files)
}
