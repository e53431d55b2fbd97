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

// TestFrontier: four flat workloads using 0.10 GPU. Against a baseline at
// 0.5, the settings at 0.4 and 0.3 dominate on the tune half (0.6 leaves
// more slack, 0.05 breaches); the median of two is the more cautious, 0.4,
// and on the held half it dominates, significantly (every workload has
// 0.1 GPU less slack once its first pull request merges). Against one at 0.10, with no slack and no breach,
// none dominates: the closest miss is 0.3, whose only shortfall is its
// slack, where 0.05's is two days of breaches.
func TestFrontier(t *testing.T) {
	var traces []*backtest.Trace
	for _, n := range []string{"a", "b", "c", "d"} {
		traces = append(traces, trace(n, 2*24*60, constant(10), constant(10)))
	}
	cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 2 * time.Hour}
	names := []string{"base", "tight", "s0.6", "s0.4", "s0.3", "s0.05"}
	var strategies []backtest.Strategy
	for _, v := range []float64{0.5, 0.1, 0.6, 0.4, 0.3, 0.05} {
		strategies = append(strategies, &fixed{target: fraction(v)})
	}
	results, err := backtest.Run(context.Background(), traces, strategies, cfg)
	require.NoError(t, err)
	for i := range results {
		results[i].Strategy = names[i]
	}
	deliveries := []backtest.Delivery{{Name: backtest.PullRequests, Results: results}}
	settings := []string{"s0.6", "s0.4", "s0.3", "s0.05"}

	choices := backtest.Choose(traces, deliveries, settings, nil)
	require.Equal(t, []backtest.Choice{
		{Delivery: backtest.PullRequests, Baseline: "base", Dominating: []string{"s0.4", "s0.3"}, Chosen: "s0.4"},
		{Delivery: backtest.PullRequests, Baseline: "tight", Chosen: "s0.3", ClosestMiss: true},
	}, choices)

	var js bytes.Buffer
	require.NoError(t, backtest.WriteChoices(&js, choices))
	again, err := backtest.ReadChoices(&js, "frontier.json")
	require.NoError(t, err)
	require.Equal(t, choices, again)

	cells, err := backtest.Judge(traces, deliveries, choices, false)
	require.NoError(t, err)
	require.Len(t, cells, 2)
	require.True(t, cells[0].Significantly())
	require.InDelta(t, -0.1*45, cells[0].Diffs[0].Mean, 0.01, "0.1 GPU less from the first merge, at 3 h, to the end of two days")
	require.False(t, cells[1].Dominates())

	var md bytes.Buffer
	require.NoError(t, backtest.WriteFrontier(&md, "t", cells))
	out := md.String()
	require.Contains(t, out, "| base | s0.4, s0.3 | s0.4 |")
	require.Contains(t, out, "| **dominates**, significantly |")
	require.Contains(t, out, "| tight | none | s0.3 (closest miss) |")
	lines := strings.Split(out, "\n")
	tight := lines[len(lines)-2]
	require.Contains(t, tight, "misses: slack +")
	require.NotContains(t, tight, "memory", "its only shortfall is slack")
}

func TestReadChoicesErrors(t *testing.T) {
	_, err := backtest.ReadChoices(strings.NewReader(`{"choices": []}`), "f.json")
	require.EqualError(t, err, "f.json: no choices")
	_, err = backtest.ReadChoices(strings.NewReader(`{"choice": []}`), "f.json")
	require.ErrorContains(t, err, `f.json: json: unknown field "choice"`)
}
