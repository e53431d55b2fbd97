package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The kube-state-metrics series that say which pods exist, who owns them
// and since when.
const (
	podOwnerMetric        = "kube_pod_owner"
	replicaSetOwnerMetric = "kube_replicaset_owner"
	podStartMetric        = "kube_pod_start_time"
	// podAnnotationsMetric carries the pod annotations kube-state-metrics
	// is allowed to export (--metric-annotations-allowlist), as
	// annotation_<name> labels.
	podAnnotationsMetric = "kube_pod_annotations"
	// fractionLabel is KAI's gpu-fraction annotation on it.
	fractionLabel = "annotation_gpu_fraction"
)

// KubeStateMetrics returns the kube-state-metrics series attribution
// reads, all labelled by "namespace": a source must read them, whatever
// the metrics asked for, to attribute pods to workloads.
func KubeStateMetrics() []string {
	return []string{podOwnerMetric, replicaSetOwnerMetric, podStartMetric, podAnnotationsMetric}
}

// noOwner is what kube-state-metrics writes as the owner of an orphan.
const noOwner = "<none>"

// objKey names a namespaced object.
type objKey struct {
	namespace, name string
}

// ownerSeries is one kube_*_owner series: while it has samples, its object
// is owned by kind/name.
type ownerSeries struct {
	kind, name string
	controller bool
	samples    []usage.Sample
}

// ksm indexes the kube-state-metrics series of a set.
type ksm struct {
	pods        map[objKey][]ownerSeries
	replicaSets map[objKey][]ownerSeries
	starts      map[objKey][][]usage.Sample
	// fractions holds, per pod, its gpu-fraction annotations and when
	// they were reported.
	fractions map[objKey][]fractionSeries
	// podNames lists, per namespace, the pods with a kube_pod_owner series.
	podNames map[string][]string
	// deploymentOwners holds, per namespace, the kube_replicaset_owner
	// series that name a Deployment.
	deploymentOwners map[string][]ownerSeries
	// exported names the metrics whose labels came from exported_*.
	exported []string
}

func (set *Set) buildKSM() *ksm {
	k := &ksm{
		pods:             make(map[objKey][]ownerSeries),
		replicaSets:      make(map[objKey][]ownerSeries),
		starts:           make(map[objKey][][]usage.Sample),
		fractions:        make(map[objKey][]fractionSeries),
		podNames:         make(map[string][]string),
		deploymentOwners: make(map[string][]ownerSeries),
	}
	owners := func(metric, objLabel string, into map[objKey][]ownerSeries) {
		exported := false
		for _, i := range set.byName[metric] {
			s := set.series[i]
			ns, e1, ok1 := label(s.Labels, "namespace")
			obj, e2, ok2 := label(s.Labels, objLabel)
			kind, e3, _ := label(s.Labels, "owner_kind")
			name, e4, _ := label(s.Labels, "owner_name")
			ctl, _, _ := label(s.Labels, "owner_is_controller")
			if !ok1 || !ok2 {
				continue
			}
			exported = exported || e1 || e2 || e3 || e4
			key := objKey{ns, obj}
			into[key] = append(into[key], ownerSeries{kind: kind, name: name, controller: ctl == "true", samples: s.Samples})
		}
		if exported {
			k.exported = append(k.exported, metric)
		}
	}
	owners(podOwnerMetric, "pod", k.pods)
	owners(replicaSetOwnerMetric, "replicaset", k.replicaSets)
	for key := range k.pods {
		k.podNames[key.namespace] = append(k.podNames[key.namespace], key.name)
	}
	for _, names := range k.podNames {
		slices.Sort(names)
	}
	for key, ss := range k.replicaSets {
		for _, s := range ss {
			if s.kind == "Deployment" && s.name != "" {
				k.deploymentOwners[key.namespace] = append(k.deploymentOwners[key.namespace], s)
			}
		}
	}

	exported := false
	for _, i := range set.byName[podStartMetric] {
		s := set.series[i]
		ns, e1, ok1 := label(s.Labels, "namespace")
		pod, e2, ok2 := label(s.Labels, "pod")
		if !ok1 || !ok2 {
			continue
		}
		exported = exported || e1 || e2
		key := objKey{ns, pod}
		k.starts[key] = append(k.starts[key], s.Samples)
	}
	if exported {
		k.exported = append(k.exported, podStartMetric)
	}

	exported = false
	for _, i := range set.byName[podAnnotationsMetric] {
		s := set.series[i]
		ns, e1, ok1 := label(s.Labels, "namespace")
		pod, e2, ok2 := label(s.Labels, "pod")
		v, _, ok3 := label(s.Labels, fractionLabel)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		// KAI's admission accepts 0 < f < 1 only; anything else is not a
		// share the pod can have been created with.
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f < 1) {
			continue
		}
		exported = exported || e1 || e2
		key := objKey{ns, pod}
		k.fractions[key] = append(k.fractions[key], fractionSeries{fraction: f, samples: s.Samples})
	}
	if exported {
		k.exported = append(k.exported, podAnnotationsMetric)
	}
	return k
}

// fractionSeries is one kube_pod_annotations series with a gpu-fraction.
type fractionSeries struct {
	fraction float64
	samples  []usage.Sample
}

