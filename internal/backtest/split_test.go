package backtest_test

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestHashHalf: the split is the FNV-1a hash of the name, even in tune:
// "a" hashes to 0xaf63dc4c8601ec8c (even), "b" to 0xaf63df4c8601f1a5 (odd).
func TestHashHalf(t *testing.T) {
	tests := []struct{ name, want string }{
		{name: "a", want: backtest.HalfTune},
		{name: "b", want: backtest.HalfHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, backtest.HashHalf(tt.name))
		})
	}
}

func TestBootstrap(t *testing.T) {
	tests := []struct {
		name    string
		d       []float64
		want    backtest.Interval
		verdict string
	}{
		// Every resample of a constant has the same mean.
		{name: "the same difference everywhere", d: []float64{-2, -2, -2}, want: backtest.Interval{Mean: -2, Lo: -2, Hi: -2}, verdict: "better"},
		{name: "no difference", d: []float64{0, 0}, want: backtest.Interval{}, verdict: "no difference"},
		{name: "worse everywhere", d: []float64{1, 3}, verdict: "worse"},
		// Mean 0: one workload much better, one much worse; resamples
		// of both signs.
		{name: "a wash", d: []float64{-5, 5}, verdict: "no difference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := backtest.Bootstrap([][]float64{tt.d})[0]
			require.Equal(t, tt.verdict, got.Verdict())
			if tt.want != (backtest.Interval{}) || tt.verdict == "no difference" && tt.d[0] == 0 {
				require.Equal(t, tt.want, got)
			}
			require.LessOrEqual(t, got.Lo, got.Mean)
			require.LessOrEqual(t, got.Mean, got.Hi)
			// The same data, the same interval: the seed is fixed.
			require.Equal(t, got, backtest.Bootstrap([][]float64{tt.d})[0])
		})
	}
	// Worse everywhere: every resample mean is between 1 and 3.
	iv := backtest.Bootstrap([][]float64{{1, 3}})[0]
	require.Equal(t, 2.0, iv.Mean)
	require.GreaterOrEqual(t, iv.Lo, 1.0)
	require.LessOrEqual(t, iv.Hi, 3.0)
}

// TestEvaluateWindow: four one-minute samples at 0.5 GPU, the second
// breaching memory (0.6); a window over the last two samples scores them
// alone, and the change and the kill inside it.
func TestEvaluateWindow(t *testing.T) {
	tr := trace("w", 4, constant(10), func(i int) float64 {
		if i == 1 {
			return 60
		}
		return 30
	})
	tl := &backtest.Timeline{Changes: []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 2 * minute, Alloc: fraction(0.4)}},
		OOMKills: []backtest.OOMKill{{T: minute, Alloc: fraction(0.5)}}}
	tests := []struct {
		name                 string
		w                    usage.Window
		slack, memoryBreach  float64
		changes, kills, work int
	}{
		// Samples at 0 and 1 min under 0.5: slack 0.2 h/60 each but the
		// breach (none); then at 2 min (still 0.5, set at 1 min): 0.2;
		// at 3 min 0.4 − 0.3 = 0.1.
		{name: "all", w: usage.Window{From: -1, To: 4 * minute}, slack: (0.2 + 0 + 0.2 + 0.1) / 60, memoryBreach: 1, changes: 1, kills: 1},
		{name: "the last two", w: usage.Window{From: minute, To: 3 * minute}, slack: 0.3 / 60, changes: 1},
		{name: "the first two", w: usage.Window{From: -1, To: minute}, slack: 0.2 / 60, memoryBreach: 1, kills: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := backtest.EvaluateWindow(tr, tl, tt.w)
			require.InDelta(t, tt.slack, s.SlackGPUHours, 1e-12)
			require.InDelta(t, tt.memoryBreach, s.MemoryBreachMinutes, 1e-12)
			require.Equal(t, tt.changes, s.Changes)
			require.Equal(t, tt.kills, s.OOMKills)
		})
	}
}

// TestCompare: a policy that always keeps 0.5 GPU against static at 1 GPU,
// on four flat workloads: half a GPU less slack for every hour, on every
// half the split has, and no difference elsewhere.
func TestCompare(t *testing.T) {
	var traces []*backtest.Trace
	for _, n := range []string{"a", "b", "c", "d"} {
		traces = append(traces, trace(n, 8*24*60, constant(10), constant(10)))
	}
	cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 2 * time.Hour}
	results, err := backtest.Run(context.Background(), traces, []backtest.Strategy{backtest.Static{}, &fixed{target: fraction(0.5)}}, cfg)
	require.NoError(t, err)
	results[1].Strategy = "half"
	cfg.Start = whole(1)
	one, err := backtest.Run(context.Background(), traces, []backtest.Strategy{backtest.Static{}}, cfg)
	require.NoError(t, err)
	deliveries := []backtest.Delivery{{Name: backtest.PullRequests, Results: []backtest.Result{one[0], results[1]}}}
	cs := backtest.Compare(traces, deliveries, []string{"half"}, nil, false)
	halves := map[string]int{}
	for _, c := range cs {
		require.Equal(t, "static", c.Baseline)
		halves[c.Half] = c.Workloads
		require.Equal(t, "better", c.Diffs[0].Verdict(), c.Half)
		for _, iv := range c.Diffs[1:] {
			require.Equal(t, backtest.Interval{}, iv, c.Half)
		}
	}
	var tune, held int
	for _, tr := range traces {
		if backtest.HashHalf(tr.Name) == backtest.HalfTune {
			tune++
		} else {
			held++
		}
	}
	require.Equal(t, map[string]int{backtest.HalfAll: 4, backtest.HalfTune: tune, backtest.HalfHeld: held}, halves)
	// Tune workloads are scored on their first week: the samples up to 7
	// days, the first included, 7 × 24 × 60 + 1 minutes of 0.5 GPU less;
	// held ones on the rest, 24 × 60 − 1 minutes.
	for _, c := range cs {
		switch c.Half {
		case backtest.HalfTune:
			require.InDelta(t, -0.5*(7*24*60+1)/60, c.Diffs[0].Mean, 1e-6)
		case backtest.HalfHeld:
			require.InDelta(t, -0.5*(24*60-1)/60, c.Diffs[0].Mean, 1e-6)
		}
	}
	// A setting of the frontier is neither a policy compared nor a
	// baseline.
	require.Empty(t, backtest.Compare(traces, deliveries, []string{"half"}, []string{"static"}, false))
	var buf bytes.Buffer
	require.NoError(t, backtest.WriteVerdicts(&buf, cs, "half"))
	require.Contains(t, buf.String(), "| static | pull requests | + · · · |")

	// Fresh data is held whole: no tune half.
	fresh := backtest.Compare(traces, deliveries, []string{"half"}, nil, true)
	require.Len(t, fresh, 2)
	require.Equal(t, backtest.HalfHeld, fresh[1].Half)
	require.Equal(t, 4, fresh[1].Workloads)
	require.Equal(t, fresh[0].Diffs, fresh[1].Diffs, "held whole, as the whole trace")
}

