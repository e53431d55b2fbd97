package placement

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The kube-state-metrics series a placement is read from where the job
// has no access to the cluster. Labels, annotations and resource names
// reach them renamed (metrics.KSMLabelName, metrics.KSMResourceName:
// nvidia.com/gpu is resource="nvidia_com_gpu", the node label nodePool
// is label_node_pool), and only the labels and annotations
// kube-state-metrics is allowed to export (--metric-labels-allowlist,
// --metric-annotations-allowlist).
const (
	nodeCapacityMetric    = "kube_node_status_capacity"          // {node, resource, unit}
	nodeLabelsMetric      = "kube_node_labels"                   // {node, label_<key>}
	podInfoMetric         = "kube_pod_info"                      // {namespace, pod, node}
	podPhaseMetric        = "kube_pod_status_phase"              // {namespace, pod, phase}: 1 for the current one
	podAnnotationsMetric  = "kube_pod_annotations"               // {namespace, pod, annotation_<key>}
	podLabelsMetric       = "kube_pod_labels"                    // {namespace, pod, label_<key>}
	containerLimitsMetric = "kube_pod_container_resource_limits" // {namespace, pod, container, resource, unit}
	podOwnerMetric        = "kube_pod_owner"                     // {namespace, pod, owner_kind, owner_name, owner_is_controller}
	rsOwnerMetric         = "kube_replicaset_owner"              // {namespace, replicaset, owner_kind, owner_name, owner_is_controller}
	// The Deployment's rolling update, already scaled to its replicas by
	// kube-state-metrics as the controller scales it (maxSurge rounded
	// up, maxUnavailable down); a Recreate Deployment has neither.
	deploymentReplicasMetric    = "kube_deployment_spec_replicas"
	deploymentSurgeMetric       = "kube_deployment_spec_strategy_rollingupdate_max_surge"
	deploymentUnavailableMetric = "kube_deployment_spec_strategy_rollingupdate_max_unavailable"
	statefulSetReplicasMetric   = "kube_statefulset_replicas"
	// A workload's own labels, for its KAI queue, which KAI reads before
	// its pods' (with --metric-labels-allowlist=deployments=[...],
	// statefulsets=[...]).
	deploymentLabelsMetric  = "kube_deployment_labels"  // {namespace, deployment, label_<key>}
	statefulSetLabelsMetric = "kube_statefulset_labels" // {namespace, statefulset, label_<key>}
)

// gpuResource is nvidia.com/gpu as kube-state-metrics names it.
var gpuResource = metrics.KSMResourceName(string(GPUResource))

// Lookback is how old the newest sample of a series may be for it to
// still describe the cluster at the evaluation time: Prometheus' own
// staleness bound for an instant query.
const Lookback = 5 * time.Minute

// SeriesMetrics are the series FromSeries reads.
func SeriesMetrics() []string {
	return []string{nodeCapacityMetric, nodeLabelsMetric, podInfoMetric, podPhaseMetric, podAnnotationsMetric,
		podLabelsMetric, containerLimitsMetric, podOwnerMetric, rsOwnerMetric, deploymentReplicasMetric,
		deploymentSurgeMetric, deploymentUnavailableMetric, statefulSetReplicasMetric, deploymentLabelsMetric, statefulSetLabelsMetric}
}

// Series is what answers FromSeries' questions: a Prometheus server's
// raw samples of some metrics in (at−lookback, at].
type Series interface {
	Series(ctx context.Context, metrics []string, at time.Time, lookback time.Duration) ([]metrics.Series, []string, error)
}

// ReadSeries reads the placement at a time from a server's
// kube-state-metrics series; see FromSeries. Warnings of the server are
// notes.
func ReadSeries(ctx context.Context, src Series, at time.Time, labelKeys []string) (consolidate.Placement, []string, error) {
	ss, warnings, err := src.Series(ctx, SeriesMetrics(), at, Lookback)
	if err != nil {
		return consolidate.Placement{}, nil, fmt.Errorf("kube-state-metrics series: %w", err)
	}
	p, notes := FromSeries(ss, at, labelKeys)
	for _, w := range warnings {
		notes = append(notes, "the server's answer may be partial: "+w)
	}
	return p, notes, nil
}

