package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Form is how a workload asks for GPU.
type Form string

const (
	NoGPU     Form = "none"
	Fraction  Form = "gpu-fraction"
	WholeGPUs Form = "nvidia.com/gpu"
	GPUMemory Form = "gpu-memory"
)

// Allocation is a workload's GPU request.
type Allocation struct {
	Form Form
	// GPUs is the request in GPUs: the fraction, or the whole count.
	GPUs float64
}

func (a Allocation) String() string {
	switch a.Form {
	case Fraction:
		return fmt.Sprintf("%.2f", a.GPUs)
	case WholeGPUs:
		if a.GPUs == 1 {
			return "1 GPU"
		}
		return fmt.Sprintf("%g GPUs", a.GPUs)
	case GPUMemory:
		return "gpu-memory"
	}
	return "-"
}

// Action is what a decision does.
type Action string

const (
	Upsize    Action = "upsize"
	ScaleBack Action = "scaleBack"
	NoChange  Action = "none"
	Skipped   Action = "skipped"
)

// Input is everything a decision depends on. It holds no handle to the
// outside world: the same Input always gives the same Decision.
type Input struct {
	At         time.Time
	Current    Allocation
	Governance Governance
	Usage      usage.Workload
}

// Decision is the outcome for one workload.
type Decision struct {
	Action      Action
	Current     Allocation
	Recommended Allocation
	// Urgent marks a reactive upsize: pressure now, which may use the live
	// fast path.
	Urgent bool
	// Rule names the rule that decided, e.g. "reactive upsize (compute)".
	Rule string
	// Reason says why, with the window and the numbers, for a reviewer.
	Reason string
}

// Sources returns, per metric, where usage is read and how it is
// interpreted: the reactive policy's mapping where it configures the
// metric, else the Kubex exporter's series. Both metrics always count: a
// baseline that ignored memory because a policy only watches compute would
// shrink a workload into out-of-memory errors.
func (g Governance) Sources() map[usage.Metric]*MetricRules {
	s := defaultSources()
	if g.Reactive != nil {
		for m, mr := range g.Reactive.Metrics {
			s[m] = mr
		}
	}
	return s
}

// lookbackMargin widens what Decide reads beyond its longest window, so
// that a pod whose age is judged from its oldest sample is seen as older
// than minPodMetricsAge when it is.
const lookbackMargin = 15 * time.Minute

// Lookback is how much history Decide reads for this governance: what a
// usage query must cover.
func (g Governance) Lookback() time.Duration {
	return max(Lookback(g.Proactive, g.Reactive), DefaultMinPodMetricsAge) + lookbackMargin
}

// Decide computes the recommendation for one workload (DESIGN §4): the
// reactive policy answers pressure now, the proactive one sets a baseline
// from long history; any upsize wins; a scale-back needs complete data,
// a baseline, and every reactive window's consent.
func Decide(in Input) Decision {
	d := Decision{Action: NoChange, Current: in.Current, Recommended: in.Current}
	g := in.Governance
	if g.Skip != "" {
		return d.skip(g.Skip)
	}
	if g.Strategy == nil {
		return d.skip("left alone: no strategy governs it")
	}
	switch in.Current.Form {
	case NoGPU:
		if !g.Strategy.SetFromUnspecified {
			return d.skip("no GPU request (setFromUnspecified is false)")
		}
		return d.skip("no GPU request: setting one from nothing is not supported yet")
	case GPUMemory:
		return d.skip("requests GPU memory (gpu-memory): not supported yet")
	}
	e := newEvaluation(in)
	if why := e.pods(); why != "" {
		return d.none(why)
	}
	return e.decide(d)
}

func (d Decision) skip(why string) Decision {
	d.Action, d.Reason = Skipped, why
	return d
}

func (d Decision) none(why string) Decision {
	d.Action, d.Reason = NoChange, "no change: "+why
	return d
}

// evaluation carries the per-workload state of one Decide call.
type evaluation struct {
	in      Input
	a       float64
	at      int64
	step    time.Duration
	sources map[usage.Metric]*MetricRules
	// eligible pods are old enough to judge; live ones run now.
	eligible, live []usage.Pod
	// youngLive names a running pod too young to judge: upsizes ignore it
	// (its start says little), but no downsize may happen while it runs.
	youngLive string
}

