package backtest_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/engine"
)

func whole(n float64) engine.Allocation { return engine.Allocation{Form: engine.WholeGPUs, GPUs: n} }

// timeline is an allocation history: pairs of minute and allocation.
func timeline(changes ...backtest.Change) *backtest.Timeline {
	return &backtest.Timeline{Changes: changes}
}

// TestVPA checks VPA's recommendation and updater against values worked
// out by hand from its sources (see VPA's doc comment) on two days of
// one-minute samples:
//
//   - compute is 20 % of a GPU, and 60 % at every 7th minute (14 % of the
//     samples, spread evenly, so decay does not move the percentiles).
//     Buckets start at 0.01·(1.05ⁿ−1)/0.05: 0.20 falls in bucket 14 and
//     0.60 in bucket 28, whose ends are 0.2158 and 0.6232. p50 is 0.2158;
//     p90 and p95 (above the 86 % of low samples) are 0.6232.
//   - memory is 30 % on the first day and 50 % on the second: two daily
//     peaks, 0.30 weighted at 24 h and 0.50 at 48 h, which weighs twice as
//     much after a 24 h half-life. So p50, p90 and p95 all fall in 0.50's
//     bucket (first bucket 10 MB of 80 GiB = 0.000116 GPU; bucket 110),
//     whose end is 0.5213. Without decay p50 would be 0.30's.
//   - at 47h59 the history spans 1.9993 days (2880 samples would make 2):
//     confidence 1.9993.
//   - target = max(0.6232, 0.5213) × 1.15 = 0.7167;
//     lower = max(0.2158, 0.5213) × 1.15 × (1 + 0.001/1.9993)⁻² = 0.5989;
//     upper = max(0.6232, 0.5213) × 1.15 × (1 + 1/1.9993) = 1.0752.
func TestVPA(t *testing.T) {
	tr := trace("w", 48*60, func(i int) float64 {
		if i%7 == 0 {
			return 60
		}
		return 20
	}, func(i int) float64 {
		if i < 24*60 {
			return 30
		}
		return 50
	})
	at := int64(48*60-1) * minute
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	old := backtest.Change{T: 0, Alloc: whole(1)}
	r := backtest.VPA{Bounds: bounds}.Recommend(backtest.State{At: at, Past: tr, Current: whole(1), Allocations: timeline(old)})
	require.InDelta(t, 1.9993, r.Confidence, 1e-4)
	require.InDelta(t, 0.7167, r.Target, 1e-4)
	require.InDelta(t, 0.5989, r.Lower, 1e-4)
	require.InDelta(t, 1.0752, r.Upper, 1e-4)
	require.Equal(t, 48*60, r.Samples)

	// Without a valid sample VPA has no recommendation, and moves nothing.
	blank := trace("w", 24*60, constant(math.NaN()), constant(math.NaN()))
	p := backtest.VPA{Bounds: bounds}.Decide(backtest.State{At: 24*60*minute - minute, Past: blank, Current: whole(1), Allocations: timeline(old)})
	require.Equal(t, whole(1), p.Target)

	young := int64(40*60) * minute // a pod started 8 h before
	tests := []struct {
		name    string
		current engine.Allocation
		started int64
		oom     []backtest.OOMKill
		auto    bool
		want    backtest.Proposal
	}{
		{name: "inside the bounds, old enough, 28 % off: evicted", current: whole(1), want: backtest.Proposal{Target: fraction(0.72)}},
		{name: "VPA Auto applies it at once", current: whole(1), auto: true, want: backtest.Proposal{Target: fraction(0.72), Immediate: true}},
		{name: "inside the bounds, under 10 % off: kept", current: fraction(0.75), want: backtest.Proposal{Target: fraction(0.75)}},
		{name: "inside the bounds, under 12 h old: kept", current: fraction(0.9), started: young, want: backtest.Proposal{Target: fraction(0.9)}},
		{name: "below the lower bound, however young: evicted", current: fraction(0.5), started: young, want: backtest.Proposal{Target: fraction(0.72)}},
		// An OOM kill 5 minutes after the young pod started: a quick OOM
		// evicts it, and its bumped peak, 0.9 × 1.2 = 1.08, weighs 2^(16/24)
		// against 0.50's 1 and 0.30's ½ at p90: × 1.15, beyond the ceiling.
		{name: "killed for memory within 10 minutes of starting: evicted, bumped", current: fraction(0.9), started: young,
			oom: []backtest.OOMKill{{T: young + 5*minute, Alloc: fraction(0.9)}}, want: backtest.Proposal{Target: whole(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocs := timeline(old)
			if tt.started > 0 {
				allocs = timeline(backtest.Change{T: 0, Alloc: whole(1)}, backtest.Change{T: tt.started, Alloc: tt.current})
			}
			v := backtest.VPA{Bounds: bounds, Auto: tt.auto}
			got := v.Decide(backtest.State{At: at, Past: tr, Current: tt.current, Allocations: allocs, OOMKills: tt.oom})
			require.Equal(t, tt.want, got)
		})
	}
}

// TestKRRSimple checks KRR's simple strategy against values worked out by
// hand from robusta_krr/strategies/simple.py.
func TestKRRSimple(t *testing.T) {
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	tests := []struct {
		name            string
		n               int
		compute, memory func(int) float64
		want            engine.Allocation
	}{
		// Compute 0..99 % twice: sorted, rank 0.95 × 199 = 189.05 lies
		// between 94 and 95: p95 = 94.05 %. Memory 40 % × 1.15 = 46 %.
		{name: "compute p95 without buffer", n: 200, compute: func(i int) float64 { return float64(i % 100) }, memory: constant(40), want: fraction(0.95)},
		// Memory peaks at 60 % once: 60 × 1.15 = 69 %; compute p95 is 10 %.
		{name: "memory at the peak + 15 %", n: 200, compute: constant(10), memory: func(i int) float64 {
			if i == 50 {
				return 60
			}
			return 20
		}, want: fraction(0.69)},
		{name: "fewer than 100 points: no recommendation", n: 99, compute: constant(10), memory: constant(10), want: fraction(0.5)},
		{name: "150 points over 2h29: under 3 hours, no recommendation", n: 150, compute: constant(10), memory: constant(10), want: fraction(0.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trace("w", tt.n, tt.compute, tt.memory)
			st := backtest.State{At: int64(tt.n-1) * minute, Past: tr, Current: fraction(0.5)}
			require.Equal(t, tt.want, backtest.KRRSimple{Bounds: bounds}.Decide(st).Target)
		})
	}
}

func TestPeakPlus15(t *testing.T) {
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	tests := []struct {
		name    string
		compute func(int) float64
		current engine.Allocation
		want    engine.Allocation
	}{
		{name: "100 % × 1.15, clamped to the ceiling", compute: func(i int) float64 { return float64(i + 1) }, current: fraction(0.5), want: whole(1)},
		{name: "40 % × 1.15", compute: constant(40), current: fraction(0.5), want: fraction(0.46)},
		{name: "below the minimum change, nothing moves", compute: constant(40), current: fraction(0.47), want: fraction(0.47)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trace("w", 100, tt.compute, constant(30))
			st := backtest.State{At: 99 * minute, Past: tr, Current: tt.current}
			require.Equal(t, tt.want, backtest.PeakPlus15{Bounds: bounds}.Decide(st).Target)
		})
	}
}