// FromSeries is the placement kube-state-metrics says there was at a
// time, as Read gives it from the API server: GPU nodes, the scheduled
// pods holding GPU share that have not ended, each with its workload, and
// the Deployments' and StatefulSets' rollouts. A series counts when its
// newest sample in (at−Lookback, at] is not 0.
//
// Node labels come renamed, so only the keys asked for are given back
// under their own names (the policies' selector keys; the GPU product
// label always), each from the label kube-state-metrics names it. A pod's gpu-fraction,
// gpu-fraction-num-devices and gpu-memory come from kube_pod_annotations
// and its queue from kube_pod_labels, when kube-state-metrics exports
// them; without the annotations a fractional pod is not seen at all, and
// a note says so once.
func FromSeries(ss []metrics.Series, at time.Time, labelKeys []string) (consolidate.Placement, []string) {
	v := newView(ss, at.UnixMilli())
	var out consolidate.Placement
	out.Nodes = v.nodes(append([]string{ProductLabel}, labelKeys...))
	onNode := map[string]bool{}
	for _, n := range out.Nodes {
		onNode[n.Name] = true
	}
	var notes []string
	keys := slices.SortedFunc(maps.Keys(v.info), func(a, b podKey) int {
		return cmp.Or(strings.Compare(a.ns, b.ns), strings.Compare(a.name, b.name))
	})
	for _, key := range keys {
		pod := v.info[key]
		if pod.node == "" || v.ended[key] {
			continue
		}
		sh, ok, err := shareOf(v.annotations[key], v.limits[key])
		if err != nil {
			notes = append(notes, fmt.Sprintf("pod %s/%s left out: %v", key.ns, key.name, err))
			continue
		}
		if !ok {
			continue
		}
		w := v.workload(key)
		queue := v.labels[key][kai.QueueLabel]
		if q := v.queues[w]; q != "" {
			queue = q
		}
		out.Pods = append(out.Pods, consolidate.Pod{Namespace: key.ns, Name: key.name, Workload: w,
			Node: pod.node, Share: sh, Queue: queue})
	}
	if !v.annotated && len(out.Nodes) > 0 {
		notes = append(notes, "kube-state-metrics exports no pod annotations: pods holding a gpu-fraction are not seen (allow them with --metric-annotations-allowlist=pods=[gpu-fraction,gpu-fraction-num-devices,gpu-memory])")
	}
	out.Rollouts = v.rollouts()
	return out, notes
}

type podKey struct{ ns, name string }

type podInfo struct{ node string }

type owner struct{ kind, name string }

// view is the series at one time, indexed.
type view struct {
	at          int64
	capacity    map[string]float64
	nodeLabels  map[string][]metrics.Label
	info        map[podKey]podInfo
	ended       map[podKey]bool
	annotations map[podKey]map[string]string
	labels      map[podKey]map[string]string
	limits      map[podKey]int64
	podOwners   map[podKey]owner
	rsOwners    map[podKey]owner
	annotated   bool
	deployments map[podKey]*deploymentSpec
	statefuls   map[podKey]int
	// queues are the workloads' own queue labels.
	queues map[usage.Ref]string
}

type deploymentSpec struct {
	replicas           int
	surge, unavailable int
	rolling            bool
}

func newView(ss []metrics.Series, at int64) *view {
	v := &view{at: at, capacity: map[string]float64{}, nodeLabels: map[string][]metrics.Label{},
		info: map[podKey]podInfo{}, ended: map[podKey]bool{}, annotations: map[podKey]map[string]string{},
		labels: map[podKey]map[string]string{}, limits: map[podKey]int64{}, podOwners: map[podKey]owner{},
		rsOwners: map[podKey]owner{}, deployments: map[podKey]*deploymentSpec{}, statefuls: map[podKey]int{}, queues: map[usage.Ref]string{}}
	for i := range ss {
		v.add(&ss[i])
	}
	return v
}

