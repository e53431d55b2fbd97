package backtest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
)

// TestCandidates: two candidates against a control that keeps 0.5 GPU,
// on four flat workloads using 0.1: one that asks for 0.4 leaves less
// slack on every half, one that asks for 0.6 more, and neither breaches;
// each is paired with the control alone, never with the other.
func TestCandidates(t *testing.T) {
	var traces []*backtest.Trace
	for _, n := range []string{"a", "b", "c", "d"} {
		traces = append(traces, trace(n, 2*24*60, constant(10), constant(10)))
	}
	cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 2 * time.Hour}
	results, err := backtest.Run(context.Background(), traces,
		[]backtest.Strategy{&fixed{target: fraction(0.5)}, &fixed{target: fraction(0.4)}, &fixed{target: fraction(0.6)}}, cfg)
	require.NoError(t, err)
	names := []string{"control", "lean", "fat"}
	for i := range results {
		results[i].Strategy = names[i]
	}
	deliveries := []backtest.Delivery{{Name: backtest.PullRequests, Results: results}}
	cs := backtest.Candidates(traces, deliveries, names, "control", false)

	want := map[string]string{"lean": "better", "fat": "worse"}
	halves := map[string]int{}
	for _, c := range cs {
		require.Equal(t, "control", c.Baseline, c.Policy)
		require.Contains(t, want, c.Policy)
		halves[c.Half]++
		require.Equal(t, want[c.Policy], c.Diffs[0].Verdict(), "%s, %s", c.Policy, c.Half)
		for _, iv := range c.Diffs[1:] {
			require.Equal(t, backtest.Interval{}, iv, "%s, %s: no breach, no kill", c.Policy, c.Half)
		}
	}
	// Two days: no week split; both candidates on every half.
	require.Equal(t, map[string]int{backtest.HalfAll: 2, backtest.HalfTune: 2, backtest.HalfHeld: 2}, halves)

	var buf bytes.Buffer
	require.NoError(t, backtest.WriteCandidates(&buf, traces, deliveries, cs, "control", false))
	out := buf.String()
	require.Contains(t, out, "*candidates − control, pull requests, all half*")
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "| control |"):
			require.True(t, strings.HasSuffix(line, "| | | | |"), "the control has no difference: %s", line)
		case strings.HasPrefix(line, "| lean |"):
			require.Contains(t, line, "] + | 0 [0, 0] · | 0 [0, 0] · | 0 [0, 0] · |")
		case strings.HasPrefix(line, "| fat |"):
			require.Contains(t, line, "] − | 0 [0, 0] · | 0 [0, 0] · | 0 [0, 0] · |")
		}
	}
	require.Equal(t, 3, strings.Count(out, "| lean |"), "one row per half")
}
