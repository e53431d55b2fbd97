package engine

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Decide computes the recommendation for one workload (docs/design.md §4): the
// reactive policy answers pressure now, the proactive one sets a baseline
// from long history; any upsize wins; a scale-back needs complete and
// valid data, a baseline, and every reactive window's consent.
func Decide(in Input) Decision {
	d := decide(in)
	d.Evidence.Unattributed = in.Usage.Unattributed
	return d
}

func decide(in Input) Decision {
	r := in.Rules
	if r.Strategy == nil {
		return LeftAlone(in.Current, CausePolicyInvalid, "no strategy governs it")
	}
	d := Decision{Action: NoChange, Current: in.Current, Recommended: in.Current,
		Evidence: Evidence{Allocation: in.Current.GPUs, Ceiling: r.Strategy.Ceiling, Floor: r.Strategy.Floor}}
	switch in.Current.Form {
	case NoGPU:
		if !r.Strategy.SetFromUnspecified {
			return LeftAlone(in.Current, CauseNotAllowed, "no GPU request (setFromUnspecified is false)")
		}
		return LeftAlone(in.Current, CauseUnsupported, "no GPU request: setting one from nothing is not supported yet")
	case GPUMemory:
		if r.Strategy.GPUMemoryMiB <= 0 || in.Current.MiB <= 0 {
			return LeftAlone(in.Current, CauseUnsupported, "requests GPU memory (gpu-memory) but the GPU's memory is unknown: set spec.kai.gpuMemoryMiB in its strategy")
		}
	}
	if why := in.Usage.Mixed; why != "" {
		// Two readings of one thing were found where one was expected:
		// which is the workload's is not known, so no number is trusted.
		return d.none(CauseDataMixed, &Shortfall{Kind: ShortMixed, Why: why})
	}
	e := newEvaluation(in)
	if c, s := e.pods(); c != "" {
		return d.none(c, s)
	}
	return e.decide(d)
}

// lacking says what the answer may lack that a scale-back needs: samples
// the source could not return, or a pod that counts for no workload;
// either may be the high ones. nil when nothing.
func (e *evaluation) lacking() *Shortfall {
	u := e.in.Usage
	switch {
	case u.Partial != "":
		return &Shortfall{Kind: ShortPartial, Why: u.Partial}
	case len(u.Unattributed) > 0:
		return &Shortfall{Kind: ShortUnattributed, Pods: len(u.Unattributed), Why: u.Unattributed[0]}
	}
	return nil
}

// none is a decision to change nothing, for cause c.
func (d Decision) none(c Cause, s *Shortfall) Decision {
	d.Action, d.Recommended, d.Urgent, d.Rule, d.Cause = NoChange, d.Current, false, "", c
	d.Evidence.Shortfall = s
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
	return &evaluation{in: in, a: in.Current.GPUs, at: in.At.UnixMilli(), step: step, sources: in.Rules.Sources()}
}

