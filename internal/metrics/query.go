package metrics

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Which labels of a usage series came from exported_* (see label).
const (
	exportedNamespace uint8 = 1 << iota
	exportedPod
	exportedContainer
)

// podIndex holds the series of one metric by namespace and pod, as one
// mapping reads them.
type podIndex struct {
	pods map[objKey][]podSeries
	// byNS lists the pods of each namespace, sorted.
	byNS map[string][]string
}

// podSeries is one series of a pod.
type podSeries struct {
	container    string
	hasContainer bool
	exported     uint8
	samples      []usage.Sample
}

// podIndex returns the index of a mapping's metric, building it on first
// use.
func (set *Set) podIndex(m usage.Mapping) *podIndex {
	set.mu.Lock()
	defer set.mu.Unlock()
	if x, ok := set.indexes[m]; ok {
		return x
	}
	x := &podIndex{pods: make(map[objKey][]podSeries), byNS: make(map[string][]string)}
	for _, i := range set.byName[m.Metric] {
		s := set.series[i]
		ns, e1, ok1 := label(s.Labels, m.NamespaceLabel)
		pod, e2, ok2 := label(s.Labels, m.PodLabel)
		if !ok1 || !ok2 {
			continue
		}
		c, e3, hasC := label(s.Labels, m.ContainerLabel)
		ps := podSeries{container: c, hasContainer: hasC, samples: s.Samples}
		for _, e := range []struct {
			used bool
			bit  uint8
		}{{e1, exportedNamespace}, {e2, exportedPod}, {e3, exportedContainer}} {
			if e.used {
				ps.exported |= e.bit
			}
		}
		key := objKey{ns, pod}
		if _, seen := x.pods[key]; !seen {
			x.byNS[ns] = append(x.byNS[ns], pod)
		}
		x.pods[key] = append(x.pods[key], ps)
	}
	for _, pods := range x.byNS {
		slices.Sort(pods)
	}
	set.indexes[m] = x
	return x
}

// usageOf returns a pod's samples in w, summed over its series of the
// selected containers (all when containers is empty), and which labels of
// the series it used came from exported_*.
func (x *podIndex) usageOf(key objKey, w usage.Window, containers []string) ([]usage.Sample, uint8) {
	var parts [][]usage.Sample
	var exported uint8
	for _, s := range x.pods[key] {
		if len(containers) > 0 && (!s.hasContainer || !slices.Contains(containers, s.container)) {
			continue
		}
		in := usage.In(s.samples, w)
		if len(in) == 0 {
			continue
		}
		parts = append(parts, in)
		exported |= s.exported
	}
	if len(containers) == 0 {
		exported &^= exportedContainer
	}
	return sum(parts), exported
}

// sum adds up series sample by sample, aligned on identical timestamps: a
// timestamp only some series have sums only those. An invalid value
// anywhere (NaN, negative, infinite) makes that timestamp's sum NaN, so a
// broken exporter reads as missing data and never as low usage.
//
// One part is its own sum, returned as is rather than copied (most pods
// run one container): it is the set's memory, which no caller can reach
// to change (NewSet), and its capacity is cut to its length, so that an
// append to a result copies instead of writing into the set.
func sum(parts [][]usage.Sample) []usage.Sample {
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return slices.Clip(parts[0])
	}
	n := 0
	for _, p := range parts {
		n = max(n, len(p))
	}
	out := make([]usage.Sample, 0, n)
	next := make([]int, len(parts))
	for {
		var t int64
		found := false
		for i, p := range parts {
			if next[i] < len(p) && (!found || p[next[i]].T < t) {
				t, found = p[next[i]].T, true
			}
		}
		if !found {
			return out
		}
		var v float64
		for i, p := range parts {
			if next[i] < len(p) && p[next[i]].T == t {
				if x := p[next[i]]; x.Finite() {
					v += x.V
				} else {
					// A part a broken exporter sent (NaN, negative,
					// infinite) must not read as lower usage.
					v = math.NaN()
				}
				next[i]++
			}
		}
		out = append(out, usage.Sample{T: t, V: v})
	}
}