func newEvaluation(in Input) *evaluation {
	step := in.Usage.Step
	if step <= 0 {
		step = time.Minute
	}
	return &evaluation{in: in, a: in.Current.GPUs, at: in.At.UnixMilli(), step: step, sources: in.Governance.Sources()}
}

func (e *evaluation) minAge() time.Duration {
	if r := e.in.Governance.Reactive; r != nil {
		return r.MinPodMetricsAge
	}
	return DefaultMinPodMetricsAge
}

// pods sorts the workload's pods into eligible and live ones, and says why
// nothing can be judged when that is so.
func (e *evaluation) pods() string {
	pods := e.in.Usage.Pods
	if len(pods) == 0 {
		g := e.in.Governance
		return fmt.Sprintf("no usage data in the last %s", FormatDuration(max(Lookback(g.Proactive, g.Reactive), e.minAge())))
	}
	minAge := e.minAge()
	young, youngLive := 0, 0
	var oldest time.Duration
	for _, p := range pods {
		age, known := p.Age(e.at)
		if known && age < minAge {
			young++
			oldest = max(oldest, age)
			if e.isLive(p) {
				youngLive++
				e.youngLive = p.Name
			}
			continue
		}
		e.eligible = append(e.eligible, p)
		if e.isLive(p) {
			e.live = append(e.live, p)
		}
	}
	tooYoung := fmt.Sprintf("pod too young to judge: %d pod(s), the oldest %s old, below minPodMetricsAge %s",
		young, FormatDuration(oldest.Truncate(time.Second)), FormatDuration(minAge))
	if len(e.eligible) == 0 {
		return tooYoung
	}
	if len(e.live) == 0 && youngLive > 0 {
		// The pods that ran long enough are gone (a rollout replaced them),
		// and the running ones are too young.
		return tooYoung
	}
	if len(e.live) == 0 {
		newest := int64(math.MinInt64)
		for _, p := range e.eligible {
			newest = max(newest, newestSample(p))
		}
		if newest == math.MinInt64 {
			return "no usage samples from any running pod"
		}
		return fmt.Sprintf("stale data: the newest sample is %s old", FormatDuration(time.Duration(e.at-newest)*time.Millisecond))
	}
	return ""
}

// stepOf is the sampling interval of metric m.
func (e *evaluation) stepOf(m usage.Metric) time.Duration {
	if s := e.in.Usage.StepOf(m); s > 0 {
		return s
	}
	return e.step
}

func (e *evaluation) isLive(p usage.Pod) bool {
	if e.in.Usage.LiveKnown {
		return p.Live
	}
	return newestSample(p) >= e.at-usage.GapTolerance(e.step).Milliseconds()
}

func newestSample(p usage.Pod) int64 {
	newest := int64(math.MinInt64)
	for _, s := range p.Series {
		for i := len(s) - 1; i >= 0; i-- {
			if s[i].Valid() {
				newest = max(newest, s[i].T)
				break
			}
		}
	}
	return newest
}

// peak is the hottest pod's peak of one metric over a window, in GPUs.
type peak struct {
	pod   string
	gpus  float64
	found bool
}

// pct is a peak as a percentage of the current allocation.
func (e *evaluation) pct(gpus float64) float64 { return gpus / e.a * 100 }

// peak finds the hottest pod's peak of m over w.
func (e *evaluation) peak(m usage.Metric, w usage.Window, pods []usage.Pod) peak {
	return e.hottest(m, pods, func(p usage.Pod) (float64, bool) {
		v, _, ok := usage.Peak(usage.In(p.Series[m], w))
		return v, ok
	})
}

// hottest applies stat to each pod's samples of m and returns the largest
// result in GPUs. Values are converted pod by pod: a metric relative to the
// allocation is relative to the share that pod was created with.
func (e *evaluation) hottest(m usage.Metric, pods []usage.Pod, stat func(usage.Pod) (float64, bool)) peak {
	relative := e.sources[m].Interpretation == CurrentAllocation
	var pk peak
	for _, p := range pods {
		v, ok := stat(p)
		if !ok {
			continue
		}
		g := v / 100
		if relative {
			g *= e.podShare(p)
		}
		if !pk.found || g > pk.gpus {
			pk = peak{pod: p.Name, gpus: g, found: true}
		}
	}
	return pk
}

