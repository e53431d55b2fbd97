package backtest

import (
	"math"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Planner is a clairvoyant strategy that plans the whole timeline at once
// from the whole trace: only the oracles are.
type Planner interface {
	Strategy
	Plan(tr *Trace, cfg Config) *Timeline
}

// CadenceOracle is the limit of a pull-request recommender: it knows the
// future, but changes the allocation at most once per Period, at a run of
// the job, each change lasting until the next, and never below the demand
// it will serve (no breach, as far as the ceiling allows). Among those
// timelines it picks the one with the least allocation, and so the least
// slack, by dynamic programming over the runs.
type CadenceOracle struct {
	Bounds Bounds
	Period time.Duration
}

func (o CadenceOracle) Name() string {
	switch o.Period {
	case 24 * time.Hour:
		return DailyOracle
	case 7 * 24 * time.Hour:
		return "oracle-weekly"
	}
	return "oracle-" + o.Period.String()
}

// Decide is never called: Simulate asks a Planner for its plan.
func (o CadenceOracle) Decide(s State) Proposal { return Proposal{Target: s.Current} }

// Plan chooses the change times r_i (the first run, then runs at least a
// Period apart) minimising Σ allocation × duration, where the allocation
// of a segment is the smallest that holds the peak demand it serves.
func (o CadenceOracle) Plan(tr *Trace, cfg Config) *Timeline {
	tl := &Timeline{Changes: []Change{{T: tr.Start(), Alloc: cfg.Start}}}
	cadence := cfg.Cadence.Milliseconds()
	var runs []int64
	for at := FirstRun(tr, cfg.Cadence); at <= tr.End(); at += cadence {
		runs = append(runs, at)
	}
	if len(runs) == 0 {
		return tl
	}
	n := len(runs)
	end := append(runs[1:n:n], tr.End()+1)
	// peak[k]: the demand served by an allocation set at runs[k] until the
	// next run. A sample at T is served by the allocation in effect at
	// T − dt, so the samples after runs[k] up to one step past the next.
	peak := make([]float64, n)
	for k := range runs {
		w := usage.Window{From: runs[k], To: end[k] - 1 + tr.Step.Milliseconds()}
		c, _, _ := usage.Peak(usage.In(tr.Compute, w))
		m, _, _ := usage.Peak(usage.In(tr.Memory, w))
		peak[k] = max(c, m) / 100
	}
	b := o.Bounds
	b.MinChangePercent = 0
	alloc := func(p float64) float64 { return b.Apply(cfg.Start, p).GPUs }
	period := o.Period.Milliseconds()
	// best[j]: the least cost of [runs[0], runs[j]) with a change at
	// runs[j] (j = n: the end); from[j], the change before it.
	best := make([]float64, n+1)
	from := make([]int, n+1)
	for j := 1; j <= n; j++ {
		best[j] = math.Inf(1)
	}
	stop := func(j int) int64 {
		if j == n {
			return tr.End()
		}
		return runs[j]
	}
	for i := range n {
		if math.IsInf(best[i], 1) {
			continue
		}
		p := 0.0
		for j := i + 1; j <= n; j++ {
			p = max(p, peak[j-1])
			if j < n && runs[j]-runs[i] < period {
				continue
			}
			if c := best[i] + alloc(p)*float64(stop(j)-runs[i]); c < best[j] {
				best[j], from[j] = c, i
			}
		}
	}
	var starts []int
	for j := n; j > 0; j = from[j] {
		starts = append(starts, from[j])
	}
	for k := len(starts) - 1; k >= 0; k-- {
		i := starts[k]
		next := n
		if k > 0 {
			next = starts[k-1]
		}
		p := 0.0
		for _, v := range peak[i:next] {
			p = max(p, v)
		}
		a := b.Apply(tl.Last(), p)
		if a != tl.Last() {
			tl.Changes = append(tl.Changes, Change{T: runs[i], Alloc: a})
		}
	}
	return tl
}

var _ Planner = CadenceOracle{}

// DailyOracle names the strategy every slack ratio is taken against.
const DailyOracle = "oracle-daily"