// pods sorts the workload's pods into eligible and live ones, and says why
// nothing can be judged when that is so.
func (e *evaluation) pods() (Cause, *Shortfall) {
	pods := e.in.Usage.Pods
	minAge := e.in.Rules.minPodAge()
	if len(pods) == 0 {
		return CauseDataIncomplete, &Shortfall{Kind: ShortNoData, Window: Span(max(e.in.Rules.window(), minAge))}
	}
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
	tooYoung := &Shortfall{Kind: ShortTooYoung, Pods: young, Age: Span(oldest.Truncate(time.Second)), MinAge: Span(minAge)}
	switch {
	case len(e.eligible) == 0:
		return CauseTooYoung, tooYoung
	case len(e.live) == 0 && youngLive > 0:
		// The pods that ran long enough are gone (a rollout replaced them),
		// and the running ones are too young.
		return CauseTooYoung, tooYoung
	case len(e.live) == 0:
		newest := int64(math.MinInt64)
		for _, p := range e.eligible {
			newest = max(newest, newestSample(p))
		}
		if newest == math.MinInt64 {
			return CauseDataIncomplete, &Shortfall{Kind: ShortNoLive}
		}
		return CauseDataStale, &Shortfall{Kind: ShortStale, Age: Span(time.Duration(e.at-newest) * time.Millisecond)}
	}
	return "", nil
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

// pct is an amount of GPUs as a percentage of the current allocation.
func (e *evaluation) pct(gpus float64) float64 { return gpus / e.a * 100 }

// read takes the q-th percentile (100: the peak) of metric m over w for
// every pod, and returns the hottest pod's, in GPUs, with that pod's
// median. Values are converted pod by pod: a metric relative to the
// allocation is relative to the share that pod was created with.
func (e *evaluation) read(m usage.Metric, w usage.Window, q int) (Reading, bool) {
	var best Reading
	var hottest []usage.Sample
	var hottestScale float64
	var vals []float64
	for _, p := range e.eligible {
		in := usage.In(p.Series[m], w)
		vals = valid(vals[:0], in)
		if len(vals) == 0 {
			continue
		}
		scale := e.scale(m, p)
		v := rank(vals, q) * scale
		if hottest == nil || v > best.Value {
			best = Reading{Metric: m, Window: Span(w.Duration()), Percentile: q, Value: v, Pod: p.Name}
			hottest, hottestScale = in, scale
		}
	}
	if hottest == nil {
		return best, false
	}
	// The median is taken once, of the pod that won.
	best.Typical = rank(valid(vals[:0], hottest), 50) * hottestScale
	best.Percent = e.pct(best.Value)
	return best, true
}

// valid appends the values of the valid samples of s to dst.
func valid(dst []float64, s []usage.Sample) []float64 {
	if cap(dst) < len(s) {
		dst = make([]float64, 0, len(s))
	}
	for _, x := range s {
		if x.Valid() {
			dst = append(dst, x.V)
		}
	}
	return dst
}

// rank is the nearest-rank q-th percentile of values: the smallest value
// with at least q% of the values at or below it. It reorders values.
func rank(values []float64, q int) float64 {
	if q >= 100 {
		// Values are valid (no NaN): a plain scan, without slices.Max's
		// NaN handling.
		m := values[0]
		for _, v := range values[1:] {
			if v > m {
				m = v
			}
		}
		return m
	}
	return nth(values, max(0, int(math.Ceil(float64(q)/100*float64(len(values))))-1))
}

// nth returns the k-th smallest of values (0-based) in linear expected
// time, reordering them: a week of one-minute samples is sized on every
// run for every pod, and sorting each of them dominated a decision.
func nth(values []float64, k int) float64 {
	lo, hi := 0, len(values)-1
	for lo < hi {
		// The median of three as the pivot, and a three-way partition, so
		// that sorted input and long runs of equal values stay linear.
		mid := lo + (hi-lo)/2
		a, b, c := values[lo], values[mid], values[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch v := values[i]; {
			case v < pivot:
				values[lt], values[i] = values[i], values[lt]
				lt++
				i++
			case v > pivot:
				values[gt], values[i] = values[i], values[gt]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return pivot
		}
	}
	return values[k]
}

// scale turns a pod's value of metric m, a percent, into GPUs. A percent
// of the allocation is of the share that pod was created with. A percent
// of one GPU read by device is the busiest device's, and the pod's other
// devices are taken to be as busy, so that a pod of two GPUs at 95 % on
// one reads 1.9 GPUs, never 1.0 from adding 95 and 5.
func (e *evaluation) scale(m usage.Metric, p usage.Pod) float64 {
	switch {
	case e.sources[m].Interpretation == CurrentAllocation:
		return e.podShare(p) / 100
	case p.ByDevice[m]:
		return e.devices(p) / 100
	}
	return 1.0 / 100
}

// devices is how many GPUs a pod's share spans: its whole GPUs, or one
// device for a fraction or an amount of memory.
func (e *evaluation) devices(p usage.Pod) float64 {
	if e.in.Current.Form == WholeGPUs {
		return max(1, kai.CeilGPUs(e.podShare(p)))
	}
	return 1
}

// podShare is the GPU share a pod was created with, or the workload's
// current one when the source does not know.
func (e *evaluation) podShare(p usage.Pod) float64 {
	if p.Allocation > 0 {
		return p.Allocation
	}
	return e.a
}

func (e *evaluation) decide(d Decision) Decision {
	r := e.in.Rules
	st := r.Strategy
	ev := &d.Evidence
	if r.Reactive != nil {
		for _, m := range usage.Metrics {
			if rd, ok := e.reactiveUpsize(m); ok {
				ev.Upsizes = append(ev.Upsizes, rd)
			}
		}
	}
	var base *baseline
	if r.Proactive != nil {
		base = e.baseline()
		ev.Baseline = base.evidence
	}
	var ups []Proposal
	for _, u := range ev.Upsizes {
		ups = append(ups, Proposal{Action: Upsize, Rule: RuleReactiveUpsize, Metric: u.Metric, Target: u.Capped(), Urgent: true})
	}
	if base != nil && base.evidence != nil && base.evidence.Target() > e.a {
		ups = append(ups, Proposal{Action: Upsize, Rule: RuleBaseline, Target: base.evidence.Target()})
	}
	if len(ups) > 0 {
		// Compare targets as the step limit will leave them, so that a rule
		// whose ask is cut down anyway does not win on the uncut number.
		limit := e.a * r.maxStep()
		best := slices.MaxFunc(ups, func(x, y Proposal) int { return cmp.Compare(min(x.Target, limit), min(y.Target, limit)) })
		// Pressure now makes the change urgent even when the baseline asks
		// for more: the reviewer sees both.
		best.Urgent = len(ev.Upsizes) > 0
		ev.Proposal = &best
		if !st.Upsize {
			return d.none(CauseNotAllowed, nil)
		}
		return e.finish(d, Upsize)
	}

	// No pressure: consider a scale-back.
	blocked := e.scaleBacks(ev)
	switch {
	case base == nil:
		if blocked != nil {
			return d.none(blocked.cause, blocked.shortfall)
		}
		if len(ev.ScaleBacks) == 0 {
			return d.none(CauseFits, nil)
		}
		return d.none(CauseNoBaseline, nil)
	case base.evidence == nil:
		return d.none(CauseDataIncomplete, &Shortfall{Kind: ShortNoData, Window: Span(r.Proactive.Window)})
	case base.evidence.Target() >= e.a:
		return d.none(CauseFits, nil)
	case !st.Downsize:
		return d.none(CauseNotAllowed, nil)
	case e.lacking() != nil:
		return d.none(CauseDataIncomplete, e.lacking())
	case base.shortfall != nil:
		return d.none(base.cause, base.shortfall)
	case blocked != nil:
		return d.none(blocked.cause, blocked.shortfall)
	case e.youngLive != "":
		return d.none(CauseTooYoung, &Shortfall{Kind: ShortYoungPod, Pod: e.youngLive, MinAge: Span(r.minPodAge())})
	}
	p := Proposal{Action: ScaleBack, Rule: RuleBaseline, Target: base.evidence.Target()}
	for _, sb := range ev.ScaleBacks {
		if sb.Target > p.Target {
			p = Proposal{Action: ScaleBack, Rule: RuleReactiveScaleBack, Metric: sb.Metric, Target: sb.Target}
		}
	}
	if r.Reactive != nil && p.Rule == RuleBaseline {
		p.Rule = RuleScaleBackBaseline
	}
	ev.Proposal = &p
	return e.finish(d, ScaleBack)
}

// reactiveUpsize applies one metric's upsize rule.
func (e *evaluation) reactiveUpsize(m usage.Metric) (Reading, bool) {
	mr := e.in.Rules.Reactive.Metrics[m]
	if mr == nil || mr.Upsize == nil {
		return Reading{}, false
	}
	u := mr.Upsize
	rd, found := e.read(m, usage.WindowEnding(e.in.At, u.Window), 100)
	if !found || rd.Percent < float64(u.ThresholdPercent) {
		return Reading{}, false
	}
	rd.ThresholdPercent, rd.HeadroomPercent = u.ThresholdPercent, u.HeadroomPercent
	rd.Target = rd.Value * (1 + float64(u.HeadroomPercent)/100)
	if rd.Target <= e.a {
		// A threshold below 100% with little headroom can ask for less
		// than the allocation: that is no upsize.
		return Reading{}, false
	}
	if limit := e.a * float64(u.MaxPercent) / 100; rd.Target > limit {
		rd.MaxPercent, rd.Cap = u.MaxPercent, limit
	}
	return rd, true
}

// baseline is the proactive policy's long-term target, and whether its
// history allows lowering the allocation.
type baseline struct {
	// evidence is nil when no metric had samples.
	evidence *Baseline
	// cause and shortfall say why the history may not lower the
	// allocation; shortfall is nil when it may.
	cause     Cause
	shortfall *Shortfall
}

func (e *evaluation) baseline() *baseline {
	p := e.in.Rules.Proactive
	b := &baseline{}
	ev := &Baseline{Window: Span(p.Window)}
	for _, m := range usage.Metrics {
		if e.sources[m] == nil {
			continue
		}
		w := usage.WindowEnding(e.in.At, p.WindowOf(m))
		q := 100
		if m == usage.Compute {
			q = p.ComputePercentile
		}
		var rd Reading
		var found, risk bool
		if p.BreachRiskPercent > 0 {
			rd, found = e.hourlyRisk(m, w, p.BreachRiskPercent)
			risk = found
		}
		switch {
		case risk:
		case m == usage.Memory && p.MemoryDailyPeakPercentile > 0:
			rd, found = e.dailyPeak(m, w, p.MemoryDailyPeakPercentile)
		default:
			rd, found = e.read(m, w, q)
		}
		if !found {
			// A metric without samples outweighs what another one lacks.
			b.cause, b.shortfall = CauseDataIncomplete, &Shortfall{Kind: ShortNoSamples, Metric: m, Window: Span(p.WindowOf(m))}
			continue
		}
		rd.History = e.history(m, w)
		if !risk {
			// The risk's quantile is the share itself; the fixed margins
			// are for a history too short to give it.
			rd.HeadroomPercent = p.HeadroomPercent
		}
		if !risk && m == usage.Memory && rd.History > 0 && p.MemoryConfidenceHeadroomPercent > 0 {
			// The less history, the less its peak says about the next
			// one; and memory beyond the share is fatal, where compute
			// beyond it is contention. Confidence grows over the
			// baseline's window, even where memory's own is longer: a
			// week of history is enough to trust a peak, and the longer
			// memory window only keeps it.
			missing := max(0, 1-float64(rd.History)/float64(p.confidenceWindow()))
			rd.ConfidencePercent = math.Round(float64(p.MemoryConfidenceHeadroomPercent)*missing*10) / 10
			if p.MemoryConfidenceWindow > 0 {
				rd.ConfidenceWindow = Span(p.MemoryConfidenceWindow)
			}
		}
		rd.Target = rd.Value * factor(rd)
		if b.shortfall == nil {
			// The baseline is the peak of the whole window: a NaN in it
			// may stand where the peak was, so it blocks a downsize,
			// however old (a missing scrape is tolerated there).
			if s := e.invalid(m, w, e.in.Usage.Pods); s != nil {
				b.cause, b.shortfall = CauseDataInvalid, s
			}
		}
		if len(ev.Metrics) == 0 || rd.Target > ev.Metrics[ev.Decisive].Target {
			ev.Decisive = len(ev.Metrics)
		}
		ev.Metrics = append(ev.Metrics, rd)
		if b.shortfall == nil {
			b.cause, b.shortfall = e.historyComplete(m, p.MinHistory)
		}
	}
	if len(ev.Metrics) > 0 {
		b.evidence = ev
	}
	return b
}

// hourlyRisk sizes m for a breach risk of r percent an hour: of the n
// hours of w with samples (counted back from its end; the oldest may be
// shorter), the peak of the one ranked k = ⌈(1 − r/100)(n + 1)⌉ from the
// lowest. If the hours are exchangeable, the next hour's peak exceeds it
// with probability at most r/100 (a conformal bound): it needs no
// headroom. With fewer hours than that takes (k > n), false: the history
// cannot give that risk, and the fixed margins size the baseline.
func (e *evaluation) hourlyRisk(m usage.Metric, w usage.Window, r int) (Reading, bool) {
	const hourMs = int64(time.Hour / time.Millisecond)
	type hour struct {
		w    usage.Window
		peak float64
	}
	var hours []hour
	for to := w.To; to > w.From; to -= hourMs {
		h := hour{w: usage.Window{From: max(w.From, to-hourMs), To: to}}
		var found bool
		if h.peak, found = e.peak(m, h.w); found {
			hours = append(hours, h)
		}
	}
	n := len(hours)
	k := ((100-r)*(n+1) + 99) / 100
	if k > n || k < 1 {
		return Reading{}, false
	}
	slices.SortStableFunc(hours, func(a, b hour) int { return cmp.Compare(a.peak, b.peak) })
	// Only the chosen hour is read in full: its pod and median are the
	// evidence.
	rd, found := e.read(m, hours[k-1].w, 100)
	rd.Window, rd.RiskPercent, rd.Hours, rd.Rank = Span(w.Duration()), r, n, k
	return rd, found
}

// dailyPeak reads m's peak in each day of w, counted back from its end
// (the oldest day may be shorter), and returns the reading of the day at
// the nearest-rank q-th percentile of those peaks, over w: a forecast of
// the next day's peak from the days seen. Days without a sample are left
// out; false when no day has one.
func (e *evaluation) dailyPeak(m usage.Metric, w usage.Window, q int) (Reading, bool) {
	const dayMs = int64(24 * time.Hour / time.Millisecond)
	type day struct {
		w    usage.Window
		peak float64
	}
	var days []day
	for to := w.To; to > w.From; to -= dayMs {
		d := day{w: usage.Window{From: max(w.From, to-dayMs), To: to}}
		var found bool
		if d.peak, found = e.peak(m, d.w); found {
			days = append(days, d)
		}
	}
	if len(days) == 0 {
		return Reading{}, false
	}
	slices.SortStableFunc(days, func(a, b day) int { return cmp.Compare(a.peak, b.peak) })
	// Only the chosen day is read in full: its pod and median are the
	// evidence, and a median per day would cost more than the peaks.
	rd, found := e.read(m, days[max(0, int(math.Ceil(float64(q)/100*float64(len(days))))-1)].w, 100)
	rd.Window, rd.Percentile, rd.DailyPeaks = Span(w.Duration()), q, len(days)
	return rd, found
}

// peak is m's largest valid sample in w over the eligible pods, in GPUs,
// as read reads it.
func (e *evaluation) peak(m usage.Metric, w usage.Window) (float64, bool) {
	var best float64
	found := false
	for _, p := range e.eligible {
		scale := e.scale(m, p)
		for _, x := range usage.In(p.Series[m], w) {
			if v := x.V * scale; x.Valid() && (!found || v > best) {
				best, found = v, true
			}
		}
	}
	return best, found
}

// history is how much of window w holds samples of m, 0 when all of it
// does (give or take a step).
func (e *evaluation) history(m usage.Metric, w usage.Window) Span {
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
		return 0
	}
	return Span(span.Round(time.Minute))
}

// historyComplete checks that the workload has gap-free, valid samples of
// m over the last need, taking its pods together (pods come and go in
// rollouts), and that every live pod reports now.
func (e *evaluation) historyComplete(m usage.Metric, need time.Duration) (Cause, *Shortfall) {
	w := usage.WindowEnding(e.in.At, need)
	if s := e.invalid(m, w, e.in.Usage.Pods); s != nil {
		return CauseDataInvalid, s
	}
	// Every sample in w is valid (invalid said so): the pods' samples,
	// merged in time, are the workload's. A week of one pod is its own
	// merge; copying it would make garbage the size of the recording.
	merged := mergedTimes(e.in.Usage.Pods, m, w)
	step := e.stepOf(m)
	tol := usage.GapTolerance(step).Milliseconds()
	if len(merged) > 0 && merged[0].T-w.From > tol {
		return CauseDataIncomplete, &Shortfall{Kind: ShortHistory, Metric: m, Need: Span(need), Have: Span(time.Duration(w.To-merged[0].T) * time.Millisecond)}
	}
	if c := usage.Cover(merged, w, step); !c.Complete {
		return CauseDataIncomplete, &Shortfall{Kind: ShortGap, Metric: m, Need: Span(need), Gap: Span(c.MaxGap.Round(time.Second))}
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
			return CauseDataIncomplete, &Shortfall{Kind: ShortNotFresh, Metric: m, Pod: p.Name}
		}
	}
	return "", nil
}