// fraction returns the gpu-fraction a pod was created with, from the
// newest kube_pod_annotations sample at or before at; 0 when unknown.
// Pods keep the share they were created with until replaced, so a pod
// older than the manifest's last change is read against its own.
func (k *ksm) fraction(key objKey, at int64) float64 {
	var best usage.Sample
	f := 0.0
	for _, s := range k.fractions[key] {
		if x, ok := newestAt(s.samples, at); ok && (f == 0 || x.T > best.T) {
			best, f = x, s.fraction
		}
	}
	return f
}

// newestAt returns the time of the newest sample at or before at. NaN
// samples do not count: a NaN in a recording is a staleness marker, the
// series ending.
func newestAt(s []usage.Sample, at int64) (usage.Sample, bool) {
	s = usage.In(s, usage.Window{From: math.MinInt64, To: at})
	for i := len(s) - 1; i >= 0; i-- {
		if !math.IsNaN(s[i].V) {
			return s[i], true
		}
	}
	return usage.Sample{}, false
}

// ownerAt returns the owner named by the newest sample at or before at,
// preferring the controller among owners reported at the same time.
func ownerAt(ss []ownerSeries, at int64) (kind, name string, ok bool) {
	var best *ownerSeries
	var bestT int64
	for i := range ss {
		x, found := newestAt(ss[i].samples, at)
		if !found {
			continue
		}
		if best == nil || x.T > bestT || x.T == bestT && better(&ss[i], best) {
			best, bestT = &ss[i], x.T
		}
	}
	if best == nil {
		return "", "", false
	}
	return best.kind, best.name, true
}

// better orders owners reported at the same time: the controller first,
// then by kind and name, for a deterministic answer.
func better(a, b *ownerSeries) bool {
	if a.controller != b.controller {
		return a.controller
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	return a.name < b.name
}

// live reports whether a pod's kube_pod_owner series has a sample in
// [at-tolerance, at].
func live(ss []ownerSeries, at, tolerance int64) bool {
	w := usage.Window{From: at - tolerance - 1, To: at}
	for _, s := range ss {
		for _, x := range usage.In(s.samples, w) {
			if !math.IsNaN(x.V) {
				return true
			}
		}
	}
	return false
}

// start returns when a pod started, in Unix ms, from the newest
// kube_pod_start_time sample at or before at; 0 when unknown.
func (k *ksm) start(key objKey, at int64) int64 {
	var best usage.Sample
	found := false
	for _, s := range k.starts[key] {
		if x, ok := newestAt(s, at); ok && (!found || x.T > best.T) {
			best, found = x, true
		}
	}
	ms := math.Round(best.V * 1000)
	if !found || math.IsInf(ms, 0) || ms <= 0 || ms >= math.MaxInt64 {
		return 0
	}
	return int64(ms)
}

// deployments returns the Deployments of a namespace that kube-state-metrics
// reported at or before at, through the owners of their ReplicaSets.
func (k *ksm) deployments(namespace string, at int64) []string {
	var ds []string
	for _, s := range k.deploymentOwners[namespace] {
		if _, ok := newestAt(s.samples, at); ok {
			ds = append(ds, s.name)
		}
	}
	return ds
}

// owner attributes a pod to a workload at time at. A pod kube-state-metrics
// knows of is attributed through its owner series only; any other pod
// through the Deployment pod-name pattern, among the given candidate
// Deployments of its namespace. others lists the candidates whose pattern
// fits the name too, and lost to the longest name or tied with it.
func (k *ksm) owner(namespace, pod string, at int64, candidates []string) (ref usage.Ref, ok bool, others []string) {
	kind, name, known := ownerAt(k.pods[objKey{namespace, pod}], at)
	if !known {
		d, others := claim(candidates, pod)
		if d == "" {
			return usage.Ref{}, false, others
		}
		return usage.Ref{Namespace: namespace, Kind: "Deployment", Name: d}, true, others
	}
	switch kind {
	case "", noOwner:
		return usage.Ref{}, false, nil
	case "ReplicaSet":
		rsKind, rsName, found := ownerAt(k.replicaSets[objKey{namespace, name}], at)
		switch {
		case found && rsKind != "" && rsKind != noOwner:
			return usage.Ref{Namespace: namespace, Kind: rsKind, Name: rsName}, true, nil
		case !found:
			// kube_replicaset_owner is not recorded: the ReplicaSet's own
			// name says which Deployment made it.
			var best string
			for _, d := range candidates {
				if len(d) > len(best) && matchReplicaSet(d, name) {
					best = d
				}
			}
			if best != "" {
				return usage.Ref{Namespace: namespace, Kind: "Deployment", Name: best}, true, nil
			}
		}
	}
	return usage.Ref{Namespace: namespace, Kind: kind, Name: name}, true, nil
}

// exportedWarning describes the kube-state-metrics series whose labels came
// from exported_*, or returns "" when there are none.
func (k *ksm) exportedWarning() string {
	if len(k.exported) == 0 {
		return ""
	}
	return "kube-state-metrics series " + strings.Join(k.exported, ", ") +
		": namespace, pod and owner labels taken from exported_* (the scrape renamed them: a ServiceMonitor without honorLabels: true)"
}
