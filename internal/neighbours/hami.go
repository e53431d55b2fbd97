package neighbours

import (
	"cmp"
	"maps"
	"slices"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// HAMi's vGPU monitor's per-device series (HAMi v2.9 names; the
// kai-vgpu-monitor of KAI-resource-isolator exports the same). The
// container series are labelled namespace, pod, container,
// vdevice_index and device_uuid (exported_* behind a ServiceMonitor
// without honorLabels); the host series device_index and device_uuid,
// and node where the monitor sets it. Utilization is 0 to 100.
const (
	hamiCompute     = "hami_container_device_utilization_ratio"
	hamiMemoryUsed  = "hami_vgpu_memory_used_bytes"
	hamiMemoryLimit = "hami_vgpu_memory_limit_bytes"
	hamiHostUtil    = "hami_host_gpu_utilization_ratio"
)

// HAMiMetrics are the series FromHAMi reads.
func HAMiMetrics() []string {
	return []string{hamiCompute, hamiMemoryUsed, hamiMemoryLimit, hamiHostUtil}
}

// Pod is what the placement says of a pod: its workload, node and share
// of each of its devices.
type Pod struct {
	Workload usage.Ref
	Node     string
	Share    float64
}

// FromHAMi builds the devices HAMi's series describe, keyed by device
// UUID: each device's own utilization, and each pod's compute and memory
// on it, summed over its containers. pods (by namespace/name) give the
// tenants' workloads and shares; a pod missing from them is still a
// co-tenant, of its own name and an unknown share. A device's node is
// its series' node label, else its tenants' node.
func FromHAMi(ss []metrics.Series, pods map[string]Pod) []Device {
	devs := map[string]*Device{}
	type tenantKey struct{ dev, pod string }
	compute := map[tenantKey][][]usage.Sample{}
	used := map[tenantKey][][]usage.Sample{}
	limit := map[tenantKey][][]usage.Sample{}
	device := func(uuid string) *Device {
		d := devs[uuid]
		if d == nil {
			d = &Device{ID: uuid}
			devs[uuid] = d
		}
		return d
	}
	for i := range ss {
		s := &ss[i]
		uuid := metrics.LabelValue(s.Labels, "device_uuid")
		if uuid == "" {
			continue
		}
		key := tenantKey{uuid, metrics.LabelValue(s.Labels, "namespace") + "/" + metrics.LabelValue(s.Labels, "pod")}
		switch s.Metric {
		case hamiHostUtil:
			d := device(uuid)
			d.Util = scaled(s.Samples, 0.01)
			if n := metrics.LabelValue(s.Labels, "node"); n != "" {
				d.Node = n
			}
		case hamiCompute:
			device(uuid)
			compute[key] = append(compute[key], scaled(s.Samples, 0.01))
		case hamiMemoryUsed:
			used[key] = append(used[key], s.Samples)
		case hamiMemoryLimit:
			limit[key] = append(limit[key], s.Samples)
		}
	}
	for key, cs := range compute {
		d := devs[key.dev]
		p, known := pods[key.pod]
		t := Tenant{Pod: key.pod, Workload: p.Workload, Share: p.Share, Compute: sum(cs)}
		if !known {
			ns, name := splitKey(key.pod)
			t.Workload = usage.Ref{Namespace: ns, Kind: "Pod", Name: name}
		}
		if u, l := sum(used[key]), sum(limit[key]); len(u) > 0 && len(l) > 0 {
			t.Memory = ratio(u, l)
		}
		if d.Node == "" {
			d.Node = p.Node
		}
		d.Tenants = append(d.Tenants, t)
	}
	out := make([]Device, 0, len(devs))
	for _, uuid := range slices.Sorted(maps.Keys(devs)) {
		d := devs[uuid]
		slices.SortFunc(d.Tenants, func(a, b Tenant) int { return cmp.Compare(a.Pod, b.Pod) })
		out = append(out, *d)
	}
	return out
}

func splitKey(k string) (ns, name string) {
	for i := range k {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return "", k
}

func scaled(xs []usage.Sample, f float64) []usage.Sample {
	out := make([]usage.Sample, len(xs))
	for i, x := range xs {
		out[i] = usage.Sample{T: x.T, V: x.V * f}
	}
	return out
}

// sum adds the series (a pod's containers) sample by sample at the times
// they share; a time not every series reports is left out rather than
// counted short.
func sum(series [][]usage.Sample) []usage.Sample {
	if len(series) == 0 {
		return nil
	}
	count := map[int64]int{}
	total := map[int64]float64{}
	for _, s := range series {
		for _, x := range s {
			count[x.T]++
			total[x.T] += x.V
		}
	}
	var out []usage.Sample
	for _, t := range slices.Sorted(maps.Keys(count)) {
		if count[t] == len(series) {
			out = append(out, usage.Sample{T: t, V: total[t]})
		}
	}
	return out
}

// ratio divides a by b at the times both have, where b is positive.
func ratio(a, b []usage.Sample) []usage.Sample {
	by := map[int64]float64{}
	for _, x := range b {
		by[x.T] = x.V
	}
	var out []usage.Sample
	for _, x := range a {
		if d, ok := by[x.T]; ok && d > 0 {
			out = append(out, usage.Sample{T: x.T, V: x.V / d})
		}
	}
	return out
}
