package backtest

import (
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
	// The live fast path is the tool's only where the policy enables it
	// (gitops.liveUpsize) and only for an urgent decision (a reactive
	// upsize); whether usage is urgent is then the simulator's one rule,
	// as for every strategy (Config.Live, Urgent).
	return Proposal{Target: d.Recommended, NotLive: !e.Governance.Strategy.LiveUpsize || !d.Urgent}
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

// KRRSimple is Robusta KRR's "simple" strategy (robusta-dev/krr at commit
// d6baa7453effd96d330e24c187942e92bc82094b, at its defaults): compute at
// the 95th percentile of its history with no buffer, memory at the maximum
// + 15 %, over 14 days (core/abstract/strategies.py L47-50). Read
// literally:
//
//   - the percentile is PromQL's quantile_over_time per pod
//     (core/integrations/prometheus/metrics/cpu.py L30-59, "by (container,
//     pod, job)"), and the recommendation the largest of the pods'
//     (strategies/simple.py L57-66); memory the largest pod's maximum
//     (L47-55). Every change rolls the Deployment, so each allocation
//     period is a pod, as for the engine and VPA.
//   - no recommendation under 100 data points, summed over the pods
//     (simple.py L124-128, L166-170), counted in KRR's units: the steps of
//     its subquery, every 1.25 minutes (core/abstract/strategies.py L50),
//     at which the series has a sample within Prometheus's 5-minute
//     lookback (CPUAmountLoader, MemoryAmountLoader: count_over_time over
//     [14d:1.25m]). On 10-minute samples a point is half a sample's worth
//     of steps: 100 points are about 4 hours, not 100 samples' 17;
//   - the 3-hour history rule (simple.py L68-70) only warns: the runner
//     logs it and recommends anyway (core/runner.py L384-402).
//
// A share holds both, so the target is the larger. KRR only reports; here
// each change it reports is a pull request. Pooled is the reading of
// earlier rounds: one percentile over the samples of every pod, samples
// counted as points, and nothing under 3 hours of history.
type KRRSimple struct {
	Bounds Bounds
	Pooled bool
}

const (
	krrStep           = 75 * time.Second // --timeframe_duration 1.25 (minutes)
	krrLookback       = 5 * time.Minute  // Prometheus's lookback delta
	krrHistory        = 14 * 24 * time.Hour
	krrMinHistory     = 3 * time.Hour
	krrPointsRequired = 100
	krrCPUPercentile  = 0.95
	krrMemoryBuffer   = 0.15
)

func (k KRRSimple) Name() string {
	if k.Pooled {
		return "krr-simple, pooled pods, 3 h history required"
	}
	return "krr-simple"
}

// Recommend is KRR's raw answer in GPUs; ok is false when KRR would print
// "Not enough data".
func (k KRRSimple) Recommend(s State) (target float64, ok bool) {
	w := usage.Window{From: s.At - krrHistory.Milliseconds(), To: s.At}
	// Each pod's valid compute samples; pooled, one pod.
	var pods [][]float64
	var first, last int64
	points, memPoints := 0, 0
	changes := s.Allocations.Changes
	for i, ch := range changes {
		span := w
		if !k.Pooled {
			end := s.At
			if i+1 < len(changes) {
				end = changes[i+1].T - 1
			}
			span = usage.Window{From: max(ch.T-1, w.From), To: min(end, s.At)}
		}
		var cpu []float64
		samples := 0
		for _, x := range usage.In(s.Past.Compute, span) {
			if x.Valid() {
				if samples == 0 && len(pods) == 0 {
					first = x.T
				}
				last = x.T
				samples++
				cpu = append(cpu, x.V/100)
			}
		}
		if k.Pooled {
			points, memPoints = samples, -1
		} else {
			points += krrPoints(s.Past.Compute, span)
			memPoints += krrPoints(s.Past.Memory, span)
		}
		if len(cpu) > 0 {
			pods = append(pods, cpu)
		}
		if k.Pooled {
			break
		}
	}
	mem, n, okm := usage.Peak(usage.In(s.Past.Memory, w))
	if memPoints < 0 {
		memPoints = n
	}
	if points < krrPointsRequired || memPoints < krrPointsRequired || !okm {
		return 0, false
	}
	if k.Pooled && last-first < krrMinHistory.Milliseconds() {
		return 0, false
	}
	cpu := 0.0
	for _, p := range pods {
		cpu = max(cpu, promQuantile(p, krrCPUPercentile))
	}
	return max(cpu, mem/100*(1+krrMemoryBuffer)), true
}

func (k KRRSimple) Decide(s State) Proposal {
	t, ok := k.Recommend(s)
	if !ok {
		return Proposal{Target: s.Current}
	}
	return Proposal{Target: k.Bounds.Apply(s.Current, t)}
}

// krrPoints counts the points KRR's count_over_time(...[14d:1.25m]) finds
// in s over span: the steps, on the clock every krrStep, at which a valid
// sample lies within the lookback before them. The series ends with
// span, as a replaced pod's does.
func krrPoints(s []usage.Sample, span usage.Window) int {
	step := krrStep.Milliseconds()
	n := 0
	// covered is the end of the steps counted so far (exclusive).
	covered := int64(math.MinInt64)
	for _, x := range usage.In(s, span) {
		if !x.Valid() {
			continue
		}
		// A sample at T is seen by the steps in [T, T+lookback).
		from := max(x.T, covered)
		to := min(x.T+krrLookback.Milliseconds(), span.To+1)
		if to > from {
			n += int(ceilDiv(to, step) - ceilDiv(from, step))
			covered = to
		}
	}
	return n
}

// ceilDiv is a/b rounded up, for b > 0.
func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }

// promQuantile is PromQL's quantile_over_time, which KRR queries: linear
// interpolation between the closest ranks, at rank q·(n−1).
func promQuantile(xs []float64, q float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	rank := q * float64(len(xs)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(xs)-1)
	f := rank - float64(lo)
	return xs[lo]*(1-f) + xs[hi]*f
}

// PeakPlus15 sizes both metrics as KRR sizes memory: the maximum over 14
// days, plus 15 %. It is not KRR (whose compute is a percentile), but the
// simplest conservative rule there is.
type PeakPlus15 struct {
	Bounds Bounds
}

const peakMargin = 0.15

func (PeakPlus15) Name() string { return "peak+15%" }

func (k PeakPlus15) Decide(s State) Proposal {
	w := usage.Window{From: s.At - krrHistory.Milliseconds(), To: s.At}
	c, _, okc := usage.Peak(usage.In(s.Past.Compute, w))
	m, _, okm := usage.Peak(usage.In(s.Past.Memory, w))
	if !okc && !okm {
		return Proposal{Target: s.Current}
	}
	return Proposal{Target: k.Bounds.Apply(s.Current, max(c, m)/100*(1+peakMargin))}
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
