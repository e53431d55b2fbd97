package metrics

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The kube-state-metrics series that say which pods exist, who owns them
// and since when.
const (
	podOwnerMetric        = "kube_pod_owner"
	replicaSetOwnerMetric = "kube_replicaset_owner"
	// deploymentOwnerMetric names a Deployment's owner, with owner_kind
	// and owner_name empty when it has none (kube-state-metrics v2.18.0
	// and later, internal/store/deployment.go).
	deploymentOwnerMetric = "kube_deployment_owner"
	podStartMetric        = "kube_pod_start_time"
	// PodPhaseMetric says a pod's phase: one series per phase, 1 for the
	// current one (kube-state-metrics v2.20.0, internal/store/pod.go).
	// kube_pod_owner stays while the Pod object does, Failed and evicted
	// pods included: only the phase says a pod no longer runs.
	PodPhaseMetric = "kube_pod_status_phase"
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
	return []string{podOwnerMetric, replicaSetOwnerMetric, deploymentOwnerMetric, podStartMetric, podAnnotationsMetric, PodPhaseMetric}
}

// EndedPhases are the phases of a pod that runs no more, as
// kube_pod_status_phase's phase label writes them: a source that cannot
// read every phase over the whole window may read these near its end.
var EndedPhases = []string{"Failed", "Succeeded"}

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
	// series is the index of the series in its set, for its labels.
	series int
}

// ksm indexes the kube-state-metrics series of a set.
type ksm struct {
	pods        map[objKey][]ownerSeries
	replicaSets map[objKey][]ownerSeries
	deployments map[objKey][]ownerSeries
	starts      map[objKey][][]usage.Sample
	// ended holds, per pod, its kube_pod_status_phase series of the
	// phases that end it.
	ended map[objKey][][]usage.Sample
	// fractions holds, per pod, its gpu-fraction annotations and when
	// they were reported.
	fractions map[objKey][]fractionSeries
	// podNames lists, per namespace, the pods with a kube_pod_owner series.
	podNames map[string][]string
	// replicaSetOwners holds, per namespace, the kube_replicaset_owner
	// series that name a Deployment or a Rollout.
	replicaSetOwners map[string][]ownerSeries
	// exported names the metrics whose labels came from exported_*.
	exported []string
}

func (set *Set) buildKSM() *ksm {
	k := &ksm{
		pods:             make(map[objKey][]ownerSeries),
		replicaSets:      make(map[objKey][]ownerSeries),
		deployments:      make(map[objKey][]ownerSeries),
		starts:           make(map[objKey][][]usage.Sample),
		ended:            make(map[objKey][][]usage.Sample),
		fractions:        make(map[objKey][]fractionSeries),
		podNames:         make(map[string][]string),
		replicaSetOwners: make(map[string][]ownerSeries),
	}
	k.readOwners(set, podOwnerMetric, "pod", k.pods)
	k.readOwners(set, replicaSetOwnerMetric, "replicaset", k.replicaSets)
	k.readOwners(set, deploymentOwnerMetric, "deployment", k.deployments)
	for key := range k.pods {
		k.podNames[key.namespace] = append(k.podNames[key.namespace], key.name)
	}
	for _, names := range k.podNames {
		slices.Sort(names)
	}
	for key, ss := range k.replicaSets {
		for _, s := range ss {
			if generated(s.kind) && s.name != "" {
				k.replicaSetOwners[key.namespace] = append(k.replicaSetOwners[key.namespace], s)
			}
		}
	}
	k.readStarts(set)
	k.readPhases(set)
	k.readFractions(set)
	return k
}

// readPhases indexes the kube_pod_status_phase series of the phases that
// end a pod.
func (k *ksm) readPhases(set *Set) {
	exported := false
	for _, i := range set.byName[PodPhaseMetric] {
		s := set.series[i]
		ns, e1, ok1 := label(s.Labels, "namespace")
		pod, e2, ok2 := label(s.Labels, "pod")
		phase, _, _ := label(s.Labels, "phase")
		if !ok1 || !ok2 || !slices.Contains(EndedPhases, phase) {
			continue
		}
		exported = exported || e1 || e2
		key := objKey{ns, pod}
		k.ended[key] = append(k.ended[key], s.Samples)
	}
	if exported {
		k.exported = append(k.exported, PodPhaseMetric)
	}
}

