// Package neighbours finds noisy neighbours on shared GPUs (docs/fleet.md):
// for each device with per-device usage, the minutes it was saturated
// and, during them, which of the pods sharing it used more than their
// share, by how much, and beside whom. It is a functional core: the
// devices and their samples come in as values, read by the caller from
// HAMi's per-device series, and the same input always gives the same
// findings.
package neighbours

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// SaturatedAt is the device utilization, as a fraction of the GPU, at or
// above which a device counts as saturated: its tenants then wait on each
// other.
const SaturatedAt = 0.9

// Device is one GPU and what was measured on it.
type Device struct {
	Node string
	// ID names the device: its UUID, else its index on the node.
	ID string
	// Util is the device's own utilization, 0 to 1; nil when the exporter
	// gives none, and the tenants' sum stands for it.
	Util []usage.Sample
	// Tenants are the pods that used the device.
	Tenants []Tenant
}

// Tenant is a pod's use of one device.
type Tenant struct {
	// Pod is namespace/name.
	Pod      string
	Workload usage.Ref
	// Share is the pod's share of the device (its gpu-fraction, 1 for a
	// whole GPU); 0 when unknown, and the pod is then named as a co-tenant
	// but never as above its share.
	Share float64
	// Compute is its use of the device, 0 to 1 of the GPU.
	Compute []usage.Sample
	// Memory is its memory used over its HAMi-core limit, 0 to 1; nil
	// when the exporter gives no limit.
	Memory []usage.Sample
}

// Finding is one device that was saturated.
type Finding struct {
	Node   string `json:"node"`
	Device string `json:"device"`
	// Saturated is how long it was: the saturated samples, each counting
	// the device's scrape interval. JSON has it in minutes.
	Saturated time.Duration `json:"-"`
	// Uses are the tenants during those minutes, the most above its share
	// first.
	Uses []Use `json:"uses"`
}

// MarshalJSON writes Saturated in minutes, as a reader counts them.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	return json.Marshal(struct {
		plain
		SaturatedMinutes float64 `json:"saturatedMinutes"`
	}{plain(f), f.Saturated.Minutes()})
}

// Use is a tenant's use of a saturated device while it was saturated.
type Use struct {
	Pod      string    `json:"pod"`
	Workload usage.Ref `json:"workload"`
	Share    float64   `json:"share"`
	// Used is its mean use of the device, 0 to 1, over the saturated
	// samples it reported in.
	Used float64 `json:"used"`
	// Over is true when Used is beyond Share on KAI's grid.
	Over bool `json:"over"`
	// MemoryPeak is its most memory used over its HAMi-core limit in
	// those minutes; negative when unknown.
	MemoryPeak float64 `json:"memoryPeak"`
}

// Find reports every device saturated within (at−window, at], in the
// order of node then device. The samples of a device are read at its own
// utilization's times; a tenant's value at such a time is its newest
// sample no older than two scrape intervals.
func Find(devices []Device, at time.Time, window time.Duration) []Finding {
	from, to := at.Add(-window).UnixMilli(), at.UnixMilli()
	var out []Finding
	for _, d := range devices {
		if f, ok := find(d, from, to); ok {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Device, b.Device)) })
	return out
}

func find(d Device, from, to int64) (Finding, bool) {
	util := d.Util
	if util == nil {
		util = summed(d.Tenants)
	}
	util = within(util, from, to)
	step := interval(util)
	var saturated []int64
	for _, x := range util {
		if valid(x.V) && x.V >= SaturatedAt-1e-9 {
			saturated = append(saturated, x.T)
		}
	}
	if len(saturated) == 0 {
		return Finding{}, false
	}
	f := Finding{Node: d.Node, Device: d.ID, Saturated: time.Duration(len(saturated)) * time.Duration(step) * time.Millisecond}
	for _, t := range d.Tenants {
		u := Use{Pod: t.Pod, Workload: t.Workload, Share: t.Share, MemoryPeak: -1}
		var sum float64
		n := 0
		for _, at := range saturated {
			if v, ok := valueAt(t.Compute, at, 2*step); ok {
				sum += v
				n++
			}
			if v, ok := valueAt(t.Memory, at, 2*step); ok {
				u.MemoryPeak = math.Max(u.MemoryPeak, v)
			}
		}
		if n == 0 {
			continue
		}
		// Rounded to a ten-thousandth: a mean of scraped percentages
		// carries binary noise no reader needs.
		u.Used = math.Round(sum/float64(n)*1e4) / 1e4
		u.Over = t.Share > 0 && kai.Above(u.Used, t.Share)
		f.Uses = append(f.Uses, u)
	}
	slices.SortFunc(f.Uses, func(a, b Use) int {
		return cmp.Or(cmp.Compare(b.Used-b.Share, a.Used-a.Share), cmp.Compare(a.Pod, b.Pod))
	})
	return f, true
}