// quantile is the hottest pod's q-th percentile of one metric over a
// window, in GPUs; q = 100 is the peak.
func (e *evaluation) quantile(m usage.Metric, w usage.Window, pods []usage.Pod, q int) peak {
	if q >= 100 {
		return e.peak(m, w, pods)
	}
	var vals []float64
	return e.hottest(m, pods, func(p usage.Pod) (float64, bool) {
		vals = vals[:0]
		for _, x := range usage.In(p.Series[m], w) {
			if x.Valid() {
				vals = append(vals, x.V)
			}
		}
		if len(vals) == 0 {
			return 0, false
		}
		slices.Sort(vals)
		// Nearest rank: the smallest value with at least q% of the
		// samples at or below it.
		return vals[max(0, int(math.Ceil(float64(q)/100*float64(len(vals))))-1)], true
	})
}

// podShare is the GPU share a pod was created with, or the workload's
// current one when the source does not know.
func (e *evaluation) podShare(p usage.Pod) float64 {
	if p.Allocation > 0 {
		return p.Allocation
	}
	return e.a
}

// candidate is one rule's proposal.
type candidate struct {
	rule   string
	target float64
	urgent bool
	reason string
}

func (e *evaluation) decide(d Decision) Decision {
	g := e.in.Governance
	st := g.Strategy
	var ups []candidate
	if g.Reactive != nil {
		for _, m := range usage.Metrics {
			if c, ok := e.reactiveUpsize(m); ok {
				ups = append(ups, c)
			}
		}
	}
	var base *baseline
	if g.Proactive != nil {
		base = e.baseline()
		if base.known && base.target > e.a {
			ups = append(ups, candidate{rule: "proactive baseline", target: base.target,
				reason: fmt.Sprintf("%s baseline is above the allocation: %s", FormatDuration(g.Proactive.Window), base.reason)})
		}
	}
	if len(ups) > 0 {
		// Compare targets as the step limit will leave them, so that a rule
		// whose ask is cut down anyway does not win on the uncut number.
		limit := e.a * e.maxStep()
		best := slices.MaxFunc(ups, func(x, y candidate) int { return cmp.Compare(min(x.target, limit), min(y.target, limit)) })
		if !best.urgent {
			// Pressure now makes the change urgent even when the baseline
			// asks for more: the reviewer should see both.
			for _, c := range ups {
				if c.urgent {
					best.urgent = true
					best.reason += "; and now " + c.reason
					break
				}
			}
		}
		if !st.Upsize {
			return d.none(best.reason + "; but the strategy does not allow upsizes (enablement.gpu.requests.upsize)")
		}
		return e.finish(d, Upsize, best)
	}

	// No pressure: consider a scale-back.
	blocked, sbTargets, sbReasons := e.scaleBacks()
	switch {
	case base == nil:
		if blocked != "" {
			return d.none(blocked)
		}
		if len(sbReasons) == 0 {
			return d.none("no rule asks for a change")
		}
		return d.none(strings.Join(sbReasons, "; ") + ", but without a proactive baseline there is no scale-back")
	case !base.known:
		return d.none(base.reason)
	case base.target >= e.a:
		return d.none(fmt.Sprintf("usage fits the allocation: %s", base.reason))
	case !st.Downsize:
		return d.none(fmt.Sprintf("the %s baseline is below the allocation (%s), but the strategy does not allow downsizes (enablement.gpu.requests.downsize)",
			FormatDuration(g.Proactive.Window), base.reason))
	case !base.complete:
		return d.none(base.incomplete)
	case blocked != "":
		return d.none(blocked)
	case e.youngLive != "":
		return d.none(fmt.Sprintf("pod %s is younger than minPodMetricsAge %s: a downsize waits until it can be judged",
			e.youngLive, FormatDuration(e.minAge())))
	}
	c := candidate{rule: "proactive baseline", target: base.target,
		reason: fmt.Sprintf("%s baseline %s", FormatDuration(g.Proactive.Window), base.reason)}
	for _, t := range sbTargets {
		if t.target > c.target {
			c = t
		}
	}
	if len(sbReasons) > 0 {
		c.reason += "; " + strings.Join(sbReasons, "; ")
	}
	if g.Reactive != nil && c.rule == "proactive baseline" {
		c.rule = "scale-back to baseline"
	}
	return e.finish(d, ScaleBack, c)
}

