// Package preset says which exporter's series usage is read from when a
// policy names none: Kubex's, HAMi's or DCGM's, ratios included (HAMi's
// memory used of the limit), and how each exporter writes them — which
// label names a pod's GPU, and which older names a release may still use
// (Kubex's counter beside the gauge its stack records; HAMi before v2.9).
// A preset wraps any usage source, a recording or a live server alike, and
// says which metrics a recording must keep to answer a run's queries.
//
// What each preset reads was checked against the exporters' own source:
// docs/presets.md names the releases.
package preset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

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

// The series the presets read, as their exporters write them.
const (
	// Kubex's exporter (densify-dev/gpu-process-exporter) accumulates SM
	// use per container and device in percent-seconds; Kubex's Prometheus
	// stack records its one-minute rate as the gauge the Kubex guide's
	// policies name.
	kubexSMGauge   = "kubex_gpu_container_sm_utilization_percent"
	kubexSMCounter = "kubex_gpu_container_sm_utilization_percent_seconds_total"
	// kubexMemory is memory used in percent of the container's share of
	// each device: the device's memory, or that times its gpu-fraction.
	kubexMemory = "kubex_gpu_container_memory_footprint_percent"

	hamiUtil  = "hami_container_device_utilization_ratio"
	hamiUsed  = "hami_vgpu_memory_used_bytes"
	hamiLimit = "hami_vgpu_memory_limit_bytes"
	// HAMi before v2.9.0 wrote these names, with the labels podnamespace,
	// podname and ctrname (HAMi v2.8.3, cmd/vGPUmonitor/metrics.go); v2.9
	// and later write them only with --legacy-metrics.
	hamiLegacyUtil  = "Device_utilization_desc_of_container"
	hamiLegacyUsed  = "vGPU_device_memory_usage_in_bytes"
	hamiLegacyLimit = "vGPU_device_memory_limit_in_bytes"

	dcgmUtil   = "DCGM_FI_DEV_GPU_UTIL"
	dcgmFBUsed = "DCGM_FI_DEV_FB_USED"
	dcgmFBFree = "DCGM_FI_DEV_FB_FREE"
)

// DeviceLabel names the label by which an exporter's series tell a pod's
// GPUs apart, from the metric's name; "" for a series of no exporter the
// presets know. Each of these exporters writes one series per container
// and device, so a pod of two GPUs has two of each.
func DeviceLabel(metric string) string {
	switch {
	case strings.HasPrefix(metric, "kubex_gpu_container_"):
		return "gpu_uuid"
	case strings.HasPrefix(metric, "DCGM_FI_"):
		return "UUID"
	case strings.HasPrefix(metric, "hami_"):
		return "device_uuid"
	case metric == hamiLegacyUtil || metric == hamiLegacyUsed || metric == hamiLegacyLimit:
		return "deviceuuid"
	}
	return ""
}

func podMapping(metric, divisor string) usage.Mapping {
	return usage.Mapping{Metric: metric, Divisor: divisor, NamespaceLabel: usage.DefaultNamespaceLabel,
		PodLabel: usage.DefaultPodLabel, ContainerLabel: usage.DefaultContainerLabel, DeviceLabel: DeviceLabel(metric)}
}

func hamiLegacyMapping(metric, divisor string) usage.Mapping {
	return usage.Mapping{Metric: metric, Divisor: divisor, NamespaceLabel: "podnamespace", PodLabel: "podname",
		ContainerLabel: "ctrname", DeviceLabel: DeviceLabel(metric)}
}

// Mappings returns where the preset's exporter stores each metric, in the
// names of its current release. The units match the interpretations
// policies default to: compute in percent of one GPU, memory in percent
// of the allocation.
func (p Preset) Mappings() map[usage.Metric]usage.Mapping {
	out := make(map[usage.Metric]usage.Mapping)
	for m, alts := range p.alternatives() {
		out[m] = alts[0].mapping
	}
	return out
}

// Fallbacks returns where the preset's exporter may store metric m
// instead, when the series of Mappings is not in the store: in the order
// they are tried.
func (p Preset) Fallbacks(m usage.Metric) []usage.Mapping {
	var out []usage.Mapping
	for _, a := range p.alternatives()[m][1:] {
		out = append(out, a.mapping)
	}
	return out
}

// alternative is one way an exporter's release may store a metric, and
// what to say when it is the one read.
type alternative struct {
	mapping usage.Mapping
	note    string
}

// alternatives returns, per metric, the ways the preset's exporter may
// store it, the preferred first.
func (p Preset) alternatives() map[usage.Metric][]alternative {
	switch p {
	case HAMi:
		const legacy = "HAMi before v2.9 (or --legacy-metrics): its current series are not in the store"
		return map[usage.Metric][]alternative{
			usage.Compute: {{mapping: podMapping(hamiUtil, "")}, {mapping: hamiLegacyMapping(hamiLegacyUtil, ""), note: legacy}},
			usage.Memory: {{mapping: podMapping(hamiUsed, hamiLimit)},
				{mapping: hamiLegacyMapping(hamiLegacyUsed, hamiLegacyLimit), note: legacy}},
		}
	case DCGM:
		return map[usage.Metric][]alternative{
			usage.Compute: {{mapping: podMapping(dcgmUtil, "")}},
			// Each device's own memory: used of used + free on that
			// device, the busiest device deciding.
			usage.Memory: {{mapping: podMapping(dcgmFBUsed, dcgmFBUsed+"+"+dcgmFBFree)}},
		}
	}
	return map[usage.Metric][]alternative{
		usage.Compute: {{mapping: podMapping(kubexSMGauge, "")},
			{mapping: podMapping(kubexSMCounter, ""), note: "its rate: the exporter's counter, without the gauge " + kubexSMGauge + " that Kubex's stack records from it"}},
		usage.Memory: {{mapping: podMapping(kubexMemory, "")}},
	}
}