func valid(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// within keeps the samples in (from, to].
func within(xs []usage.Sample, from, to int64) []usage.Sample {
	var out []usage.Sample
	for _, x := range xs {
		if x.T > from && x.T <= to {
			out = append(out, x)
		}
	}
	return out
}

// interval is the median time between samples, in milliseconds: the
// scrape interval; a lone sample counts a minute.
func interval(xs []usage.Sample) int64 {
	if len(xs) < 2 {
		return time.Minute.Milliseconds()
	}
	d := make([]int64, 0, len(xs)-1)
	for i := 1; i < len(xs); i++ {
		d = append(d, xs[i].T-xs[i-1].T)
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// valueAt is the newest valid sample at or before t, no older than
// maxAge.
func valueAt(xs []usage.Sample, t, maxAge int64) (float64, bool) {
	i, _ := slices.BinarySearchFunc(xs, t+1, func(x usage.Sample, t int64) int { return cmp.Compare(x.T, t) })
	if i == 0 || xs[i-1].T <= t-maxAge || !valid(xs[i-1].V) {
		return 0, false
	}
	return xs[i-1].V, true
}

// summed is the tenants' compute added up at the times of any of them,
// for a device whose own utilization is not exported.
func summed(ts []Tenant) []usage.Sample {
	var times []int64
	for _, t := range ts {
		for _, x := range t.Compute {
			times = append(times, x.T)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	var step int64 = time.Minute.Milliseconds()
	if len(ts) > 0 {
		step = interval(ts[0].Compute)
	}
	out := make([]usage.Sample, 0, len(times))
	for _, at := range times {
		var sum float64
		for _, t := range ts {
			if v, ok := valueAt(t.Compute, at, 2*step); ok {
				sum += v
			}
		}
		out = append(out, usage.Sample{T: at, V: sum})
	}
	return out
}

// Sentences say, for each workload with a pod above its share on a
// saturated device, what it did there, for its pull request: the
// minutes, its use against its share, who shared the device, and which
// limit would have held it. hamiCore says HAMi-core enforces memory.
func (f Finding) Sentences(hamiCore bool) map[usage.Ref][]string {
	out := map[usage.Ref][]string{}
	for _, u := range f.Uses {
		if !u.Over {
			continue
		}
		var others []string
		for _, o := range f.Uses {
			if o.Pod != u.Pod {
				others = append(others, o.Workload.Name)
			}
		}
		s := fmt.Sprintf("while GPU %s on %s was saturated for %s, %s used %s of it against a share of %s",
			f.Device, f.Node, minutes(f.Saturated), u.Workload.Name, kai.FormatFraction(u.Used), kai.FormatFraction(u.Share))
		if len(others) > 0 {
			s += ", beside " + strings.Join(others, ", ")
		}
		out[u.Workload] = append(out[u.Workload], s+"; "+u.limits(hamiCore))
	}
	return out
}

// limits says which limit would have held the pod to its share: HAMi-core
// enforces a pod's memory, not its compute.
func (u Use) limits(hamiCore bool) string {
	switch {
	case hamiCore && u.MemoryPeak >= 0:
		return fmt.Sprintf("HAMi-core held its memory (at most %.0f%% of its limit) but does not limit compute: only a compute limit (HAMi's gpucores) would have held it to %s",
			100*u.MemoryPeak, kai.FormatFraction(u.Share))
	case hamiCore:
		return "HAMi-core holds memory, not compute: only a compute limit (HAMi's gpucores) would have held it to " + kai.FormatFraction(u.Share)
	}
	return "without HAMi-core neither its memory nor its compute is limited: a gpu-fraction is what KAI schedules by, not a limit"
}

// minutes writes a duration in whole minutes, as a reviewer reads it.
func minutes(d time.Duration) string {
	m := int(math.Round(d.Minutes()))
	if m == 1 {
		return "1 minute"
	}
	return fmt.Sprintf("%d minutes", m)
}
