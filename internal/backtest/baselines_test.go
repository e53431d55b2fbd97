package backtest_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/usage"
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

	// Each resource's (priority_processor.go):
	//   compute: target 0.6232 × 1.15 = 0.7167, lower 0.2158 × 1.15 ×
	//   0.9990 = 0.2479, upper 0.7167 × 1.5002 = 1.0752;
	//   memory:  target 0.5213 × 1.15 = 0.5995, lower 0.5989, upper 0.8994.
	require.InDelta(t, 0.7167, r.Compute.Target, 1e-4)
	require.InDelta(t, 0.2479, r.Compute.Lower, 1e-4)
	require.InDelta(t, 1.0752, r.Compute.Upper, 1e-4)
	require.InDelta(t, 0.5995, r.Memory.Target, 1e-4)
	require.InDelta(t, 0.5989, r.Memory.Lower, 1e-4)
	require.InDelta(t, 0.8994, r.Memory.Upper, 1e-4)

	young := int64(40*60) * minute // a pod started 8 h before
	perResource := backtest.VPAReading{PerResource: true, Label: "each resource's bounds"}
	tests := []struct {
		name     string
		current  engine.Allocation
		started  int64
		oom      []backtest.OOMKill
		auto     bool
		replicas int
		reading  backtest.VPAReading
		want     backtest.Proposal
	}{
		// The share is one resource: its range is the larger lower and
		// upper bounds, [0.5989, 1.0752], its target the larger, 0.7167.
		{name: "inside, old enough, 28 % off: evicted", current: whole(1), want: backtest.Proposal{Target: fraction(0.72)}},
		{name: "each resource's: above memory's upper bound: evicted", current: whole(1), reading: perResource, want: backtest.Proposal{Target: fraction(0.72)}},
		{name: "VPA Auto deletes the pod to apply it", current: whole(1), auto: true, want: backtest.Proposal{Target: fraction(0.72), Immediate: true, Evict: true}},
		{name: "round two: Auto's eviction is free", current: whole(1), auto: true, reading: backtest.VPAReading{Kind: true},
			want: backtest.Proposal{Target: fraction(0.72), Immediate: true}},
		{name: "a single replica under min-replicas 2: never evicted", current: whole(1), auto: true, replicas: 1,
			want: backtest.Proposal{Target: whole(1)}},
		{name: "two replicas under min-replicas 2: evicted", current: whole(1), auto: true, replicas: 2,
			want: backtest.Proposal{Target: fraction(0.72), Immediate: true, Evict: true}},
		// 0.78 is inside both ranges; the target is 8.1 % off; the change
		// summed over both resources is 0.0633/0.78 + 0.1805/0.78 = 31.3 %.
		{name: "inside, the target 8 % off: kept", current: fraction(0.78), want: backtest.Proposal{Target: fraction(0.78)}},
		{name: "each resource's: inside both, 31 % off summed: evicted", current: fraction(0.78), reading: perResource, want: backtest.Proposal{Target: fraction(0.72)}},
		// 0.90 is inside the range (1.0752), above memory's upper bound
		// (0.8994).
		{name: "inside, under 12 h old: kept", current: fraction(0.9), started: young, want: backtest.Proposal{Target: fraction(0.9)}},
		{name: "each resource's: above memory's upper bound, however young: evicted", current: fraction(0.9), started: young, reading: perResource,
			want: backtest.Proposal{Target: fraction(0.72)}},
		{name: "each resource's: inside both, under 12 h old: kept", current: fraction(0.85), started: young, reading: perResource, want: backtest.Proposal{Target: fraction(0.85)}},
		{name: "below the range, however young: evicted", current: fraction(0.5), started: young, want: backtest.Proposal{Target: fraction(0.72)}},
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
			v := backtest.VPA{Bounds: bounds, Auto: tt.auto, Reading: tt.reading}
			if tt.replicas > 0 {
				v.Replicas, v.MinReplicas = tt.replicas, 2
			}
			got := v.Decide(backtest.State{At: at, Past: tr, Current: tt.current, Allocations: allocs, OOMKills: tt.oom})
			require.Equal(t, tt.want, got)
		})
	}
}