// mappings returns ms with the preset's mappings in place of the
// defaults no policy named (see readFor), each the first alternative has
// reports present (all of them when has is nil), and the notes on those
// that are not the preferred one. Every mapping learns its exporter's
// device label.
func (p Preset) mappings(ms map[usage.Metric]usage.Mapping, has func(string) bool) (map[usage.Metric]usage.Mapping, []string) {
	out := make(map[usage.Metric]usage.Mapping, len(ms))
	var notes []string
	for _, m := range slices.Sorted(maps.Keys(ms)) {
		mp := ms[m]
		if alts := p.readFor(m, mp); alts != nil {
			a := pick(alts, has)
			mp = a.mapping
			if a.note != "" {
				notes = append(notes, fmt.Sprintf("%s read from %s: %s", m, mp.Metric, a.note))
			}
		}
		if mp.DeviceLabel == "" {
			mp.DeviceLabel = DeviceLabel(mp.Metric)
		}
		out[m] = mp
	}
	return out, notes
}

// readFor returns the ways the preset reads metric m where a query asks
// for mp, nil where it reads mp as it is. The default series, with or
// without its device label, is the preset's to map unless a policy named
// it: then it stays Kubex's, in either form Kubex's exporter writes it
// (the gauge or, without it, the counter's rate), whatever the preset.
func (p Preset) readFor(m usage.Metric, mp usage.Mapping) []alternative {
	d := Kubex.Mappings()[m]
	named := mp.Named
	mp.DeviceLabel, d.DeviceLabel, mp.Named = "", "", false
	switch {
	case mp != d:
		return nil
	case named:
		return Kubex.alternatives()[m]
	}
	return p.alternatives()[m]
}

// pick returns the first alternative whose series has reports present,
// or the preferred one when none is: its absence is then what a warning
// names.
func pick(alts []alternative, has func(string) bool) alternative {
	if has != nil {
		for _, a := range alts {
			if has(a.mapping.Metric) {
				return a
			}
		}
	}
	return alts[0]
}

// MetricsOf returns the metrics a source wrapped in the preset reads to
// answer qs (divisors included, and every alternative a release may
// write), sorted: what KeepMetrics needs to open a recording for them.
func (p Preset) MetricsOf(qs []usage.Query) []string {
	names := []string{}
	for _, q := range qs {
		for m, mp := range q.Metrics {
			if alts := p.readFor(m, mp); alts != nil {
				for _, a := range alts {
					names = append(names, a.mapping.Metric)
					names = append(names, a.mapping.Divisors()...)
				}
				continue
			}
			names = append(names, mp.Metric)
			names = append(names, mp.Divisors()...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// candidates returns every metric the preset's alternatives name, and
// Kubex's: a policy that names Kubex's series reads them in any preset.
func (p Preset) candidates() []string {
	var names []string
	for _, pr := range []Preset{p, Kubex} {
		for _, alts := range pr.alternatives() {
			for _, a := range alts {
				names = append(names, a.mapping.Metric)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// usageSource is what a preset wraps: any usage source.
type usageSource interface {
	Usage(ctx context.Context, q usage.Query) (usage.Result, error)
}

// namer is a source that can say which metrics it holds series of, in one
// cheap request: a Prometheus server's label values, a recording's index.
type namer interface {
	MetricNames(ctx context.Context, names []string, at time.Time, lookback time.Duration) ([]string, error)
}

// Source reads a preset's series wherever a query asks for the
// default ones and no policy named them; a policy that names its own
// series keeps them, the default ones included.
type Source struct {
	src    usageSource
	preset Preset

	// once finds, at the first query, which of the preset's series the
	// source holds: has, nil when the source cannot tell.
	once sync.Once
	has  map[string]bool
	note string
}

// Wrap wraps src so that it reads the preset's series.
func Wrap(src usageSource, p Preset) *Source {
	return &Source{src: src, preset: p}
}

// holds reports which of the preset's series the source holds, asking it
// once; nil when the source cannot say. A source that fails to answer
// (a store without the label values API, a server down) is read as if it
// held the preferred series, and note says so: the usage query that
// follows fails on its own if the server is down.
func (s *Source) holds(ctx context.Context, q usage.Query) (has func(string) bool, note string) {
	n, ok := s.src.(namer)
	if !ok {
		return nil, ""
	}
	s.once.Do(func() {
		names, err := n.MetricNames(ctx, s.preset.candidates(), q.At, q.Lookback)
		if err != nil {
			s.note = fmt.Sprintf("the %s preset could not ask which of its series the source holds, and reads its current ones: %v", s.preset, err)
			return
		}
		s.has = make(map[string]bool, len(names))
		for _, name := range names {
			s.has[name] = true
		}
	})
	if s.has == nil {
		return nil, s.note
	}
	return func(name string) bool { return s.has[name] }, ""
}

// Usage answers q from the wrapped source, with the preset's mappings in
// place of the defaults.
func (s *Source) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	has, note := s.holds(ctx, q)
	var notes []string
	q.Metrics, notes = s.preset.mappings(q.Metrics, has)
	if note != "" {
		notes = append(notes, note)
	}
	res, err := s.src.Usage(ctx, q)
	if err != nil {
		return res, err
	}
	res.Warnings = append(notes, res.Warnings...)
	if s.preset != DCGM {
		return res, nil
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