// hasEnded reports whether kube-state-metrics said, in its newest sample
// at or before at, that the pod's phase is Failed or Succeeded: an evicted
// or finished pod, whose owner series stays until the Pod is deleted.
//
// The newest sample of all its series decides: a StatefulSet's pod keeps
// its name when it is made again, and the new pod's series (another uid)
// say 0 where the evicted one's last said 1.
func (k *ksm) hasEnded(key objKey, at int64) bool {
	var newest usage.Sample
	found := false
	for _, s := range k.ended[key] {
		if x, ok := newestAt(s, at); ok && (!found || x.T > newest.T || x.T == newest.T && x.V == 1) {
			newest, found = x, true
		}
	}
	return found && newest.V == 1
}

// readOwners indexes the kube_*_owner series of one metric by the object
// that objLabel names.
func (k *ksm) readOwners(set *Set, metric, objLabel string, into map[objKey][]ownerSeries) {
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
		into[key] = append(into[key], ownerSeries{kind: kind, name: name, controller: ctl == "true", samples: s.Samples, series: i})
	}
	if exported {
		k.exported = append(k.exported, metric)
	}
}

func (k *ksm) readStarts(set *Set) {
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
}

func (k *ksm) readFractions(set *Set) {
	exported := false
	for _, i := range set.byName[podAnnotationsMetric] {
		s := set.series[i]
		ns, e1, ok1 := label(s.Labels, "namespace")
		pod, e2, ok2 := label(s.Labels, "pod")
		v, _, ok3 := label(s.Labels, fractionLabel)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		// Only what KAI's admission accepts is a share the pod can have
		// been created with.
		f, err := kai.ParseFraction(v)
		if err != nil {
			continue
		}
		exported = exported || e1 || e2
		key := objKey{ns, pod}
		k.fractions[key] = append(k.fractions[key], fractionSeries{fraction: f, samples: s.Samples})
	}
	if exported {
		k.exported = append(k.exported, podAnnotationsMetric)
	}
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

// replicaSetOwnersAt returns the Deployments and Rollouts of a namespace
// that kube-state-metrics reported at or before at, through the owners of
// their ReplicaSets.
func (k *ksm) replicaSetOwnersAt(namespace string, at int64) []usage.Ref {
	var refs []usage.Ref
	for _, s := range k.replicaSetOwners[namespace] {
		if _, ok := newestAt(s.samples, at); ok {
			refs = append(refs, usage.Ref{Namespace: namespace, Kind: s.kind, Name: s.name})
		}
	}
	return refs
}

// owner attributes a pod to a workload at time at. A pod kube-state-metrics
// knows of is attributed through its owner series only; any other pod by
// its name, among candidates, the workloads of its namespace sorted by
// compareRefs.
func (k *ksm) owner(namespace, pod string, at int64, candidates *refIndex) attribution {
	kind, name, known := ownerAt(k.pods[objKey{namespace, pod}], at)
	if !known {
		return claim(candidates, pod)
	}
	switch kind {
	case "", noOwner:
		return attribution{}
	case "ReplicaSet":
		return k.replicaSetOwner(namespace, name, at, candidates)
	case kindStatefulSet:
		return k.statefulSetOwner(namespace, name, at, candidates)
	}
	return attribution{ref: usage.Ref{Namespace: namespace, Kind: kind, Name: name}, ok: true}
}

// replicaSetOwner attributes the pods of ReplicaSet rs: to its owner, or,
// when kube_replicaset_owner is not recorded, to the Deployment or Rollout
// its name says made it (<name>-<pod-template-hash>, so a single name).
// A Deployment and a Rollout of that name (a migration from one to the
// other keeps it) leave the owner unknown.
func (k *ksm) replicaSetOwner(namespace, rs string, at int64, candidates *refIndex) attribution {
	self := usage.Ref{Namespace: namespace, Kind: "ReplicaSet", Name: rs}
	kind, name, found := ownerAt(k.replicaSets[objKey{namespace, rs}], at)
	switch {
	case found && kind == kindDeployment:
		return k.deploymentOwner(namespace, name, at, candidates)
	case found && kind != "" && kind != noOwner:
		return attribution{ref: usage.Ref{Namespace: namespace, Kind: kind, Name: name}, ok: true}
	case found:
		return attribution{ref: self, ok: true}
	}
	var matches []usage.Ref
	for _, c := range candidates.near(rs) {
		if generated(c.Kind) && matchReplicaSet(c.Name, rs) || c.Kind == kindISVC && matchPredictorReplicaSet(candidates.service(c), rs) {
			matches = append(matches, c)
		}
	}
	switch len(matches) {
	case 0:
		return attribution{ref: self, ok: true}
	case 1:
		return attribution{ref: matches[0], ok: true}
	}
	return attribution{rivals: matches, via: self}
}

// deploymentOwner attributes the pods of Deployment name. Its owner, in
// kube_deployment_owner, says whose they are: the Deployment's own when
// it has none; an InferenceService's, whose predictor it runs in
// Standard mode; in Knative mode a Revision's, and so the queried
// InferenceService's whose predictor that revision is of. Without the
// series (kube-state-metrics before v2.18), or with another owner, the
// names decide (byName).
func (k *ksm) deploymentOwner(namespace, name string, at int64, candidates *refIndex) attribution {
	d := usage.Ref{Namespace: namespace, Kind: kindDeployment, Name: name}
	kind, owner, found := ownerAt(k.deployments[objKey{namespace, name}], at)
	switch {
	case !found:
		return byName(d, candidates)
	case kind == "" || kind == noOwner:
		return attribution{ref: d, ok: true}
	case kind == kindISVC:
		return attribution{ref: usage.Ref{Namespace: namespace, Kind: kindISVC, Name: owner}, ok: true}
	case kind == knativeRevision:
		var of []usage.Ref
		for _, c := range candidates.refs {
			if c.Kind == kindISVC && matchPredictorRevision(candidates.service(c), owner) && matchRevisionDeployment(owner, name) {
				of = append(of, c)
			}
		}
		if len(of) == 1 {
			return attribution{ref: of[0], ok: true}
		}
		return attribution{ref: usage.Ref{Namespace: namespace, Kind: knativeRevision, Name: owner}, ok: true}
	}
	return byName(d, candidates)
}

// knativeRevision is the kind of a Knative Deployment's owner.
const knativeRevision = "Revision"

// byName attributes the pods of Deployment d by its name, to the queried
// InferenceService whose predictor it can be, or the Dynamo service it
// runs. Without its owner, a queried Deployment of that name is a rival:
// both cannot exist, and nothing says which does.
func byName(d usage.Ref, candidates *refIndex) attribution {
	var matches []usage.Ref
	rival := false
	for _, c := range candidates.near(d.Name) {
		if c.Kind == kindISVC && matchPredictorDeployment(candidates.service(c), d.Name) || c.Kind == kindDGD && c.Name == d.Name {
			matches = append(matches, c)
		}
		rival = rival || c == d
	}
	switch {
	case len(matches) == 0:
		return attribution{ref: d, ok: true}
	case len(matches) == 1 && !rival:
		return attribution{ref: matches[0], ok: true}
	case rival:
		matches = append(matches, d)
		slices.SortFunc(matches, compareRefs)
	}
	return attribution{rivals: matches, via: d}
}

// statefulSetOwner attributes the pods of StatefulSet sts. kube-state-metrics
// reports no owner of a StatefulSet, so one a LeaderWorkerSet made is told
// by its name among the queried LeaderWorkerSets: the leader StatefulSet
// is named as its LeaderWorkerSet, a group's worker StatefulSet
// <lws>-<group>. A queried StatefulSet of the same name is a rival: both
// cannot exist, and nothing says which does.
func (k *ksm) statefulSetOwner(namespace, sts string, at int64, candidates *refIndex) attribution {
	self := usage.Ref{Namespace: namespace, Kind: kindStatefulSet, Name: sts}
	var sets []usage.Ref
	rival := false
	for _, c := range candidates.near(sts) {
		if c.Kind == kindLWS && matchLWSStatefulSet(c.Name, sts) {
			sets = append(sets, c)
		}
		rival = rival || c == self
	}
	sets = k.narrowLWS(namespace, sts, at, sets)
	switch {
	case len(sets) == 0:
		return attribution{ref: self, ok: true}
	case len(sets) == 1 && !rival:
		return attribution{ref: sets[0], ok: true}
	case rival:
		sets = append(sets, self)
	}
	return attribution{rivals: sets, via: self}
}

// narrowLWS keeps the LeaderWorkerSets whose naming fits StatefulSet sts
// that its pods do not contradict. A name fits as a leader StatefulSet
// (sts itself) and as a group's worker StatefulSet (<lws>-<group>) alike:
// llm-2 is LeaderWorkerSet llm-2's leaders, or llm's group 2 workers. Only
// a leader StatefulSet has a pod of ordinal 0, as worker StatefulSets
// start at 1; a worker StatefulSet is named after its group's leader pod,
// which the leader StatefulSet owns. Pods that say both say nothing.
func (k *ksm) narrowLWS(namespace, sts string, at int64, sets []usage.Ref) []usage.Ref {
	if len(sets) == 0 {
		return nil
	}
	ownerOf := func(pod string) string {
		kind, name, ok := ownerAt(k.pods[objKey{namespace, pod}], at)
		if !ok || kind != kindStatefulSet {
			return ""
		}
		return name
	}
	leads := ownerOf(sts+"-0") == sts
	workerOf := ownerOf(sts)
	if workerOf == sts || !matchLWSStatefulSet(workerOf, sts) {
		workerOf = ""
	}
	if leads == (workerOf != "") {
		return sets
	}
	var kept []usage.Ref
	for _, c := range sets {
		if leads && c.Name == sts || c.Name == workerOf {
			kept = append(kept, c)
		}
	}
	return kept
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

// ownersMixed says why the owner series of a pod, of its ReplicaSet and
// of that one's Deployment cannot be trusted in w: two series of one
// object that report at the same time and differ in a label other than
// the owner's are two objects of one name, as two clusters writing into
// one store have (a pod's uid tells them apart; a ReplicaSet named by
// its template's hash has the same name in both). "" when none do.
func (set *Set) ownersMixed(ns, pod string, w usage.Window, tolerance int64) string {
	k := set.ksm
	key := objKey{ns, pod}
	if why := set.mixedOwner(podOwnerMetric, key, k.pods[key], w, tolerance); why != "" {
		return why
	}
	kind, name, ok := ownerAt(k.pods[key], w.To)
	if !ok || kind != "ReplicaSet" {
		return ""
	}
	rs := objKey{ns, name}
	if why := set.mixedOwner(replicaSetOwnerMetric, rs, k.replicaSets[rs], w, tolerance); why != "" {
		return why
	}
	kind, name, ok = ownerAt(k.replicaSets[rs], w.To)
	if !ok || kind != kindDeployment {
		return ""
	}
	d := objKey{ns, name}
	return set.mixedOwner(deploymentOwnerMetric, d, k.deployments[d], w, tolerance)
}

// ownerLabels tell one owner of an object from another: series that
// differ in them alone are one object with several owners.
var ownerLabels = []string{"owner_kind", "owner_name", "owner_is_controller"}

// mixedOwner says which labels tell apart two series of ss, the owner
// series of obj in metric, that both report in w for longer than
// tolerance; "" when no two do.
func (set *Set) mixedOwner(metric string, obj objKey, ss []ownerSeries, w usage.Window, tolerance int64) string {
	if len(ss) < 2 {
		return ""
	}
	var why []string
	for i := range ss {
		a := usage.In(ss[i].samples, w)
		if len(a) == 0 {
			continue
		}
		for j := range i {
			b := usage.In(ss[j].samples, w)
			if len(b) == 0 || overlap(a, b) <= tolerance {
				continue
			}
			for _, d := range set.differ(ss[j].series, ss[i].series) {
				name, _, _ := strings.Cut(d, " ")
				if !slices.Contains(ownerLabels, name) {
					why = append(why, d)
				}
			}
		}
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("%s of %s/%s has series at the same time that differ in %s", metric, obj.namespace, obj.name,
		strings.Join(slices.Compact(slices.Sorted(slices.Values(why))), "; "))
}