// TestRole: one role per workload; past a week, the tune workloads' first
// week and the held ones' second.
func TestRole(t *testing.T) {
	day := 24 * 60
	tests := []struct {
		name     string
		tr       *backtest.Trace
		fresh    bool
		half     string
		from, to int64
	}{
		{name: "short, tune", tr: trace("a", day, constant(1), constant(1)), half: backtest.HalfTune, from: math.MinInt64, to: math.MaxInt64},
		{name: "short, held", tr: trace("b", day, constant(1), constant(1)), half: backtest.HalfHeld, from: math.MinInt64, to: math.MaxInt64},
		{name: "long, tune: its first week", tr: trace("a", 8*day, constant(1), constant(1)), half: backtest.HalfTune,
			from: math.MinInt64, to: 7 * int64(day) * minute},
		{name: "long, held: its second week", tr: trace("b", 8*day, constant(1), constant(1)), half: backtest.HalfHeld,
			from: 7 * int64(day) * minute, to: math.MaxInt64},
		{name: "fresh: held whole", tr: trace("a", 8*day, constant(1), constant(1)), fresh: true, half: backtest.HalfHeld,
			from: math.MinInt64, to: math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			half, w := backtest.Role(tt.tr, tt.fresh)
			require.Equal(t, tt.half, half)
			require.Equal(t, usage.Window{From: tt.from, To: tt.to}, w)
		})
	}
}

// TestHolm: three differences each significant alone at 95 % (2 resampled
// means of 100 above 0: p = 0.04) are none significant as a family of
// three: the first ranked needs 1 − 0.05/3, and the step-down stops there.
// Alone, the same difference is significant; one with no resample at or
// above 0 is significant in any family of three.
func TestHolm(t *testing.T) {
	mostly := make([]float64, 100)
	for i := range mostly {
		mostly[i] = -1
	}
	mostly[98], mostly[99] = 1, 1
	all := make([]float64, 100)
	for i := range all {
		all[i] = -1
	}
	r := backtest.NewResamples([]float64{-0.96, -0.96, -0.96, -1}, [][]float64{mostly, mostly, mostly, all})
	require.InDelta(t, 0.04, r.P(0), 1e-12)
	require.InDelta(t, 0.01, r.P(3), 1e-12, "at least one resample's share")
	require.Equal(t, "better", r.Interval(0, 0.95).Verdict())

	three := backtest.Holm([]backtest.HolmEntry{{R: r, Row: 0}, {R: r, Row: 1}, {R: r, Row: 2}})
	for _, c := range three {
		require.False(t, c.Significant)
		require.Equal(t, "·", c.Mark())
	}
	require.InDelta(t, 1-0.05/3, three[0].Level, 1e-12)
	require.InDelta(t, 1-0.05/2, three[1].Level, 1e-12)
	require.InDelta(t, 0.95, three[2].Level, 1e-12)

	alone := backtest.Holm([]backtest.HolmEntry{{R: r, Row: 0}})
	require.True(t, alone[0].Significant)
	require.Equal(t, "+", alone[0].Mark())

	mixed := backtest.Holm([]backtest.HolmEntry{{R: r, Row: 0}, {R: r, Row: 3}, {R: r, Row: 1}})
	require.True(t, mixed[1].Significant, "ranked first: every resample below 0")
	require.False(t, mixed[0].Significant)
	require.False(t, mixed[2].Significant)
}

// TestResampleSnapsNoise: a workload that differs by float noise alone
// (two sums of the same values in another order differ by 1e-16) is no
// difference. One workload 1 GPU-h better and twenty at −5.6e-17: a third
// of the resamples miss the one, so the upper bound is the noise; it is 0,
// and the interval does not exclude it.
func TestResampleSnapsNoise(t *testing.T) {
	a, b, c := 0.1, 0.2, 0.3
	noise := c - (a + b) // −5.55e-17 in float64
	require.Less(t, noise, 0.0)
	d := []float64{-1}
	for range 20 {
		d = append(d, noise)
	}
	iv := backtest.Resample([][]float64{d}).Interval(0, 0.95)
	require.Zero(t, iv.Hi)
	require.Equal(t, "no difference", iv.Verdict())
}