// mergedTimes returns the samples of m in w of all pods, sorted by time.
// The samples of a lone pod with any are returned as they are.
func mergedTimes(pods []usage.Pod, m usage.Metric, w usage.Window) []usage.Sample {
	var one []usage.Sample
	n, with := 0, 0
	for _, p := range pods {
		if in := usage.In(p.Series[m], w); len(in) > 0 {
			one, n, with = in, n+len(in), with+1
		}
	}
	if with <= 1 {
		return one
	}
	merged := make([]usage.Sample, 0, n)
	for _, p := range pods {
		merged = append(merged, usage.In(p.Series[m], w)...)
	}
	slices.SortFunc(merged, func(a, b usage.Sample) int { return cmp.Compare(a.T, b.T) })
	return merged
}

// invalid finds NaN, infinite, negative or out-of-range samples of m inside w. A
// missing scrape is tolerated up to a few intervals, but a broken
// exporter's value is not a missing scrape: where a scale-back relies on a
// window, an invalid value in it blocks the scale-back (docs/design.md §10.1).
func (e *evaluation) invalid(m usage.Metric, w usage.Window, pods []usage.Pod) *Shortfall {
	var s *Shortfall
	for _, p := range pods {
		for _, x := range usage.In(p.Series[m], w) {
			if x.Valid() {
				continue
			}
			if s == nil {
				s = &Shortfall{Kind: ShortInvalidData, Metric: m, Pod: p.Name, Window: Span(w.Duration())}
			}
			s.Samples++
			if x.T > s.At {
				s.At, s.Pod = x.T, p.Name
			}
		}
	}
	return s
}

