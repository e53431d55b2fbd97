package metricstest

import "time"

// fleetSamples is 26 hours a minute apart: more than the day of history
// a scale-back needs.
const fleetSamples = 26 * 60

// FleetAt is the time of Fleet's last sample.
var FleetAt = T0.Add((fleetSamples - 1) * time.Minute)

// Fleet is one store holding two clusters under the label cluster, as
// Thanos or Mimir would, for the workloads of examples/clusters. In each,
// the StatefulSet pod llm-0 (one pod name in both) uses 30 % of a GPU's
// compute and 30 % of its share's memory. summarize runs one pod per
// cluster from one ReplicaSet name (its template's hash): quiet in
// eu-west-1 (15 % compute), hot in us-east-1 (50 %, then 75 % in the last
// five minutes, over its 0.6 of a GPU).
func Fleet() *Recording {
	r := new(Recording)
	flat := func(v float64) []any {
		vs := make([]any, fleetSamples)
		for i := range vs {
			vs[i] = v
		}
		return vs
	}
	tail := func(before, after float64, last int) []any {
		vs := flat(before)
		for i := fleetSamples - last; i < fleetSamples; i++ {
			vs[i] = after
		}
		return vs
	}
	for _, c := range []struct {
		value, pod string
		summarize  []any
	}{
		{"eu-west-1", "summarize-6b8f9c7d5-t4hxm", flat(15)},
		{"us-east-1", "summarize-6b8f9c7d5-q9zrw", tail(50, 75, 5)},
	} {
		in := func(name string, pairs ...string) string {
			return Series(name, append(pairs, "cluster", c.value)...)
		}
		add := func(series string, vs []any) { r.Add(series, 0, time.Minute, vs...) }
		started := flat(float64(T0.Add(-time.Hour).Unix()))
		add(in("kube_pod_owner", "namespace", "inference", "pod", "llm-0", "uid", c.value+"-llm-0",
			"owner_kind", "StatefulSet", "owner_name", "llm", "owner_is_controller", "true"), flat(1))
		add(in("kube_pod_start_time", "namespace", "inference", "pod", "llm-0", "uid", c.value+"-llm-0"), started)
		add(in(SM, "namespace", "inference", "pod", "llm-0", "container", "vllm"), flat(30))
		add(in(KubexMemory, "namespace", "inference", "pod", "llm-0", "container", "vllm"), flat(30))

		add(in("kube_pod_owner", "namespace", "inference", "pod", c.pod, "uid", c.value+"-summarize",
			"owner_kind", "ReplicaSet", "owner_name", "summarize-6b8f9c7d5", "owner_is_controller", "true"), flat(1))
		add(in("kube_replicaset_owner", "namespace", "inference", "replicaset", "summarize-6b8f9c7d5",
			"owner_kind", "Deployment", "owner_name", "summarize", "owner_is_controller", "true"), flat(1))
		add(in("kube_pod_start_time", "namespace", "inference", "pod", c.pod, "uid", c.value+"-summarize"), started)
		add(in(SM, "namespace", "inference", "pod", c.pod, "container", "server"), c.summarize)
		add(in(KubexMemory, "namespace", "inference", "pod", c.pod, "container", "server"), flat(30))
	}
	return r
}