// queried is one metric of a query that the file has.
type queried struct {
	metric  usage.Metric
	mapping usage.Mapping
	index   *podIndex
	// divisors index the series of the mapping's divisor metrics.
	divisors []*podIndex
	exported uint8
}

// usageOf returns a pod's value of the metric in w, and which of its
// labels came from exported_*.
func (m *queried) usageOf(key objKey, w usage.Window, containers []string) ([]usage.Sample, uint8) {
	s, exported := m.index.usageOf(key, w, containers)
	if len(m.divisors) == 0 || len(s) == 0 {
		return s, exported
	}
	var parts [][]usage.Sample
	for _, x := range m.divisors {
		d, _ := x.usageOf(key, w, containers)
		if len(d) > 0 {
			parts = append(parts, d)
		}
	}
	return ratio(s, sum(parts)), exported
}

// ratio divides n by d in percent, sample by sample, on identical
// timestamps (one scrape writes both). A sample without its divisor is
// missing; a divisor of zero or less makes it NaN: invalid data, never
// low usage.
func ratio(n, d []usage.Sample) []usage.Sample {
	out := make([]usage.Sample, 0, len(n))
	j := 0
	for _, x := range n {
		for j < len(d) && d[j].T < x.T {
			j++
		}
		if j == len(d) || d[j].T != x.T {
			continue
		}
		v := math.NaN()
		if y := d[j]; x.Finite() && y.Finite() && y.V > 0 {
			v = 100 * x.V / y.V
		}
		out = append(out, usage.Sample{T: x.T, V: v})
	}
	return out
}

// Usage answers q from the set alone. It never returns a sample after
// q.At, so that a backtest replaying a recording sees only the past. The
// answer's samples may be the set's own, shared by every answer: they are
// read, never changed.
func (set *Set) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	if err := CheckQuery(q); err != nil {
		return usage.Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return usage.Result{}, fmt.Errorf("usage from %s: %w", set.name, err)
	}
	w := usage.WindowEnding(q.At, q.Lookback)
	res := usage.Result{Workloads: make(map[usage.Ref]usage.Workload)}

	var metrics []*queried
	for _, m := range metricOrder(q.Metrics) {
		mp := q.Metrics[m]
		missing := ""
		for _, name := range append([]string{mp.Metric}, mp.Divisors()...) {
			if len(set.byName[name]) == 0 && missing == "" {
				missing = name
			}
		}
		if missing != "" {
			res.Warnings = append(res.Warnings, fmt.Sprintf("metric %s (%s) is not in %s", missing, m, set.name))
			continue
		}
		qd := &queried{metric: m, mapping: mp, index: set.podIndex(mp)}
		for _, name := range mp.Divisors() {
			d := mp
			d.Metric, d.Divisor = name, ""
			qd.divisors = append(qd.divisors, set.podIndex(d))
		}
		metrics = append(metrics, qd)
	}
	// Liveness is judged against kube-state-metrics' own scrape interval.
	tolerance := usage.GapTolerance(set.step(podOwnerMetric)).Milliseconds()

	refs := make(map[string][]usage.Ref)
	seen := make(map[usage.Ref]bool, len(q.Workloads))
	for _, ref := range q.Workloads {
		if !seen[ref] {
			seen[ref] = true
			refs[ref.Namespace] = append(refs[ref.Namespace], ref)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(refs)) {
		v := set.namespaceAt(ns, refs[ns], metrics, w, tolerance)
		res.Warnings = append(res.Warnings, v.warnings...)
		for _, ref := range refs[ns] {
			if u := v.unattributed[ref]; len(u) > 0 {
				if res.Unattributed == nil {
					res.Unattributed = make(map[usage.Ref][]string)
				}
				res.Unattributed[ref] = u
			}
			if err := ctx.Err(); err != nil {
				return usage.Result{}, fmt.Errorf("usage from %s: %w", set.name, err)
			}
			var pods []usage.Pod
			for _, name := range v.owned[ref] {
				if p, ok := set.pod(ns, name, v.live[name], metrics, w, q.Containers); ok {
					pods = append(pods, p)
				}
			}
			if len(pods) > 0 {
				res.Workloads[ref] = usage.Workload{LiveKnown: v.liveKnown, Pods: pods}
			}
		}
	}

	set.setSteps(res.Workloads, metrics)
	for _, m := range metrics {
		if m.exported != 0 {
			res.Warnings = append(res.Warnings, exportedWarning(m))
		}
	}
	if warning := set.ksm.exportedWarning(); warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	return res, nil
}