// blocker is why a scale-back may not happen now.
type blocker struct {
	cause     Cause
	shortfall *Shortfall
}

// scaleBacks applies every reactive scale-back rule, recording the
// readings of those that allow one; it returns why not, when one does not.
func (e *evaluation) scaleBacks(ev *Evidence) *blocker {
	r := e.in.Rules.Reactive
	if r == nil {
		return nil
	}
	for _, m := range usage.Metrics {
		mr := r.Metrics[m]
		if mr == nil || mr.ScaleBack == nil {
			continue
		}
		sb := mr.ScaleBack
		w := usage.WindowEnding(e.in.At, sb.Window)
		if s := e.invalid(m, w, e.in.Usage.Pods); s != nil {
			ev.ScaleBacks = nil
			return &blocker{CauseDataInvalid, s}
		}
		for _, p := range e.live {
			if c := usage.Cover(p.Series[m], w, e.stepOf(m)); !c.Complete {
				ev.ScaleBacks = nil
				return &blocker{CauseDataIncomplete, &Shortfall{Kind: ShortFewSamples, Metric: m, Pod: p.Name,
					Samples: c.Samples, Expected: c.Expected, Window: Span(sb.Window)}}
			}
		}
		rd, found := e.read(m, w, 100)
		if !found {
			ev.ScaleBacks = nil
			return &blocker{CauseDataIncomplete, &Shortfall{Kind: ShortNoSamples, Metric: m, Window: Span(sb.Window)}}
		}
		rd.ThresholdPercent, rd.HeadroomPercent = sb.ThresholdPercent, sb.HeadroomPercent
		rd.Target = rd.Value * (1 + float64(sb.HeadroomPercent)/100)
		if rd.Percent >= float64(sb.ThresholdPercent) {
			ev.ScaleBacks = nil
			ev.Blocker = &rd
			return &blocker{cause: CauseFits}
		}
		ev.ScaleBacks = append(ev.ScaleBacks, rd)
	}
	return nil
}