// value is the newest sample of s in (at−Lookback, at]; ok is false
// when there is none, or it is not a number.
func (v *view) value(s *metrics.Series) (float64, bool) {
	i, _ := slices.BinarySearchFunc(s.Samples, v.at+1, func(x usage.Sample, t int64) int { return cmp.Compare(x.T, t) })
	if i == 0 || s.Samples[i-1].T <= v.at-Lookback.Milliseconds() {
		return 0, false
	}
	x := s.Samples[i-1].V
	return x, !math.IsNaN(x) && !math.IsInf(x, 0)
}

func (v *view) add(s *metrics.Series) {
	x, ok := v.value(s)
	if !ok || x == 0 {
		return
	}
	l := func(name string) string { return metrics.LabelValue(s.Labels, name) }
	pod := podKey{l("namespace"), l("pod")}
	switch s.Metric {
	case nodeCapacityMetric:
		if l("resource") == gpuResource {
			v.capacity[l("node")] = x
		}
	case nodeLabelsMetric:
		v.nodeLabels[l("node")] = s.Labels
	case podInfoMetric:
		v.info[pod] = podInfo{node: l("node")}
	case podPhaseMetric:
		if p := l("phase"); p == "Succeeded" || p == "Failed" {
			v.ended[pod] = true
		}
	case podAnnotationsMetric:
		v.annotated = v.annotated || slices.ContainsFunc(s.Labels, func(l metrics.Label) bool {
			return strings.HasPrefix(l.Name, "annotation_") || strings.HasPrefix(l.Name, metrics.ExportedPrefix+"annotation_")
		})
		v.annotations[pod] = prefixed(s.Labels, "annotation", kai.FractionAnnotation, kai.NumDevicesAnnotation, kai.MemoryAnnotation)
	case podLabelsMetric:
		v.labels[pod] = prefixed(s.Labels, "label", kai.QueueLabel)
	case containerLimitsMetric:
		if l("resource") == gpuResource {
			v.limits[pod] += int64(x)
		}
	case podOwnerMetric:
		if l("owner_is_controller") == "true" {
			v.podOwners[pod] = owner{l("owner_kind"), l("owner_name")}
		}
	case rsOwnerMetric:
		if l("owner_is_controller") == "true" {
			v.rsOwners[podKey{pod.ns, l("replicaset")}] = owner{l("owner_kind"), l("owner_name")}
		}
	case deploymentReplicasMetric, deploymentSurgeMetric, deploymentUnavailableMetric:
		v.deployment(podKey{pod.ns, l("deployment")}, s.Metric, int(x))
	case statefulSetReplicasMetric:
		v.statefuls[podKey{pod.ns, l("statefulset")}] = int(x)
	case deploymentLabelsMetric:
		v.queues[usage.Ref{Namespace: pod.ns, Kind: "Deployment", Name: l("deployment")}] = prefixed(s.Labels, "label", kai.QueueLabel)[kai.QueueLabel]
	case statefulSetLabelsMetric:
		v.queues[usage.Ref{Namespace: pod.ns, Kind: "StatefulSet", Name: l("statefulset")}] = prefixed(s.Labels, "label", kai.QueueLabel)[kai.QueueLabel]
	}
}

func (v *view) deployment(key podKey, metric string, n int) {
	d := v.deployments[key]
	if d == nil {
		d = &deploymentSpec{}
		v.deployments[key] = d
	}
	switch metric {
	case deploymentReplicasMetric:
		d.replicas = n
	case deploymentSurgeMetric:
		d.surge, d.rolling = n, true
	case deploymentUnavailableMetric:
		d.unavailable, d.rolling = n, true
	}
}