// namespaceView is what a query sees of one namespace at its evaluation
// time.
type namespaceView struct {
	// live holds the pods that kube-state-metrics reports live; liveKnown
	// is true when it reports any, that is when it covers the namespace.
	live      map[string]bool
	liveKnown bool
	// owned lists the pods of each workload, sorted.
	owned    map[usage.Ref][]string
	warnings []string
	// unattributed are the warnings of the pods that count for no
	// workload, by each workload they may belong to.
	unattributed map[usage.Ref][]string
}

// namespaceAt attributes the pods of a namespace, those with usage series
// and the live ones kube-state-metrics knows, to workloads.
func (set *Set) namespaceAt(ns string, refs []usage.Ref, metrics []*queried, w usage.Window, tolerance int64) namespaceView {
	at := w.To
	v := namespaceView{live: make(map[string]bool), owned: make(map[usage.Ref][]string), unattributed: make(map[usage.Ref][]string)}

	// The pattern competes with every Deployment and Rollout known at the
	// time, not only the queried ones, so that the longest name can win;
	// but a Deployment a queried InferenceService's predictor, or a
	// queried Dynamo service, runs as is that workload, no rival unless
	// asked for itself.
	var candidates []usage.Ref
	queried := newRefIndex(refs)
	for _, ref := range set.ksm.replicaSetOwnersAt(ns, at) {
		if !predictorOfAny(queried, ref) {
			candidates = append(candidates, ref)
		}
	}
	for _, ref := range refs {
		if named(ref.Kind) {
			candidates = append(candidates, ref)
		}
	}
	slices.SortFunc(candidates, compareRefs)
	index := newRefIndex(slices.Compact(candidates))

	pods := make(map[string]bool)
	for _, m := range metrics {
		for _, pod := range m.index.byNS[ns] {
			pods[pod] = true
		}
	}
	for _, pod := range set.ksm.podNames[ns] {
		if live(set.ksm.pods[objKey{ns, pod}], at, tolerance) {
			v.live[pod] = true
			v.liveKnown = true
			pods[pod] = true
		}
	}

	for _, pod := range slices.Sorted(maps.Keys(pods)) {
		a := set.ksm.owner(ns, pod, at, index)
		if len(a.rivals) > 0 && (v.live[pod] || hasData(metrics, objKey{ns, pod}, w)) {
			warning := a.warning(ns, pod)
			v.warnings = append(v.warnings, warning)
			if !a.ok {
				for _, r := range a.rivals {
					v.unattributed[r] = append(v.unattributed[r], warning)
				}
			}
		}
		if a.ok {
			v.owned[a.ref] = append(v.owned[a.ref], pod)
		}
	}
	return v
}

// predictorOfAny reports whether Deployment d can run the predictor of an
// InferenceService among refs.
func predictorOfAny(refs *refIndex, d usage.Ref) bool {
	for _, r := range refs.near(d.Name) {
		if d.Kind == kindDeployment && (r.Kind == kindISVC && matchISVCDeployment(r.Name, d.Name) || r.Kind == kindDGD && r.Name == d.Name) {
			return true
		}
	}
	return false
}