// TestCadenceOracle checks the oracles at our cadence on two days of
// one-minute samples, hourly runs, starting at one GPU.
func TestCadenceOracle(t *testing.T) {
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	hour := 60 * minute
	tests := []struct {
		name   string
		memory func(int) float64
		period time.Duration
		want   []backtest.Change
	}{
		// 20 % until 36 h, then 60 %. The sample at 36 h is served by the
		// allocation set before it, so the step up must come at the 35 h
		// run, 34 h after the first: allowed once a day.
		{name: "daily: down at once, up before the step", period: 24 * time.Hour, memory: func(i int) float64 {
			if i >= 36*60 {
				return 60
			}
			return 20
		}, want: []backtest.Change{{T: 0, Alloc: whole(1)}, {T: hour, Alloc: fraction(0.2)}, {T: 35 * hour, Alloc: fraction(0.6)}}},
		{name: "weekly: one change, sized for the whole", period: 7 * 24 * time.Hour, memory: func(i int) float64 {
			if i >= 36*60 {
				return 60
			}
			return 20
		}, want: []backtest.Change{{T: 0, Alloc: whole(1)}, {T: hour, Alloc: fraction(0.6)}}},
		// A spike at 10 h: the first segment must hold it, and the next
		// change may come a day after the first, at 25 h.
		{name: "daily: a spike holds the first day", period: 24 * time.Hour, memory: func(i int) float64 {
			if i == 10*60 {
				return 60
			}
			return 20
		}, want: []backtest.Change{{T: 0, Alloc: whole(1)}, {T: hour, Alloc: fraction(0.6)}, {T: 25 * hour, Alloc: fraction(0.2)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trace("w", 48*60, constant(10), tt.memory)
			cfg := backtest.Config{Start: whole(1), Cadence: time.Hour, MergeDelay: 2 * time.Hour}
			o := backtest.CadenceOracle{Bounds: bounds, Period: tt.period}
			tl := backtest.Simulate(tr, o, cfg)
			require.Equal(t, tt.want, tl.Changes)
			require.Zero(t, backtest.Evaluate(tr, tl).MemoryBreachMinutes)
		})
	}
}

// TestVPAForgetsOldPods: a pod that ended before VPA's 8 days of history
// leaves nothing, and breaks nothing.
func TestVPAForgetsOldPods(t *testing.T) {
	tr := trace("w", 10*24*60, constant(20), constant(30))
	at := int64(10*24*60-1) * minute
	allocs := timeline(backtest.Change{T: 0, Alloc: whole(1)}, backtest.Change{T: 24 * 60 * minute, Alloc: fraction(0.5)})
	r := backtest.VPA{}.Recommend(backtest.State{At: at, Past: tr, Current: fraction(0.5), Allocations: allocs})
	// Compute 0.20 ends its bucket at 0.2158, memory 0.30 at 0.3038: the
	// target is 0.3038 × 1.15.
	require.InDelta(t, 0.3494, r.Target, 1e-4)
}
