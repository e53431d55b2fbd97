package backtest_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
)

func TestDominates(t *testing.T) {
	base := backtest.Score{SlackGPUHours: 10, MemoryBreachMinutes: 5, ComputeBreachMinutes: 100}
	withKills := backtest.Score{SlackGPUHours: 10, OOMKills: 1, Evictions: 1}
	require.True(t, backtest.Dominates(backtest.Score{SlackGPUHours: 9, OOMKills: 2}, withKills), "kills and evictions count together")
	tests := []struct {
		name string
		s    backtest.Score
		want bool
	}{
		{name: "less slack, the same breaches", s: backtest.Score{SlackGPUHours: 9, MemoryBreachMinutes: 5, ComputeBreachMinutes: 100}, want: true},
		{name: "less of everything", s: backtest.Score{SlackGPUHours: 1}, want: true},
		{name: "the same slack is not less", s: backtest.Score{SlackGPUHours: 10}},
		{name: "one more memory breach-minute", s: backtest.Score{SlackGPUHours: 1, MemoryBreachMinutes: 6}},
		{name: "more compute breach-minutes", s: backtest.Score{SlackGPUHours: 1, ComputeBreachMinutes: 101}},
		{name: "a kill more", s: backtest.Score{SlackGPUHours: 1, OOMKills: 1}},
		{name: "an eviction more", s: backtest.Score{SlackGPUHours: 1, Evictions: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, backtest.Dominates(tt.s, base))
		})
	}
}

// TestWritePareto: a baseline a shipped setting dominates is said so; one
// it does not, by how much each misses. The sweep's point has less slack
// than "loose" but 10 more compute breach-minutes: it does not dominate it.
// "lucky" has less slack than ours and no more breaches: it dominates ours.
func TestWritePareto(t *testing.T) {
	pts := []backtest.Point{
		{Strategy: "ours", Ours: true, Shipped: true, Score: backtest.Score{Workloads: 2, SlackGPUHours: 5, AllocatedGPUHours: 10, ComputeBreachMinutes: 30}},
		{Strategy: "ours, headroomPercent 0", Ours: true, Score: backtest.Score{Workloads: 2, SlackGPUHours: 2, AllocatedGPUHours: 7, ComputeBreachMinutes: 40}},
		{Strategy: "loose", Score: backtest.Score{Workloads: 2, SlackGPUHours: 6, AllocatedGPUHours: 11, ComputeBreachMinutes: 30}},
		{Strategy: "tight", Score: backtest.Score{Workloads: 2, SlackGPUHours: 3, AllocatedGPUHours: 8, ComputeBreachMinutes: 50, MemoryBreachMinutes: 1}},
		{Strategy: "lucky", Score: backtest.Score{Workloads: 2, SlackGPUHours: 4, AllocatedGPUHours: 9, ComputeBreachMinutes: 30}},
	}
	var buf bytes.Buffer
	require.NoError(t, backtest.WritePareto(&buf, "t", pts))
	require.Contains(t, buf.String(), "| loose | ours | none | none |\n")
	require.Contains(t, buf.String(), "| tight | no (ours: slack +2.0 GPU-h) | ours, headroomPercent 0 | none |\n")
	require.Contains(t, buf.String(), "| ours | 50.0 % | 5.0 | 0 | 30 | 0 |\n")
	require.Contains(t, buf.String(), "| lucky | no (ours: slack +1.0 GPU-h) | none | ours |\n")
}