// reactiveUpsize applies one metric's upsize rule.
func (e *evaluation) reactiveUpsize(m usage.Metric) (candidate, bool) {
	mr := e.in.Governance.Reactive.Metrics[m]
	if mr == nil || mr.Upsize == nil {
		return candidate{}, false
	}
	u := mr.Upsize
	pk := e.peak(m, usage.WindowEnding(e.in.At, u.Window), e.eligible)
	if !pk.found || e.pct(pk.gpus) < float64(u.ThresholdPercent) {
		return candidate{}, false
	}
	used := pk.gpus
	factor := 1 + float64(u.HeadroomPercent)/100
	target := used * factor
	if target <= e.a {
		// A threshold below 100% with little headroom can ask for less
		// than the allocation: that is no upsize.
		return candidate{}, false
	}
	reason := fmt.Sprintf("%s peaked at %.0f%% of its %.2f allocation over %s (≥ %d%%) → %s × %g = %s",
		m, e.pct(used), e.a, FormatDuration(u.Window), u.ThresholdPercent, num(used), factor, num(target))
	if limit := e.a * float64(u.MaxPercent) / 100; target > limit {
		target = limit
		reason += fmt.Sprintf(", capped at maxPercent %d%% = %s", u.MaxPercent, num(limit))
	}
	return candidate{rule: fmt.Sprintf("reactive upsize (%s)", m), target: target, urgent: true, reason: reason}, true
}

// baseline is the proactive policy's long-term target.
type baseline struct {
	known  bool
	target float64
	reason string
	// complete is true when the history is long and gap-free enough to
	// lower the allocation; incomplete says why not.
	complete   bool
	incomplete string
}

func (e *evaluation) baseline() *baseline {
	p := e.in.Governance.Proactive
	w := usage.WindowEnding(e.in.At, p.Window)
	factor := 1 + float64(p.HeadroomPercent)/100
	b := &baseline{complete: true}
	var parts []string
	for _, m := range usage.Metrics {
		mr := e.sources[m]
		if mr == nil {
			continue
		}
		q := 100
		if m == usage.Compute {
			q = p.ComputePercentile
		}
		pk := e.quantile(m, w, e.eligible, q)
		if !pk.found {
			b.complete = false
			b.incomplete = fmt.Sprintf("incomplete data in the window: no %s samples in the last %s", m, FormatDuration(p.Window))
			continue
		}
		used := pk.gpus
		target := used * factor
		what := fmt.Sprintf("%s peaked at", m)
		short := fmt.Sprintf("%s peak", m)
		if q < 100 {
			what = fmt.Sprintf("%s p%d was", m, q)
			short = fmt.Sprintf("%s p%d", m, q)
		}
		if !b.known || target > b.target {
			b.target = target
			b.reason = fmt.Sprintf("%s %s GPU over %s → %s × %g = %s", what, num(used), e.history(m, w), num(used), factor, num(target))
		}
		b.known = true
		parts = append(parts, fmt.Sprintf("%s %s", short, num(used)))
		if b.complete {
			if why := e.historyComplete(m, p.MinHistory); why != "" {
				b.complete, b.incomplete = false, why
			}
		}
	}
	if !b.known {
		b.reason = fmt.Sprintf("no usage samples in the last %s", FormatDuration(p.Window))
		return b
	}
	if len(parts) > 1 {
		b.reason += " (" + strings.Join(parts, ", ") + ")"
	}
	return b
}

// history says how much history a window really holds, for reasons.
func (e *evaluation) history(m usage.Metric, w usage.Window) string {
	first := w.To
	for _, p := range e.eligible {
		for _, x := range usage.In(p.Series[m], w) {
			if x.Valid() {
				first = min(first, x.T)
				break
			}
		}
	}
	span := time.Duration(w.To-first) * time.Millisecond
	if span >= w.Duration()-e.stepOf(m) {
		return FormatDuration(w.Duration())
	}
	return FormatDuration(span.Round(time.Minute)) + " of history"
}