// prefixed gives back the labels of keys, read from the label names
// kube-state-metrics gives them under prefix ("label", "annotation").
func prefixed(ls []metrics.Label, prefix string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if val := metrics.LabelValue(ls, metrics.KSMLabelName(prefix, k)); val != "" {
			out[k] = val
		}
	}
	return out
}

func (v *view) nodes(keys []string) []consolidate.Node {
	var out []consolidate.Node
	for _, name := range slices.Sorted(maps.Keys(v.capacity)) {
		gpus := v.capacity[name]
		if gpus < 1 {
			continue
		}
		labels := prefixed(v.nodeLabels[name], "label", keys...)
		out = append(out, consolidate.Node{Name: name, Labels: labels, GPUs: int(gpus), Model: labels[ProductLabel]})
	}
	return out
}

// workload is the pod's top owner, as Read finds it.
func (v *view) workload(key podKey) usage.Ref {
	o, ok := v.podOwners[key]
	if !ok || o.kind == "<none>" || o.kind == "" {
		return usage.Ref{Namespace: key.ns, Kind: "Pod", Name: key.name}
	}
	if o.kind == "ReplicaSet" {
		if top, ok := v.rsOwners[podKey{key.ns, o.name}]; ok && top.kind != "<none>" && top.kind != "" {
			return usage.Ref{Namespace: key.ns, Kind: top.kind, Name: top.name}
		}
	}
	return usage.Ref{Namespace: key.ns, Kind: o.kind, Name: o.name}
}

// rollouts are the Deployments' and StatefulSets' rollouts, as Read
// gives them: maxSurge and maxUnavailable in pods.
func (v *view) rollouts() []consolidate.Rollout {
	out := []consolidate.Rollout{}
	for key, d := range v.deployments {
		ref := usage.Ref{Namespace: key.ns, Kind: "Deployment", Name: key.name}
		ro := consolidate.Rollout{Workload: ref, Replicas: d.replicas, MaxSurge: consolidate.Count(d.surge), MaxUnavailable: consolidate.Count(d.unavailable)}
		if !d.rolling {
			ro.MaxUnavailable = consolidate.Percent(100)
		}
		out = append(out, ro)
	}
	for key, n := range v.statefuls {
		out = append(out, consolidate.OnePodAtATime(usage.Ref{Namespace: key.ns, Kind: "StatefulSet", Name: key.name}, n))
	}
	sortRollouts(out)
	return out
}

func sortRollouts(rs []consolidate.Rollout) {
	slices.SortFunc(rs, func(a, b consolidate.Rollout) int {
		return cmp.Or(strings.Compare(a.Workload.Namespace, b.Workload.Namespace), strings.Compare(a.Workload.Kind, b.Workload.Kind),
			strings.Compare(a.Workload.Name, b.Workload.Name))
	})
}

// shareOf is a pod's GPU request, as KAI admits and counts it
// (kai.PodShare), in the shape a pool is packed in. A gpu-memory pod is
// left out with an error: its share of a card depends on the node's
// memory, which a report does not read yet.
func shareOf(annotations map[string]string, whole int64) (sh consolidate.Share, ok bool, err error) {
	s, ok, err := kai.PodShare(annotations, whole)
	switch {
	case err != nil || !ok:
		return sh, false, err
	case s.MemoryMiB > 0:
		return sh, false, fmt.Errorf("it asks for %s, which a report does not count yet", kai.MemoryAnnotation)
	}
	return consolidate.Share{Per: s.Portion, Devices: s.Devices}, true, nil
}

// Fixed is series already read, a recording's: it answers every request
// with all of them, and FromSeries keeps what it reads.
type Fixed []metrics.Series

// Series returns f.
func (f Fixed) Series(context.Context, []string, time.Time, time.Duration) ([]metrics.Series, []string, error) {
	return f, nil, nil
}

var _ Series = Fixed(nil)
