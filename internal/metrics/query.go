package metrics

import (
	"cmp"
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
	// tolerance is how long two series of one pod, container and device
	// may overlap before they count as two readings of the same thing (a
	// restarted container's old series ends with a scrape or two beside
	// the new one's), in ms.
	tolerance int64
}

// podSeries is one series of a pod.
type podSeries struct {
	container    string
	hasContainer bool
	// device is the value of the mapping's device label, "" without one.
	device    string
	hasDevice bool
	exported  uint8
	// series is the index of the series in its set, for its labels.
	series  int
	samples []usage.Sample
}

// podIndex returns the index of a mapping's metric, building it on first
// use. A counter's samples are its rate (Mapping.Counter).
func (set *Set) podIndex(m usage.Mapping) *podIndex {
	tolerance := usage.GapTolerance(set.step(m.Metric)).Milliseconds()
	set.mu.Lock()
	defer set.mu.Unlock()
	if x, ok := set.indexes[m]; ok {
		return x
	}
	x := &podIndex{pods: make(map[objKey][]podSeries), byNS: make(map[string][]string), tolerance: tolerance}
	for _, i := range set.byName[m.Metric] {
		s := set.series[i]
		ns, e1, ok1 := label(s.Labels, m.NamespaceLabel)
		pod, e2, ok2 := label(s.Labels, m.PodLabel)
		if !ok1 || !ok2 {
			continue
		}
		c, e3, hasC := label(s.Labels, m.ContainerLabel)
		d, _, hasD := label(s.Labels, m.DeviceLabel)
		ps := podSeries{container: c, hasContainer: hasC, device: d, hasDevice: hasD, series: i, samples: s.Samples}
		if m.Counter() {
			ps.samples = rate(s.Samples)
		}
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

// rate turns a counter's samples into its rate per second, each at the
// later sample of the pair it comes from. A drop is a reset, counted from
// zero as Prometheus' rate() counts it. A pair with an invalid value
// (NaN, a staleness marker; negative; infinite) gives no rate, so that a
// broken counter reads as missing data, never as low usage.
func rate(s []usage.Sample) []usage.Sample {
	if len(s) < 2 {
		return nil
	}
	out := make([]usage.Sample, 0, len(s)-1)
	for i := 1; i < len(s); i++ {
		a, b := s[i-1], s[i]
		if !a.Finite() || !b.Finite() {
			continue
		}
		d := b.V - a.V
		if d < 0 {
			d = b.V
		}
		out = append(out, usage.Sample{T: b.T, V: d * 1000 / float64(b.T-a.T)})
	}
	return out
}

// reading is what one pod's series say of one metric over a window.
type reading struct {
	// devices holds each device's samples, its containers summed; a
	// mapping without a device label has one, "".
	devices []deviceSamples
	// byDevice is true when the series named their device.
	byDevice bool
	exported uint8
	// mixed says why two series were not added up, "" when none were.
	mixed string
}

// deviceSamples is the usage of one device.
type deviceSamples struct {
	device  string
	samples []usage.Sample
}

// read returns what a pod's series of the selected containers (all when
// containers is empty) say in w, per device. Series of one container on
// one device that overlap in time are two readings of the same thing (a
// second cluster or Prometheus replica in one store, a device label the
// mapping does not know): they are not added up, the larger counts, and
// mixed says which labels tell them apart.
func (x *podIndex) read(set *Set, key objKey, w usage.Window, containers []string) reading {
	type part struct {
		s  *podSeries
		in []usage.Sample
	}
	var parts []part
	var r reading
	all := x.pods[key]
	for i := range all {
		s := &all[i]
		if len(containers) > 0 && (!s.hasContainer || !slices.Contains(containers, s.container)) {
			continue
		}
		in := usage.In(s.samples, w)
		if len(in) == 0 {
			continue
		}
		parts = append(parts, part{s, in})
		r.exported |= s.exported
		r.byDevice = r.byDevice || s.hasDevice
	}
	if len(containers) == 0 {
		r.exported &^= exportedContainer
	}
	slices.SortStableFunc(parts, func(a, b part) int {
		return cmp.Or(strings.Compare(a.s.device, b.s.device), strings.Compare(a.s.container, b.s.container))
	})
	var mixed []string
	for i := 0; i < len(parts); {
		d := parts[i].s.device
		var onDevice [][]usage.Sample
		for i < len(parts) && parts[i].s.device == d {
			c := parts[i].s.container
			j := i
			for j < len(parts) && parts[j].s.device == d && parts[j].s.container == c {
				j++
			}
			same := make([][]usage.Sample, 0, j-i)
			for k := i; k < j; k++ {
				same = append(same, parts[k].in)
				for l := i; l < k; l++ {
					if overlap(parts[l].in, parts[k].in) > x.tolerance {
						mixed = append(mixed, set.differ(parts[l].s.series, parts[k].s.series)...)
					}
				}
			}
			onDevice = append(onDevice, combine(same, math.Max))
			i = j
		}
		r.devices = append(r.devices, deviceSamples{device: d, samples: sum(onDevice)})
	}
	if len(mixed) > 0 {
		r.mixed = strings.Join(slices.Compact(slices.Sorted(slices.Values(mixed))), "; ")
	}
	return r
}

// busiest returns, at each time, the largest of the devices' values.
func (r reading) busiest() []usage.Sample {
	parts := make([][]usage.Sample, len(r.devices))
	for i, d := range r.devices {
		parts[i] = d.samples
	}
	return combine(parts, math.Max)
}

// overlap is how long two series both report, in ms; negative when one
// ends before the other starts.
func overlap(a, b []usage.Sample) int64 {
	return min(a[len(a)-1].T, b[len(b)-1].T) - max(a[0].T, b[0].T)
}

// differ names the labels in which two series of the set differ, each as
// name=value|value.
func (set *Set) differ(a, b int) []string {
	la, lb := set.series[a].Labels, set.series[b].Labels
	var out []string
	for _, l := range la {
		if v := LabelValue(lb, l.Name); v != l.Value {
			out = append(out, fmt.Sprintf("%s (%q, %q)", l.Name, l.Value, v))
		}
	}
	for _, l := range lb {
		if LabelValue(la, l.Name) == "" {
			out = append(out, fmt.Sprintf("%s (%q, %q)", l.Name, "", l.Value))
		}
	}
	return out
}

// sum adds up series sample by sample, aligned on identical timestamps: a
// timestamp only some series have sums only those. An invalid value
// anywhere (NaN, negative, infinite) makes that timestamp's sum NaN, so a
// broken exporter reads as missing data and never as low usage.
func sum(parts [][]usage.Sample) []usage.Sample {
	return combine(parts, func(a, b float64) float64 { return a + b })
}

// combine folds series sample by sample with op, aligned on identical
// timestamps: a timestamp only some series have folds only those. An
// invalid value anywhere (NaN, negative, infinite) makes that timestamp's
// result NaN, so a broken exporter reads as missing data and never as low
// usage.
//
// One part is its own result, returned as is rather than copied (most
// pods run one container on one device): it is the set's memory, which no
// caller can reach to change (NewSet), and its capacity is cut to its
// length, so that an append to a result copies instead of writing into
// the set.
func combine(parts [][]usage.Sample, op func(a, b float64) float64) []usage.Sample {
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
		first := true
		for i, p := range parts {
			if next[i] < len(p) && p[next[i]].T == t {
				switch x := p[next[i]]; {
				case !x.Finite():
					// A part a broken exporter sent (NaN, negative,
					// infinite) must not read as lower usage.
					v = math.NaN()
				case first:
					v = x.V
				default:
					v = op(v, x.V)
				}
				first = false
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

// usageOf returns a pod's value of the metric in w: its busiest device's
// (the only one's without a device label), with the device's ratio to its
// divisors first when the mapping has some; whether it was read by device;
// which of its labels came from exported_*; and why series were not added
// up, if any were not.
func (m *queried) usageOf(set *Set, key objKey, w usage.Window, containers []string) ([]usage.Sample, bool, uint8, string) {
	r := m.index.read(set, key, w, containers)
	if len(m.divisors) == 0 || len(r.devices) == 0 {
		return r.busiest(), r.byDevice, r.exported, r.mixed
	}
	var ds []reading
	mixed := []string{r.mixed}
	for _, x := range m.divisors {
		d := x.read(set, key, w, containers)
		ds = append(ds, d)
		mixed = append(mixed, d.mixed)
	}
	for i, dev := range r.devices {
		var parts [][]usage.Sample
		for _, d := range ds {
			for _, dd := range d.devices {
				if dd.device == dev.device {
					parts = append(parts, dd.samples)
				}
			}
		}
		r.devices[i].samples = ratio(dev.samples, sum(parts))
	}
	return r.busiest(), r.byDevice, r.exported, strings.Join(slices.DeleteFunc(mixed, func(s string) bool { return s == "" }), "; ")
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
	if q.ClusterLabel != "" {
		return set.usageByCluster(ctx, q)
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
		if err := set.answerNamespace(ctx, &res, ns, refs[ns], q, metrics, w, tolerance); err != nil {
			return usage.Result{}, err
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

// answerNamespace adds to res the usage of the queried workloads of one
// namespace, refs.
func (set *Set) answerNamespace(ctx context.Context, res *usage.Result, ns string, refs []usage.Ref, q usage.Query, metrics []*queried, w usage.Window, tolerance int64) error {
	v := set.namespaceAt(ns, refs, q.Components, metrics, w, tolerance)
	res.Warnings = append(res.Warnings, v.warnings...)
	for _, ref := range refs {
		if u := v.unattributed[ref]; len(u) > 0 {
			if res.Unattributed == nil {
				res.Unattributed = make(map[usage.Ref][]string)
			}
			res.Unattributed[ref] = u
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("usage from %s: %w", set.name, err)
		}
		var pods []usage.Pod
		mixed := v.mixed[ref]
		if mixed != "" {
			res.Warnings = append(res.Warnings, ref.String()+": "+mixed)
		}
		for _, name := range v.owned[ref] {
			p, ok, why := set.pod(ns, name, v.live[name], metrics, w, q.Containers)
			if ok {
				pods = append(pods, p)
			}
			if why != "" && mixed == "" {
				mixed = why
				res.Warnings = append(res.Warnings, ref.String()+": "+why)
			}
		}
		if len(pods) > 0 {
			res.Workloads[ref] = usage.Workload{LiveKnown: v.liveKnown, Pods: pods, Mixed: mixed}
		}
	}
	return nil
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
	// mixed says, by workload, why the owner series of one of its pods
	// mix two objects of one name.
	mixed map[usage.Ref]string
}

// namespaceAt attributes the pods of a namespace, those with usage series
// and the live ones kube-state-metrics knows, to workloads.
func (set *Set) namespaceAt(ns string, refs []usage.Ref, components map[usage.Ref]string, metrics []*queried, w usage.Window, tolerance int64) namespaceView {
	at := w.To
	// Sized from the start: grown a pod at a time, the maps of a
	// namespace of 10,000 pods were rehashed a dozen times.
	v := namespaceView{live: make(map[string]bool, len(set.ksm.podNames[ns])), owned: make(map[usage.Ref][]string, len(refs)),
		unattributed: make(map[usage.Ref][]string), mixed: make(map[usage.Ref]string)}

	// The pattern competes with every Deployment and Rollout known at the
	// time, not only the queried ones, so that the longest name can win;
	// but a Deployment a queried InferenceService's predictor, or a
	// queried Dynamo service, runs as is that workload, no rival unless
	// asked for itself.
	var candidates []usage.Ref
	queried := newRefIndex(refs, components)
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
	index := newRefIndex(slices.Compact(candidates), components)

	pods := make(map[string]bool, len(set.ksm.podNames[ns]))
	for _, m := range metrics {
		for _, pod := range m.index.byNS[ns] {
			pods[pod] = true
		}
	}
	for _, pod := range set.ksm.podNames[ns] {
		if key := (objKey{ns, pod}); live(set.ksm.pods[key], at, tolerance) && !set.ksm.hasEnded(key, at) {
			v.live[pod] = true
			v.liveKnown = true
			pods[pod] = true
		}
	}

	for _, pod := range slices.Sorted(maps.Keys(pods)) {
		a := set.ksm.owner(ns, pod, at, index)
		if len(a.rivals) > 0 && (v.live[pod] || hasData(metrics, objKey{ns, pod}, w)) {
			warning := a.warning(index, ns, pod)
			v.warnings = append(v.warnings, warning)
			if !a.ok {
				for _, r := range a.rivals {
					v.unattributed[r] = append(v.unattributed[r], warning)
				}
			}
		}
		if a.ok {
			v.owned[a.ref] = append(v.owned[a.ref], pod)
			if why := set.ownersMixed(ns, pod, w, tolerance); why != "" && v.mixed[a.ref] == "" {
				v.mixed[a.ref] = fmt.Sprintf("pod %s/%s: %s: two objects of one name, as two clusters in one store have, so its pods may be another cluster's; nothing changes on them (map the clusters, or narrow the query with --cluster-label)", ns, pod, why)
			}
		}
	}
	return v
}

// predictorOfAny reports whether Deployment d can run the predictor of an
// InferenceService among refs.
func predictorOfAny(refs *refIndex, d usage.Ref) bool {
	for _, r := range refs.near(d.Name) {
		if d.Kind == kindDeployment && (r.Kind == kindISVC && matchPredictorDeployment(refs.service(r), d.Name) || r.Kind == kindDGD && r.Name == d.Name) {
			return true
		}
	}
	return false
}

// pod returns the usage of one pod in w, and false when the pod has none
// and is not live either; mixed says, as a sentence, which of its series
// were not added up and why ("" when none).
func (set *Set) pod(ns, name string, live bool, metrics []*queried, w usage.Window, containers []string) (p usage.Pod, ok bool, mixed string) {
	key := objKey{ns, name}
	p = usage.Pod{Name: name, Live: live, Start: set.ksm.start(key, w.To), Allocation: set.ksm.fraction(key, w.To),
		Series: make(map[usage.Metric][]usage.Sample)}
	for _, m := range metrics {
		s, byDevice, exported, why := m.usageOf(set, key, w, containers)
		if len(s) > 0 {
			p.Series[m.metric] = s
			m.exported |= exported
			if byDevice {
				if p.ByDevice == nil {
					p.ByDevice = make(map[usage.Metric]bool)
				}
				p.ByDevice[m.metric] = true
			}
		}
		if why != "" && mixed == "" {
			mixed = fmt.Sprintf("pod %s/%s has series of %s (%s) at the same time that differ in %s, which the query does not tell apart: they are not added up, and nothing changes on them (narrow the query to one of them, e.g. with --cluster-label)",
				ns, name, m.mapping.Metric, m.metric, why)
		}
	}
	return p, len(p.Series) > 0 || live, mixed
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
				n += countIntervals(counts, p.Series[m.metric])
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