// pod returns the usage of one pod in w, and false when the pod has none
// and is not live either.
func (set *Set) pod(ns, name string, live bool, metrics []*queried, w usage.Window, containers []string) (usage.Pod, bool) {
	key := objKey{ns, name}
	p := usage.Pod{Name: name, Live: live, Start: set.ksm.start(key, w.To), Allocation: set.ksm.fraction(key, w.To),
		Series: make(map[usage.Metric][]usage.Sample)}
	for _, m := range metrics {
		s, exported := m.usageOf(key, w, containers)
		if len(s) > 0 {
			p.Series[m.metric] = s
			m.exported |= exported
		}
	}
	return p, len(p.Series) > 0 || live
}

// hasData reports whether a pod has a sample of any metric in w.
func hasData(metrics []*queried, key objKey, w usage.Window) bool {
	for _, m := range metrics {
		for _, s := range m.index.pods[key] {
			if len(usage.In(s.samples, w)) > 0 {
				return true
			}
		}
	}
	return false
}

func exportedWarning(m *queried) string {
	var from, to []string
	for _, l := range []struct {
		bit  uint8
		name string
	}{{exportedNamespace, m.mapping.NamespaceLabel}, {exportedPod, m.mapping.PodLabel}, {exportedContainer, m.mapping.ContainerLabel}} {
		if m.exported&l.bit != 0 {
			from = append(from, ExportedPrefix+l.name)
			to = append(to, l.name)
		}
	}
	return fmt.Sprintf("metric %s (%s): took %s for %s (the scrape renamed the exporter's labels: a ServiceMonitor without honorLabels: true)",
		m.mapping.Metric, m.metric, strings.Join(from, ", "), strings.Join(to, ", "))
}

// metricOrder lists the metrics of a query in a fixed order: the known
// ones in usage.Metrics order, then any other by name.
func metricOrder(ms map[usage.Metric]usage.Mapping) []usage.Metric {
	var out []usage.Metric
	for _, m := range usage.Metrics {
		if _, ok := ms[m]; ok {
			out = append(out, m)
		}
	}
	var rest []usage.Metric
	for m := range ms {
		if !slices.Contains(usage.Metrics[:], m) {
			rest = append(rest, m)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// CheckQuery rejects a query that cannot be answered whatever the data.
func CheckQuery(q usage.Query) error {
	switch {
	case q.At.IsZero():
		return fmt.Errorf("%w: no evaluation time", ErrBadQuery)
	case q.Lookback <= 0:
		return fmt.Errorf("%w: lookback %s is not positive", ErrBadQuery, q.Lookback)
	case len(q.Metrics) == 0:
		return fmt.Errorf("%w: no metric asked for", ErrBadQuery)
	}
	for _, m := range metricOrder(q.Metrics) {
		mp := q.Metrics[m]
		if mp.Metric == "" || mp.NamespaceLabel == "" || mp.PodLabel == "" {
			return fmt.Errorf("%w: metric %s: the mapping needs a series name, a namespace label and a pod label", ErrBadQuery, m)
		}
	}
	return nil
}

// setSteps gives every answered workload each metric's sampling interval,
// inferred from the samples the query returns (so from the window, never
// from after the evaluation time), and as Step the longest of them: the
// one that judges liveness most leniently, so that a pod counts as running,
// and must show complete data, for as long as any metric could still
// report it. Too few samples to tell fall back to the whole set.
func (set *Set) setSteps(ws map[usage.Ref]usage.Workload, metrics []*queried) {
	steps := make(map[usage.Metric]time.Duration, len(metrics))
	var longest time.Duration
	for _, m := range metrics {
		counts := make(map[int64]int)
		n := 0
		for _, w := range ws {
			for _, p := range w.Pods {
				s := p.Series[m.metric]
				for j := 1; j < len(s); j++ {
					counts[s[j].T-s[j-1].T]++
					n++
				}
			}
		}
		step := medianInterval(counts, n)
		if n < minIntervals {
			step = set.step(m.mapping.Metric)
		}
		steps[m.metric] = step
		longest = max(longest, step)
	}
	if longest == 0 {
		longest = defaultStep
	}
	for ref, w := range ws {
		w.Step, w.Steps = longest, steps
		ws[ref] = w
	}
}

// minIntervals is how many intervals a query's own samples need for their
// median to be trusted as the scrape interval.
const minIntervals = 10
