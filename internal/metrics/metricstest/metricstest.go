// Package metricstest holds what the tests of the metrics packages share:
// recordings written in code, the series they name, and renderings of
// recordings and usage results that compare exactly, NaN included. The
// recording, the server it is backfilled into and the presets over both
// are tested against the same data, so their tests write it one way.
package metricstest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// T0 is when test recordings start: 2023-11-14T22:13:20Z.
var T0 = time.Unix(1700000000, 0).UTC()

// The kubex series of the policies' default mappings.
const (
	SM  = "kubex_gpu_container_sm_utilization_percent"
	Mem = "kubex_gpu_container_memory_used_percent"
)

// KubexMetrics maps compute and memory to SM and Mem, by the usual labels.
func KubexMetrics() map[usage.Metric]usage.Mapping {
	return map[usage.Metric]usage.Mapping{
		usage.Compute: {Metric: SM, NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container"},
		usage.Memory:  {Metric: Mem, NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container"},
	}
}

// Deployment is the reference of a Deployment.
func Deployment(ns, name string) usage.Ref {
	return usage.Ref{Namespace: ns, Kind: "Deployment", Name: name}
}

// StatefulSet is the reference of a StatefulSet.
func StatefulSet(ns, name string) usage.Ref {
	return usage.Ref{Namespace: ns, Kind: "StatefulSet", Name: name}
}

// Rollout is the reference of an Argo Rollout.
func Rollout(ns, name string) usage.Ref {
	return usage.Ref{Namespace: ns, Kind: "Rollout", Name: name}
}

// LeaderWorkerSet is the reference of a LeaderWorkerSet.
func LeaderWorkerSet(ns, name string) usage.Ref {
	return usage.Ref{Namespace: ns, Kind: "LeaderWorkerSet", Name: name}
}

// Series writes a series as a file does: name{l1="v1",...} from pairs.
func Series(name string, pairs ...string) string {
	ls := make([]string, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		ls = append(ls, fmt.Sprintf("%s=%q", pairs[i], pairs[i+1]))
	}
	return name + "{" + strings.Join(ls, ",") + "}"
}

// UsageOf is a kubex series of one container of a pod.
func UsageOf(metric, ns, pod, container string) string {
	return Series(metric, "namespace", ns, "pod", pod, "container", container)
}

// PodOwner is the kube_pod_owner series of a pod owned by kind/name.
func PodOwner(ns, pod, kind, name string) string {
	return Series("kube_pod_owner", "namespace", ns, "pod", pod, "uid", "u-"+pod, "owner_kind", kind, "owner_name", name, "owner_is_controller", "true")
}

// ReplicaSetOwner is the kube_replicaset_owner series of a ReplicaSet
// owned by kind/name.
func ReplicaSetOwner(ns, rs, kind, name string) string {
	return Series("kube_replicaset_owner", "namespace", ns, "replicaset", rs, "owner_kind", kind, "owner_name", name, "owner_is_controller", "true")
}

// OwnedPod is a pod of an attribution recording: its name and, when
// kube-state-metrics reports it, the kind and name of its owner.
type OwnedPod struct {
	Name, OwnerKind, Owner string
}

// LWSPods names the pods of LeaderWorkerSet lws as its controllers do:
// per group a leader <lws>-<group>, owned by the leader StatefulSet <lws>,
// and size-1 workers <lws>-<group>-<index> from index 1, owned by the
// group's worker StatefulSet <lws>-<group>.
func LWSPods(lws string, groups, size int) []OwnedPod {
	var pods []OwnedPod
	for g := range groups {
		leader := fmt.Sprintf("%s-%d", lws, g)
		pods = append(pods, OwnedPod{leader, "StatefulSet", lws})
		for i := 1; i < size; i++ {
			pods = append(pods, OwnedPod{fmt.Sprintf("%s-%d", leader, i), "StatefulSet", leader})
		}
	}
	return pods
}

// StatefulSetPods names the pods <sts>-<ordinal> of StatefulSet sts.
func StatefulSetPods(sts string, replicas int) []OwnedPod {
	pods := make([]OwnedPod, replicas)
	for i := range pods {
		pods[i] = OwnedPod{fmt.Sprintf("%s-%d", sts, i), "StatefulSet", sts}
	}
	return pods
}

// Attribution is a recording of workloads of every kind attribution knows
// whose names share a prefix, in two namespaces: "owners", with the owner
// series of kube-state-metrics (a ReplicaSet's left out), and "names",
// with the same pods' usage only. A pod has compute and memory samples a
// minute apart at 0, 60 and 120 s. It returns the recording and the
// workloads to ask for.
func Attribution() (*Recording, []usage.Ref) {
	pods := slices.Concat(
		StatefulSetPods("chat", 3), StatefulSetPods("chat-2", 2),
		LWSPods("llm", 2, 2), LWSPods("llm-2", 2, 2),
		[]OwnedPod{
			{"rank-7d9f8c6b5d-x2b4z", "ReplicaSet", "rank-7d9f8c6b5d"},
			{"rank-7d9f8c6b5d-k8s9q", "ReplicaSet", "rank-7d9f8c6b5d"},
			{"rank-fast-5f6d7b8c9-bcdfg", "ReplicaSet", "rank-fast-5f6d7b8c9"},
			// A Deployment and a Rollout of one name, as in a migration
			// from one to the other, and no kube_replicaset_owner.
			{"old-6d4b9c8f7-q7v2n", "ReplicaSet", "old-6d4b9c8f7"},
		})
	var refs []usage.Ref
	for _, ns := range []string{"names", "owners"} {
		refs = append(refs, StatefulSet(ns, "chat"), StatefulSet(ns, "chat-2"), LeaderWorkerSet(ns, "llm"), LeaderWorkerSet(ns, "llm-2"),
			Rollout(ns, "rank"), Deployment(ns, "rank-fast"), Deployment(ns, "old"), Rollout(ns, "old"))
	}
	r := new(Recording)
	const min = time.Minute
	for _, p := range pods {
		r.Add(PodOwner("owners", p.Name, p.OwnerKind, p.Owner), 0, min, 1, 1, 1)
	}
	r.Add(ReplicaSetOwner("owners", "rank-7d9f8c6b5d", "Rollout", "rank"), 0, min, 1, 1, 1)
	r.Add(ReplicaSetOwner("owners", "rank-fast-5f6d7b8c9", "Deployment", "rank-fast"), 0, min, 1, 1, 1)
	for _, metric := range []string{SM, Mem} {
		for _, ns := range []string{"names", "owners"} {
			for i, p := range pods {
				v := i + 10
				if metric == Mem {
					v += 40
				}
				r.Add(UsageOf(metric, ns, p.Name, "server"), 0, min, v, v, v+1)
			}
		}
	}
	return r, refs
}

// AttributionPods is what both sources must count for Attribution's
// workloads at 2 minutes (rendered by Pods): the same pods by owner and by
// name, but for a pod whose name two LeaderWorkerSets fit, and none for a
// Deployment and a Rollout of one name.
const AttributionPods = `names/Deployment/rank-fast: rank-fast-5f6d7b8c9-bcdfg
names/LeaderWorkerSet/llm: llm-0 llm-0-1 llm-1 llm-1-1
names/LeaderWorkerSet/llm-2: llm-2-0 llm-2-0-1 llm-2-1-1
names/Rollout/rank: rank-7d9f8c6b5d-k8s9q rank-7d9f8c6b5d-x2b4z
names/StatefulSet/chat: chat-0 chat-1 chat-2
names/StatefulSet/chat-2: chat-2-0 chat-2-1
owners/Deployment/rank-fast: rank-fast-5f6d7b8c9-bcdfg
owners/LeaderWorkerSet/llm: llm-0 llm-0-1 llm-1 llm-1-1
owners/LeaderWorkerSet/llm-2: llm-2-0 llm-2-0-1 llm-2-1 llm-2-1-1
owners/Rollout/rank: rank-7d9f8c6b5d-k8s9q rank-7d9f8c6b5d-x2b4z
owners/StatefulSet/chat: chat-0 chat-1 chat-2
owners/StatefulSet/chat-2: chat-2-0 chat-2-1
warning: pod names/llm-2-1 counts for no workload: its name fits LeaderWorkerSets llm, llm-2 alike (their naming rules overlap); record kube_pod_owner to attribute it
warning: pod names/old-6d4b9c8f7-q7v2n counts for no workload: its name fits Deployment old, Rollout old alike (their naming rules overlap); record kube_pod_owner to attribute it
warning: pod owners/old-6d4b9c8f7-q7v2n counts for no workload: its ReplicaSet old-6d4b9c8f7 fits Deployment old, Rollout old alike (no kube_replicaset_owner series names its owner; record it to attribute the pod)
`

// BacktestRecording is a recording the size of a backtest's, of workloads
// Deployments of pods pods each: per pod a compute
// and a memory series and its kube-state-metrics series, a sample a minute,
// written as promtool's dump writes, series after series.
func BacktestRecording(workloads, pods, samples int) []byte {
	var b bytes.Buffer
	each := func(series string, value func(i int) string) {
		for i := range samples {
			fmt.Fprintf(&b, "%s %s %d\n", series, value(i), T0.Unix()+int64(i)*60)
		}
	}
	for w := range workloads {
		d := fmt.Sprintf("llm-%02d", w)
		rs := d + "-7d9f8c6b5d"
		each(ReplicaSetOwner("serving", rs, "Deployment", d), func(int) string { return "1" })
		for p := range pods {
			pod := fmt.Sprintf("%s-x2b%02d", rs, p+20)
			each(PodOwner("serving", pod, "ReplicaSet", rs), func(int) string { return "1" })
			each(Series("kube_pod_start_time", "namespace", "serving", "pod", pod), func(int) string { return "1699990000" })
			each(UsageOf(SM, "serving", pod, "server"), func(i int) string { return fmt.Sprintf("%d.5", (i*7+w)%100) })
			each(UsageOf(Mem, "serving", pod, "server"), func(i int) string { return fmt.Sprintf("%d", 40+(i+p)%13) })
		}
	}
	b.WriteString("# EOF\n")
	return b.Bytes()
}

// Recording writes an OpenMetrics file for a test, one series after the
// other (OpenMetrics only orders the samples within a series).
type Recording struct {
	b strings.Builder
}

// Add writes one sample per value, step apart from start (an offset from
// T0); a nil value leaves a gap. series is written as is:
// `name{label="value"}`.
func (r *Recording) Add(series string, start, step time.Duration, values ...any) *Recording {
	for i, v := range values {
		if v == nil {
			continue
		}
		var s string
		switch v := v.(type) {
		case int:
			s = strconv.Itoa(v)
		case float64:
			s = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			panic(fmt.Sprintf("value %v of type %T", v, v))
		}
		at := T0.Add(start + time.Duration(i)*step)
		fmt.Fprintf(&r.b, "%s %s %s\n", series, s, Seconds(at.UnixMilli()))
	}
	return r
}

func (r *Recording) String() string { return r.b.String() + "# EOF\n" }

// Parse reads the recording as the file test.om.
func (r *Recording) Parse(t testing.TB) *openmetrics.Recorded {
	t.Helper()
	rec, err := openmetrics.ParseRecorded(strings.NewReader(r.String()), "test.om")
	require.NoError(t, err)
	return rec
}

// Seconds renders Unix milliseconds as the seconds a file holds.
func Seconds(ms int64) string {
	sign := ""
	u := uint64(ms)
	if ms < 0 {
		sign, u = "-", -u
	}
	return fmt.Sprintf("%s%d.%03d", sign, u/1000, u%1000)
}

// Dump renders every sample of a recording, one line each, as
// `metric{labels} value@unix-ms`, for exact comparisons that NaN does not
// defeat.
func Dump(r *openmetrics.Recorded) []string {
	var out []string
	for _, s := range r.Series() {
		name := SeriesString(s)
		for _, x := range s.Samples {
			out = append(out, fmt.Sprintf("%s %s@%d", name, FormatValue(x.V), x.T))
		}
	}
	return out
}

// SeriesString writes a series' name and labels as a file does.
func SeriesString(s metrics.Series) string {
	ls := make([]string, len(s.Labels))
	for i, l := range s.Labels {
		ls[i] = fmt.Sprintf("%s=%q", l.Name, l.Value)
	}
	return s.Metric + "{" + strings.Join(ls, ",") + "}"
}

// FormatValue writes a sample value, NaN as "NaN".
func FormatValue(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Render describes a usage.Result exactly and readably: times are seconds
// after T0, `-` is an unknown start.
func Render(res usage.Result) string {
	var b strings.Builder
	refs := make([]usage.Ref, 0, len(res.Workloads))
	for ref := range res.Workloads {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b usage.Ref) int { return strings.Compare(a.String(), b.String()) })
	for _, ref := range refs {
		w := res.Workloads[ref]
		fmt.Fprintf(&b, "%s step=%s liveKnown=%t\n", ref, w.Step, w.LiveKnown)
		if w.Mixed != "" {
			fmt.Fprintf(&b, "  mixed: %s\n", w.Mixed)
		}
		for _, p := range w.Pods {
			start := "-"
			if p.Start != 0 {
				start = offset(p.Start)
			}
			fmt.Fprintf(&b, "  %s live=%t start=%s\n", p.Name, p.Live, start)
			for _, m := range []usage.Metric{usage.Compute, usage.Memory} {
				s, ok := p.Series[m]
				if !ok {
					continue
				}
				xs := make([]string, len(s))
				for i, x := range s {
					xs[i] = FormatValue(x.V) + "@" + offset(x.T)
				}
				by := ""
				if p.ByDevice[m] {
					by = " (busiest device)"
				}
				fmt.Fprintf(&b, "    %s%s: %s\n", m, by, strings.Join(xs, " "))
			}
			if len(p.Series) > 2 {
				fmt.Fprintf(&b, "    unexpected series: %v\n", p.Series)
			}
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// Pods renders what attribution decided: the pods a result counts for
// each workload, one workload a line, then its warnings.
func Pods(res usage.Result) string {
	var b strings.Builder
	refs := make([]usage.Ref, 0, len(res.Workloads))
	for ref := range res.Workloads {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b usage.Ref) int { return strings.Compare(a.String(), b.String()) })
	for _, ref := range refs {
		var names []string
		for _, p := range res.Workloads[ref].Pods {
			names = append(names, p.Name)
		}
		fmt.Fprintf(&b, "%s: %s\n", ref, strings.Join(names, " "))
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// Workloads renders a result without its warnings, which name the source.
func Workloads(res usage.Result) string {
	res.Warnings = nil
	return Render(res)
}

// offset renders Unix milliseconds as seconds after T0.
func offset(ms int64) string {
	d := ms - T0.UnixMilli()
	if d%1000 == 0 {
		return strconv.FormatInt(d/1000, 10)
	}
	return strconv.FormatFloat(float64(d)/1000, 'f', -1, 64)
}

// Gzipped compresses b.
func Gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	_, err := z.Write(b)
	require.NoError(t, err)
	require.NoError(t, z.Close())
	return buf.Bytes()
}

// InferenceService is the reference of a KServe InferenceService.
func InferenceService(ns, name string) usage.Ref {
	return usage.Ref{Namespace: ns, Kind: "InferenceService", Name: name}
}

// InferenceServiceAttribution is a recording of InferenceServices as
// Attribution is of the other kinds, in the same two namespaces: chat in
// RawDeployment mode, chat-2 in Serverless mode (two revisions, the older
// one's ReplicaSet without kube_replicaset_owner), a Deployment chat-2
// sharing their prefix, and an InferenceService embed next to a Deployment
// named as its predictor. It returns the recording and the workloads to
// ask for.
func InferenceServiceAttribution() (*Recording, []usage.Ref) {
	pods := []OwnedPod{
		{"chat-predictor-7d9f8c6b5d-x2b4z", "ReplicaSet", "chat-predictor-7d9f8c6b5d"},
		{"chat-predictor-7d9f8c6b5d-k8s9q", "ReplicaSet", "chat-predictor-7d9f8c6b5d"},
		{"chat-2-predictor-00003-deployment-5f6d7b8c9-bcdfg", "ReplicaSet", "chat-2-predictor-00003-deployment-5f6d7b8c9"},
		{"chat-2-predictor-00002-deployment-6d4b9c8f7-z2x4w", "ReplicaSet", "chat-2-predictor-00002-deployment-6d4b9c8f7"},
		{"chat-2-6d4b9c8f7-q7v2n", "ReplicaSet", "chat-2-6d4b9c8f7"},
		{"embed-predictor-5f6d7b8c9-m4n5p", "ReplicaSet", "embed-predictor-5f6d7b8c9"},
	}
	var refs []usage.Ref
	for _, ns := range []string{"names", "owners"} {
		refs = append(refs, InferenceService(ns, "chat"), InferenceService(ns, "chat-2"), Deployment(ns, "chat-2"),
			InferenceService(ns, "embed"), Deployment(ns, "embed-predictor"))
	}
	r := new(Recording)
	const min = time.Minute
	for _, p := range pods {
		r.Add(PodOwner("owners", p.Name, p.OwnerKind, p.Owner), 0, min, 1, 1, 1)
	}
	for _, rs := range [][2]string{
		{"chat-predictor-7d9f8c6b5d", "chat-predictor"},
		{"chat-2-predictor-00003-deployment-5f6d7b8c9", "chat-2-predictor-00003-deployment"},
		{"chat-2-6d4b9c8f7", "chat-2"},
		{"embed-predictor-5f6d7b8c9", "embed-predictor"},
	} {
		r.Add(ReplicaSetOwner("owners", rs[0], "Deployment", rs[1]), 0, min, 1, 1, 1)
	}
	for _, metric := range []string{SM, Mem} {
		for _, ns := range []string{"names", "owners"} {
			for i, p := range pods {
				v := i + 10
				if metric == Mem {
					v += 40
				}
				r.Add(UsageOf(metric, ns, p.Name, "kserve-container"), 0, min, v, v, v+1)
			}
		}
	}
	return r, refs
}

// InferenceServiceAttributionPods is what both sources must count for
// InferenceServiceAttribution's workloads at 2 minutes (rendered by Pods):
// the same pods by owner and by name, and none for embed's predictor,
// which the Deployment named as it could be as well.
const InferenceServiceAttributionPods = `names/Deployment/chat-2: chat-2-6d4b9c8f7-q7v2n
names/InferenceService/chat: chat-predictor-7d9f8c6b5d-k8s9q chat-predictor-7d9f8c6b5d-x2b4z
names/InferenceService/chat-2: chat-2-predictor-00002-deployment-6d4b9c8f7-z2x4w chat-2-predictor-00003-deployment-5f6d7b8c9-bcdfg
owners/Deployment/chat-2: chat-2-6d4b9c8f7-q7v2n
owners/InferenceService/chat: chat-predictor-7d9f8c6b5d-k8s9q chat-predictor-7d9f8c6b5d-x2b4z
owners/InferenceService/chat-2: chat-2-predictor-00002-deployment-6d4b9c8f7-z2x4w chat-2-predictor-00003-deployment-5f6d7b8c9-bcdfg
warning: pod names/embed-predictor-5f6d7b8c9-m4n5p counts for no workload: its name fits Deployment embed-predictor, InferenceService embed alike (a Deployment of its predictor's name is either; record kube_deployment_owner (kube-state-metrics v2.18 or later) to tell them apart)
warning: pod owners/embed-predictor-5f6d7b8c9-m4n5p counts for no workload: its Deployment embed-predictor fits Deployment embed-predictor, InferenceService embed alike (a Deployment of its predictor's name is either; record kube_deployment_owner (kube-state-metrics v2.18 or later) to tell them apart)
`