// finish bounds, rounds and filters the proposal into the decision.
func (e *evaluation) finish(d Decision, act Action) Decision {
	st := e.in.Rules.Strategy
	ev := &d.Evidence
	target := ev.Proposal.Target
	adjust := func(k AdjustmentKind, to, limit, pct float64) {
		ev.Adjustments = append(ev.Adjustments, Adjustment{Kind: k, From: target, To: to, Limit: limit, Percent: pct})
		target = to
	}
	if act == Upsize {
		if limit := e.a * e.in.Rules.maxStep(); target > limit && target > st.Floor {
			adjust(AdjustStepLimit, max(limit, st.Floor), limit, e.in.Rules.maxStep()*100)
		}
		if target > st.Ceiling {
			adjust(AdjustCeiling, st.Ceiling, st.Ceiling, 0)
		}
		if target < st.Floor {
			// An allocation below the floor moves into bounds, however
			// small its step.
			adjust(AdjustFloor, st.Floor, st.Floor, 0)
		}
		if target <= e.a {
			return d.none(CauseAtBound, nil)
		}
	} else {
		if target > st.Ceiling {
			// Clamping would cut below measured usage: nothing safe to
			// shrink to.
			return d.none(CauseAtBound, nil)
		}
		if target < st.Floor {
			adjust(AdjustFloor, st.Floor, st.Floor, 0)
		}
		if target >= e.a {
			return d.none(CauseAtBound, nil)
		}
	}
	rec, ok := e.quantize(act, target)
	if !ok {
		return d.none(CauseBelowMinChange, nil)
	}
	minChange := max(kai.Step, e.a*float64(st.MinChangePercent)/100)
	if kai.Above(minChange, math.Abs(rec.GPUs-e.a)) {
		ev.Adjustments = append(ev.Adjustments, Adjustment{Kind: AdjustMinChange, From: e.a, To: rec.GPUs, Percent: float64(st.MinChangePercent)})
		return d.none(CauseBelowMinChange, nil)
	}
	if rec.Form == Fraction && !kai.Same(rec.GPUs, target) {
		ev.Adjustments = append(ev.Adjustments, Adjustment{Kind: AdjustGrid, From: target, To: rec.GPUs})
	}
	if rec.Form != e.in.Current.Form {
		ev.Adjustments = append(ev.Adjustments, Adjustment{Kind: AdjustForm, From: e.a, To: rec.GPUs, FromForm: e.in.Current.Form, ToForm: rec.Form})
	}
	d.Action, d.Recommended, d.Urgent, d.Rule = act, rec, ev.Proposal.Urgent, ev.Proposal.String()
	return d
}