// historyComplete checks that the workload has gap-free samples of m over
// the last need, taking its pods together (pods come and go in rollouts),
// and that every live pod reports now.
func (e *evaluation) historyComplete(m usage.Metric, need time.Duration) string {
	w := usage.WindowEnding(e.in.At, need)
	var ts []int64
	for _, p := range e.in.Usage.Pods {
		for _, s := range usage.In(p.Series[m], w) {
			if s.Valid() {
				ts = append(ts, s.T)
			}
		}
	}
	slices.Sort(ts)
	merged := make([]usage.Sample, len(ts))
	for i, t := range ts {
		merged[i] = usage.Sample{T: t}
	}
	step := e.stepOf(m)
	tol := usage.GapTolerance(step).Milliseconds()
	if len(ts) > 0 && ts[0]-w.From > tol {
		return fmt.Sprintf("incomplete data in the window: a downsize needs %s of %s history, and it has %s",
			FormatDuration(need), m, FormatDuration(time.Duration(w.To-ts[0])*time.Millisecond))
	}
	if c := usage.Cover(merged, w, step); !c.Complete {
		return fmt.Sprintf("incomplete data in the window: a downsize needs %s of %s history without gaps, and it has a %s gap",
			FormatDuration(need), m, FormatDuration(c.MaxGap.Round(time.Second)))
	}
	for _, p := range e.live {
		s := p.Series[m]
		fresh := false
		for i := len(s) - 1; i >= 0 && s[i].T >= e.at-tol; i-- {
			if s[i].Valid() && s[i].T <= e.at {
				fresh = true
				break
			}
		}
		if !fresh {
			return fmt.Sprintf("incomplete data in the window: running pod %s has no recent %s sample", p.Name, m)
		}
	}
	return ""
}

// scaleBacks applies every reactive scale-back rule. blocked says why a
// scale-back may not happen now ("" when every window allows it).
func (e *evaluation) scaleBacks() (blocked string, targets []candidate, reasons []string) {
	r := e.in.Governance.Reactive
	if r == nil {
		return "", nil, nil
	}
	for _, m := range usage.Metrics {
		mr := r.Metrics[m]
		if mr == nil || mr.ScaleBack == nil {
			continue
		}
		sb := mr.ScaleBack
		w := usage.WindowEnding(e.in.At, sb.Window)
		for _, p := range e.live {
			if c := usage.Cover(p.Series[m], w, e.stepOf(m)); !c.Complete {
				why := fmt.Sprintf("incomplete data in the window: pod %s has %d of %d %s samples in the last %s",
					p.Name, c.Samples, c.Expected, m, FormatDuration(sb.Window))
				return why, nil, nil
			}
		}
		pk := e.peak(m, w, e.eligible)
		if !pk.found {
			return fmt.Sprintf("incomplete data in the window: no %s samples in the last %s", m, FormatDuration(sb.Window)), nil, nil
		}
		pct := e.pct(pk.gpus)
		if pct >= float64(sb.ThresholdPercent) {
			return fmt.Sprintf("%s reached %.0f%% of the allocation in the last %s (a scale-back needs it below %d%%)",
				m, pct, FormatDuration(sb.Window), sb.ThresholdPercent), nil, nil
		}
		used := pk.gpus
		factor := 1 + float64(sb.HeadroomPercent)/100
		targets = append(targets, candidate{rule: fmt.Sprintf("reactive scale-back (%s)", m), target: used * factor,
			reason: fmt.Sprintf("%s stayed below %d%% for %s (peak %.0f%%) → %s × %g = %s", m, sb.ThresholdPercent,
				FormatDuration(sb.Window), pct, num(used), factor, num(used*factor))})
		reasons = append(reasons, fmt.Sprintf("%s stayed below %d%% for %s (peak %.0f%%)", m, sb.ThresholdPercent, FormatDuration(sb.Window), pct))
	}
	return "", targets, reasons
}

// maxStep is the largest upsize allowed in one step, as a multiple of the
// current allocation: the reactive policy's tightest maxPercent.
func (e *evaluation) maxStep() float64 {
	limit := DefaultMaxPercent
	if r := e.in.Governance.Reactive; r != nil {
		first := true
		for _, m := range r.Metrics {
			if m.Upsize != nil && (first || m.Upsize.MaxPercent < limit) {
				limit, first = m.Upsize.MaxPercent, false
			}
		}
	}
	return float64(limit) / 100
}

