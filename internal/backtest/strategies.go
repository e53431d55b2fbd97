package backtest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Static keeps the starting allocation: hand-set values.
type Static struct{}

func (Static) Name() string            { return "static" }
func (Static) Decide(s State) Proposal { return Proposal{Target: s.Current} }

// Engine is the project's decision engine under a set of policies: the
// code the job runs, replayed.
type Engine struct {
	Label      string
	Governance policy.Governance
}

func (e *Engine) Name() string { return e.Label }

func (e *Engine) Decide(s State) Proposal {
	g := e.Governance
	w := usage.Window{From: s.At - g.Lookback().Milliseconds(), To: s.At}
	d := engine.Decide(engine.Input{
		At: time.UnixMilli(s.At), Current: s.Current, Rules: g.Rules,
		Usage: usage.Workload{Step: s.Past.Step, LiveKnown: true, Pods: pods(s, g.Sources(), w)},
	})
	if d.Action != engine.Upsize && d.Action != engine.ScaleBack {
		return Proposal{Target: s.Current}
	}
	return Proposal{Target: d.Recommended, Urgent: d.Urgent, Live: g.Strategy.LiveUpsize}
}

// pods replays the workload as the cluster would have run it: every change
// of allocation rolled the Deployment, so each allocation period is a pod
// of its own, started at the change, holding that share, and reporting
// relative metrics against it.
func pods(s State, sources map[usage.Metric]*engine.MetricRules, w usage.Window) []usage.Pod {
	changes := s.Allocations.Changes
	var out []usage.Pod
	for i, ch := range changes {
		last := i == len(changes)-1
		end := s.At
		if !last {
			end = changes[i+1].T - 1
		}
		span := usage.Window{From: max(ch.T-1, w.From), To: min(end, s.At)}
		if span.To <= span.From && !last {
			continue
		}
		p := usage.Pod{Name: fmt.Sprintf("%s-%d", s.Past.Name, i), Start: ch.T, Live: last, Allocation: ch.Alloc.GPUs,
			Series: map[usage.Metric][]usage.Sample{}}
		for m, mr := range sources {
			raw := usage.In(s.Past.series(m), span)
			if mr.Interpretation != engine.CurrentAllocation {
				p.Series[m] = raw
				continue
			}
			// The exporter reports usage relative to the pod's share.
			conv := make([]usage.Sample, len(raw))
			for j, x := range raw {
				conv[j] = usage.Sample{T: x.T, V: x.V / ch.Alloc.GPUs}
			}
			p.Series[m] = conv
		}
		out = append(out, p)
	}
	return out
}

func (t *Trace) series(m usage.Metric) []usage.Sample {
	if m == usage.Memory {
		return t.Memory
	}
	return t.Compute
}

// Bounds are what every baseline's raw target is held to, so that they
// differ from the engine in how they pick a number, not in what KAI
// accepts: the ceiling, 0.01 steps, whole GPUs from 1, and no change
// smaller than the minimum.
type Bounds struct {
	Ceiling          float64
	Floor            float64
	MinChangePercent int
}

// Apply turns a raw target in GPUs into a proposal.
func (b Bounds) Apply(cur engine.Allocation, target float64) engine.Allocation {
	target = min(max(target, b.Floor), b.Ceiling)
	var next engine.Allocation
	if target > kai.MaxFraction {
		n := min(kai.CeilGPUs(target), kai.FloorGPUs(b.Ceiling))
		next = engine.Allocation{Form: engine.WholeGPUs, GPUs: math.Max(1, n)}
	} else {
		next = engine.Allocation{Form: engine.Fraction, GPUs: max(kai.MinFraction, kai.CeilFraction(target))}
	}
	minChange := math.Max(kai.Step, cur.GPUs*float64(b.MinChangePercent)/100)
	if kai.Above(minChange, math.Abs(next.GPUs-cur.GPUs)) {
		return cur
	}
	return next
}

// VPA is the Kubernetes VPA recommender's method carried over to GPUs: the
// 90th percentile of an exponentially decaying histogram (half-life 24h) of
// compute samples and of daily memory peaks, plus a 15% margin.
type VPA struct {
	Bounds Bounds
}