// quantize turns a target into a request KAI accepts: a fraction on its
// grid, or whole GPUs. Rounding is upward, so a recommendation never falls
// below what the rule asked for, except where a bound (the step limit, the
// ceiling) forbids it.
func (e *evaluation) quantize(act Action, target float64) (Allocation, bool) {
	st := e.in.Rules.Strategy
	limit := st.Ceiling
	if act == Upsize {
		limit = min(limit, max(e.a*e.in.Rules.maxStep(), st.Floor))
	}
	if e.in.Current.Form == GPUMemory {
		// Whole MiB, rounded up; one GPU at most, which is what
		// gpu-memory can ask for.
		card := float64(st.GPUMemoryMiB)
		mib := min(int64(math.Ceil(target*card-1e-9)), int64(math.Floor(limit*card+1e-9)), st.GPUMemoryMiB)
		if mib < 1 {
			return Allocation{}, false
		}
		return Allocation{Form: GPUMemory, GPUs: float64(mib) / card, MiB: mib}, mib != e.in.Current.MiB
	}
	wholeOnly := e.in.Current.Form == WholeGPUs && !st.MoveToKAI
	if wholeOnly || target > kai.MaxFraction {
		n := min(kai.CeilGPUs(target), kai.FloorGPUs(limit))
		if n >= 1 {
			alloc := Allocation{Form: WholeGPUs, GPUs: n}
			return alloc, n != e.a || e.in.Current.Form != WholeGPUs
		}
		if wholeOnly {
			return Allocation{}, false
		}
		// A whole GPU is out of bounds: the largest fraction is next best.
		return Allocation{Form: Fraction, GPUs: min(kai.MaxFraction, kai.FloorFraction(limit))}, true
	}
	f := min(kai.CeilFraction(target), kai.FloorFraction(limit))
	return Allocation{Form: Fraction, GPUs: kai.ClampFraction(f)}, true
}