// TestVPAQuickOOM: the updater reads the container's last termination
// (update_priority_calculator.go L119-126), a run from the container's
// start, which after a kill is the kill plus the restart (2 minutes here);
// round two's reading took any kill within 10 minutes of the pod's start.
// The pod started at 40 h.
func TestVPAQuickOOM(t *testing.T) {
	started := int64(40*60) * minute
	kill := func(after int64) backtest.OOMKill {
		return backtest.OOMKill{T: started + after*minute, Alloc: fraction(0.5)}
	}
	tests := []struct {
		name          string
		kills         []backtest.OOMKill
		literal, kind bool
	}{
		{name: "killed 5 minutes in", kills: []backtest.OOMKill{kill(5)}, literal: true, kind: true},
		{name: "killed 12 minutes in", kills: []backtest.OOMKill{kill(12)}},
		// The second run started at 17 minutes and lasted 3.
		{name: "killed again 3 minutes after restarting", kills: []backtest.OOMKill{kill(15), kill(20)}, literal: true},
		// The last run, from 7 to 30 minutes, was not quick; the first was.
		{name: "a quick kill, then a slow one", kills: []backtest.OOMKill{kill(5), kill(30)}, kind: true},
		{name: "killed in the pod before", kills: []backtest.OOMKill{kill(-55)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := backtest.State{At: started + 60*minute, Current: fraction(0.5), OOMKills: tt.kills, Restart: 2 * time.Minute,
				Allocations: timeline(backtest.Change{T: 0, Alloc: whole(1)}, backtest.Change{T: started, Alloc: fraction(0.5)})}
			require.Equal(t, tt.literal, backtest.VPA{}.QuickOOM(st), "literal")
			require.Equal(t, tt.kind, backtest.VPA{Reading: backtest.VPAReading{Kind: true}}.QuickOOM(st), "round two")
		})
	}
}

