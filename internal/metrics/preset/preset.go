// Package preset says which exporter's series usage is read from when a
// policy names none: Kubex's, HAMi's or DCGM's, ratios included (HAMi's
// memory used of the limit). A preset wraps any usage source, a recording
// or a live server alike, and says which metrics a recording must keep to
// answer a run's queries.
package preset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Preset names the exporter that usage series come from, for policies
// that do not name their series (docs/design.md §2).
type Preset string

const (
	// Kubex reads Kubex's gpu-process-exporter
	// (kubex_gpu_container_*), the policies' own default.
	Kubex Preset = "kubex"
	// HAMi reads HAMi's vGPU monitor, or kai-resource-isolator's
	// kai-vgpu-monitor: SM utilisation of each container's device
	// (hami_container_device_utilization_ratio, 0-100) and memory used of
	// the container's limit (hami_vgpu_memory_used_bytes ÷
	// hami_vgpu_memory_limit_bytes, which HAMi-core sets to the share).
	// Behind a ServiceMonitor without honorLabels their labels arrive as
	// exported_*, which every source reads.
	HAMi Preset = "hami"
	// DCGM reads NVIDIA's dcgm-exporter: device utilisation
	// (DCGM_FI_DEV_GPU_UTIL, 0-100) and framebuffer used of the total
	// (DCGM_FI_DEV_FB_USED ÷ (FB_USED + FB_FREE)), by the pod labels of
	// its Kubernetes mode. DCGM gives a shared GPU to one pod (under KAI,
	// to the reservation pod), so it serves whole-GPU workloads only:
	// pods known to hold a gpu-fraction are not read.
	DCGM Preset = "dcgm"
)

// All lists the presets, in the order help text shows them.
func All() []Preset { return []Preset{Kubex, HAMi, DCGM} }

// Parse reads a preset's name.
func Parse(s string) (Preset, error) {
	for _, p := range All() {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, len(All()))
	for i, p := range All() {
		names[i] = string(p)
	}
	return "", fmt.Errorf("unknown metrics preset %q: use %s", s, strings.Join(names, ", "))
}

func podMapping(metric, divisor string) usage.Mapping {
	return usage.Mapping{Metric: metric, Divisor: divisor, NamespaceLabel: usage.DefaultNamespaceLabel,
		PodLabel: usage.DefaultPodLabel, ContainerLabel: usage.DefaultContainerLabel}
}

// Mappings returns where the preset's exporter stores each metric. The
// units match the interpretations policies default to: compute in
// percent of one GPU, memory in percent of the allocation.
func (p Preset) Mappings() map[usage.Metric]usage.Mapping {
	switch p {
	case HAMi:
		return map[usage.Metric]usage.Mapping{
			usage.Compute: podMapping("hami_container_device_utilization_ratio", ""),
			usage.Memory:  podMapping("hami_vgpu_memory_used_bytes", "hami_vgpu_memory_limit_bytes"),
		}
	case DCGM:
		return map[usage.Metric]usage.Mapping{
			usage.Compute: podMapping("DCGM_FI_DEV_GPU_UTIL", ""),
			// Summed over a pod's devices before dividing: the share of
			// its own memory, whatever the number of GPUs.
			usage.Memory: podMapping("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED+DCGM_FI_DEV_FB_FREE"),
		}
	}
	return map[usage.Metric]usage.Mapping{
		usage.Compute: podMapping(usage.DefaultComputeMetric, ""),
		usage.Memory:  podMapping(usage.DefaultMemoryMetric, ""),
	}
}

// mappings returns ms with the preset's mappings in place of the
// defaults.
func (p Preset) mappings(ms map[usage.Metric]usage.Mapping) map[usage.Metric]usage.Mapping {
	defaults, preset := Kubex.Mappings(), p.Mappings()
	out := make(map[usage.Metric]usage.Mapping, len(ms))
	for m, mp := range ms {
		if mp == defaults[m] {
			mp = preset[m]
		}
		out[m] = mp
	}
	return out
}

// MetricsOf returns the metrics a source wrapped in the preset reads to
// answer qs (divisors included), sorted: what KeepMetrics needs to open a
// recording for them.
func (p Preset) MetricsOf(qs []usage.Query) []string {
	names := []string{}
	for _, q := range qs {
		for _, mp := range p.mappings(q.Metrics) {
			names = append(names, mp.Metric)
			names = append(names, mp.Divisors()...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// usageSource is what a preset wraps: any usage source.
type usageSource interface {
	Usage(ctx context.Context, q usage.Query) (usage.Result, error)
}

// Source reads a preset's series wherever a query asks for the
// default ones; a policy that names its own series keeps them.
type Source struct {
	src    usageSource
	preset Preset
}

// Wrap wraps src so that it reads the preset's series.
func Wrap(src usageSource, p Preset) *Source {
	return &Source{src: src, preset: p}
}

// Usage answers q from the wrapped source, with the preset's mappings in
// place of the defaults.
func (s *Source) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	q.Metrics = s.preset.mappings(q.Metrics)
	res, err := s.src.Usage(ctx, q)
	if err != nil || s.preset != DCGM {
		return res, err
	}
	for _, ref := range slices.SortedFunc(maps.Keys(res.Workloads), func(a, b usage.Ref) int { return strings.Compare(a.String(), b.String()) }) {
		w := res.Workloads[ref]
		for _, p := range w.Pods {
			if p.Allocation > 0 && p.Allocation < 1 {
				// The device's numbers are not this pod's: reading them
				// as its own would be wrong both ways.
				delete(res.Workloads, ref)
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: pod %s holds a gpu-fraction of %g, and DCGM cannot tell a shared GPU's pods apart: its usage is not read (use the hami or kubex preset)",
					ref, p.Name, p.Allocation))
				break
			}
		}
	}
	return res, nil
}