const (
	vpaHalfLife   = 24 * time.Hour
	vpaPercentile = 0.90
	vpaMargin     = 0.15
	vpaHistory    = 8 * 24 * time.Hour
)

func (VPA) Name() string { return "vpa-like" }

func (v VPA) Decide(s State) Proposal {
	w := usage.Window{From: s.At - vpaHistory.Milliseconds(), To: s.At}
	compute := usage.In(s.Past.Compute, w)
	if len(compute) == 0 {
		return Proposal{Target: s.Current}
	}
	var cs []weighted
	for _, x := range compute {
		if x.Valid() {
			cs = append(cs, weighted{x.V / 100, decay(s.At, x.T)})
		}
	}
	// Memory: one peak per 24h interval since the trace began, as VPA
	// keeps one memory peak per aggregation interval.
	var ms []weighted
	day := (24 * time.Hour).Milliseconds()
	start := s.Past.Start()
	var peak float64
	var bucket int64 = -1
	for _, x := range usage.In(s.Past.Memory, w) {
		if !x.Valid() {
			continue
		}
		b := (x.T - start) / day
		if b != bucket && bucket >= 0 {
			ms = append(ms, weighted{peak, decay(s.At, start+bucket*day)})
			peak = 0
		}
		bucket, peak = b, max(peak, x.V/100)
	}
	if bucket >= 0 {
		ms = append(ms, weighted{peak, decay(s.At, start+bucket*day)})
	}
	target := max(quantile(cs, vpaPercentile), quantile(ms, vpaPercentile)) * (1 + vpaMargin)
	return Proposal{Target: v.Bounds.Apply(s.Current, target)}
}

type weighted struct{ v, w float64 }

func decay(now, t int64) float64 {
	return math.Exp2(-float64(now-t) / float64(vpaHalfLife.Milliseconds()))
}

// quantile is the weighted q-quantile of xs (0 when empty).
func quantile(xs []weighted, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.SortFunc(xs, func(a, b weighted) int { return cmp.Compare(a.v, b.v) })
	var total float64
	for _, x := range xs {
		total += x.w
	}
	var acc float64
	for _, x := range xs {
		acc += x.w
		if acc >= q*total {
			return x.v
		}
	}
	return xs[len(xs)-1].v
}

// KRR is Robusta KRR's memory rule applied to both metrics: the maximum
// over 14 days, plus 15%.
type KRR struct {
	Bounds Bounds
}

const (
	krrHistory = 14 * 24 * time.Hour
	krrMargin  = 0.15
)

func (KRR) Name() string { return "krr-like" }

func (k KRR) Decide(s State) Proposal {
	w := usage.Window{From: s.At - krrHistory.Milliseconds(), To: s.At}
	c, _, okc := usage.Peak(usage.In(s.Past.Compute, w))
	m, _, okm := usage.Peak(usage.In(s.Past.Memory, w))
	if !okc && !okm {
		return Proposal{Target: s.Current}
	}
	return Proposal{Target: k.Bounds.Apply(s.Current, max(c, m)/100*(1+krrMargin))}
}

// Oracle knows the future: at each run it sets, at once, the smallest
// allocation that covers the peak until the next run. No real strategy can
// beat it; it is the lower bound on slack at this cadence.
type Oracle struct {
	Bounds  Bounds
	Cadence time.Duration
}

func (Oracle) Name() string { return "oracle" }

func (o Oracle) Decide(s State) Proposal { return Proposal{Target: s.Current} }

// DecideWithFuture sizes for the samples the change will serve: each
// sample stands for the interval before it, so those until one step past
// the next run.
func (o Oracle) DecideWithFuture(s State, full *Trace) Proposal {
	w := usage.Window{From: s.At, To: s.At + o.Cadence.Milliseconds() + full.Step.Milliseconds()}
	c, _, okc := usage.Peak(usage.In(full.Compute, w))
	m, _, okm := usage.Peak(usage.In(full.Memory, w))
	if !okc && !okm {
		return Proposal{Target: s.Current}
	}
	b := o.Bounds
	b.MinChangePercent = 0
	return Proposal{Target: b.Apply(s.Current, max(c, m)/100), Immediate: true}
}