// TestVPAFrozenPeak: an interval whose first memory sample is 0 bytes keeps
// 0 as its peak (container.go L169: a peak of 0 is never replaced), where
// the pod has held GPU memory before; a pod's zeros before its model loads
// are not fed, as a working set is never 0 bytes. Two days at 10 %
// compute:
//
//   - loading: memory 0 at the first minute, 50 % for the rest of the first
//     day, 30 % on the second. The first interval starts at minute 1; its
//     peak 0.50 (weight ½) and the second's 0.30 (weight 1) put p90 in
//     0.50's bucket, whose end is 0.5213: the target is 0.5995.
//   - loaded, then 0: 30 % on the first day, 0 at the second day's first
//     minute, 50 % after. The second interval is frozen at 0 (weight 1)
//     beside 0.30 (weight ½): p90 is in 0.30's bucket, ending at 0.3038,
//     and the target 0.3494. Never frozen (round two), 0.5995.
func TestVPAFrozenPeak(t *testing.T) {
	loading := trace("w", 48*60, constant(10), func(i int) float64 {
		switch {
		case i == 0:
			return 0
		case i < 24*60:
			return 50
		}
		return 30
	})
	dropped := trace("w", 48*60, constant(10), func(i int) float64 {
		switch {
		case i < 24*60:
			return 30
		case i == 24*60:
			return 0
		}
		return 50
	})
	tests := []struct {
		name    string
		tr      *backtest.Trace
		reading backtest.VPAReading
		want    float64
	}{
		{name: "loading: not fed", tr: loading, want: 0.5995},
		{name: "loading, round two", tr: loading, reading: backtest.VPAReading{Kind: true}, want: 0.5995},
		{name: "loaded, then 0: frozen at 0", tr: dropped, want: 0.3494},
		{name: "loaded, then 0, round two: never frozen", tr: dropped, reading: backtest.VPAReading{Kind: true}, want: 0.5995},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := backtest.State{At: int64(48*60-1) * minute, Past: tt.tr, Current: whole(1), Allocations: timeline(backtest.Change{T: 0, Alloc: whole(1)})}
			require.InDelta(t, tt.want, backtest.VPA{Reading: tt.reading}.Recommend(st).Memory.Target, 1e-4)
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
		// pods starts a pod (an allocation change) at each minute given,
		// after the first at 0.
		pods   []int64
		pooled bool
		want   engine.Allocation
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
		// Points are the steps of KRR's subquery, every 75 s: 99 samples a
		// minute apart span 98 minutes, 79 steps.
		{name: "fewer than 100 points: no recommendation", n: 99, compute: constant(10), memory: constant(10), want: fraction(0.5)},
		{name: "100 samples, 80 points: no recommendation", n: 100, compute: constant(10), memory: constant(10), want: fraction(0.5)},
		// The history rule only warns (core/runner.py L384-402): 150
		// samples over 2h29 are 120 points; compute p95 10 %, memory 10 %
		// × 1.15 = 11.5 % → 0.12.
		{name: "120 points over 2h29: under 3 hours, recommended anyway", n: 150, compute: constant(10), memory: constant(10), want: fraction(0.12)},
		{name: "pooled, as round two read it: under 3 hours, no recommendation", n: 150, compute: constant(10), memory: constant(10), pooled: true,
			want: fraction(0.5)},
		// Two pods: 385 minutes at 10 %, then 15 minutes at 80 %. Each
		// pod's p95 is its own level, and the larger is 80 %. Pooled, the
		// 400 samples sorted put rank 0.95 × 399 = 379.05 among the 10s:
		// 10 %, and memory's 20 % × 1.15 = 23 % is the larger.
		{name: "per-pod percentiles, the largest pod's", n: 400, compute: func(i int) float64 {
			if i >= 385 {
				return 80
			}
			return 10
		}, memory: constant(20), pods: []int64{385}, want: fraction(0.8)},
		{name: "pooled percentile", n: 400, compute: func(i int) float64 {
			if i >= 385 {
				return 80
			}
			return 10
		}, memory: constant(20), pods: []int64{385}, pooled: true, want: fraction(0.23)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trace("w", tt.n, tt.compute, tt.memory)
			allocs := timeline(backtest.Change{T: 0, Alloc: fraction(0.5)})
			for _, m := range tt.pods {
				allocs.Changes = append(allocs.Changes, backtest.Change{T: m * minute, Alloc: fraction(0.5)})
			}
			st := backtest.State{At: int64(tt.n-1) * minute, Past: tr, Current: fraction(0.5), Allocations: allocs}
			require.Equal(t, tt.want, backtest.KRRSimple{Bounds: bounds, Pooled: tt.pooled}.Decide(st).Target)
		})
	}
}

// TestKRRPoints: KRR counts the steps of its subquery (every 75 s, on the
// clock) that see a sample within the 5-minute lookback. A sample every
// 10 minutes is seen by 4 steps: 25 samples over 4 hours are 100 points,
// enough where 25 samples counted as points were not; run at the last
// sample, that one is seen by one step so far: 97.
func TestKRRPoints(t *testing.T) {
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	tenMinutes := func(n int) *backtest.Trace {
		tr := &backtest.Trace{Name: "w", Step: 10 * time.Minute}
		for i := range n {
			at := int64(i) * 10 * minute
			tr.Compute = append(tr.Compute, usage.Sample{T: at, V: 10})
			tr.Memory = append(tr.Memory, usage.Sample{T: at, V: 10})
		}
		return tr
	}
	tests := []struct {
		name    string
		samples int
		// extra is how long after the last sample the run is.
		extra int64
		want  engine.Allocation
	}{
		{name: "26 samples, 104 points: recommended", samples: 26, extra: 5 * minute, want: fraction(0.12)},
		{name: "25 samples, 100 points: recommended", samples: 25, extra: 5 * minute, want: fraction(0.12)},
		{name: "25 samples, run at the last: 97 points", samples: 25, want: fraction(0.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := tenMinutes(tt.samples)
			st := backtest.State{At: tr.End() + tt.extra, Past: tr, Current: fraction(0.5), Allocations: timeline(backtest.Change{T: 0, Alloc: fraction(0.5)})}
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