// finish bounds, rounds and filters a proposal into the decision.
func (e *evaluation) finish(d Decision, act Action, c candidate) Decision {
	st := e.in.Governance.Strategy
	target := c.target
	notes := c.reason
	if act == Upsize {
		if limit := e.a * e.maxStep(); target > limit && target > st.Floor {
			target = max(limit, st.Floor)
			notes += fmt.Sprintf("; a step may not exceed %.0f%% of the allocation (%s)", e.maxStep()*100, num(limit))
		}
		if target > st.Ceiling {
			target = st.Ceiling
			notes += fmt.Sprintf("; clamped to the ceiling %g", st.Ceiling)
		}
		if target < st.Floor {
			// An allocation below the floor moves into bounds, however
			// small its step.
			target = st.Floor
			notes += fmt.Sprintf("; raised to the floor %g", st.Floor)
		}
		if target <= e.a {
			return d.none(notes + "; already at the ceiling")
		}
	} else {
		if target > st.Ceiling {
			// Clamping would cut below measured usage: nothing safe to
			// shrink to.
			return d.none(notes + fmt.Sprintf("; that is above the ceiling %g, and a scale-back to the ceiling would cut below measured usage", st.Ceiling))
		}
		if target < st.Floor {
			target = st.Floor
			notes += fmt.Sprintf("; raised to the floor %g", st.Floor)
		}
		if target >= e.a {
			return d.none(notes)
		}
	}
	rec, ok := e.quantize(act, target)
	if !ok {
		return d.none(notes + fmt.Sprintf("; as %s that stays %s", e.in.Current.Form, e.in.Current))
	}
	minChange := max(0.01, e.a*float64(st.MinChangePercent)/100)
	if math.Abs(rec.GPUs-e.a) < minChange-1e-9 {
		return d.none(fmt.Sprintf("%s; %.2f → %.2f is below the minimum change (%d%%)", notes, e.a, rec.GPUs, st.MinChangePercent))
	}
	d.Action, d.Recommended, d.Urgent, d.Rule = act, rec, c.urgent, c.rule
	d.Reason = notes
	if rec.Form == Fraction && math.Abs(rec.GPUs-target) > 1e-9 {
		d.Reason += fmt.Sprintf("; %s in KAI's 0.01 steps", rec)
	}
	if rec.Form != e.in.Current.Form {
		d.Reason += fmt.Sprintf("; moves from %s to %s", e.in.Current.Form, rec.Form)
	}
	return d
}

// quantize turns a target into a request KAI accepts: a fraction with two
// decimals strictly between 0 and 1, or whole GPUs. Rounding is upward, so
// a recommendation never falls below what the rule asked for, except where
// a bound (the step limit, the ceiling) forbids it.
func (e *evaluation) quantize(act Action, target float64) (Allocation, bool) {
	st := e.in.Governance.Strategy
	limit := st.Ceiling
	if act == Upsize {
		limit = min(limit, max(e.a*e.maxStep(), st.Floor))
	}
	wholeOnly := e.in.Current.Form == WholeGPUs && !st.MoveToKAI
	if wholeOnly || target > 0.99 {
		n := math.Ceil(target - 1e-9)
		if n > limit {
			n = math.Floor(limit + 1e-9)
		}
		if n >= 1 {
			alloc := Allocation{Form: WholeGPUs, GPUs: n}
			return alloc, n != e.a || e.in.Current.Form != WholeGPUs
		}
		if wholeOnly {
			return Allocation{}, false
		}
		// A whole GPU is out of bounds: the largest fraction is next best.
		return Allocation{Form: Fraction, GPUs: math.Min(0.99, math.Floor(limit*100+1e-9)/100)}, true
	}
	f := math.Ceil(target*100-1e-9) / 100
	if f > limit {
		f = math.Floor(limit*100+1e-9) / 100
	}
	f = math.Max(0.01, math.Min(0.99, f))
	return Allocation{Form: Fraction, GPUs: f}, true
}

// num renders an amount of GPUs for a reason: two decimals when that is
// exact, else three, so that the arithmetic shown can be followed.
func num(v float64) string {
	v = math.Round(v*1000) / 1000
	if math.Abs(v*100-math.Round(v*100)) < 1e-6 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
