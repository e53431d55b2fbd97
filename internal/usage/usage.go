// Package usage holds GPU usage as numbers: samples per pod and per metric,
// the window statistics that decisions are made from (peak, coverage,
// age), and what is kept of the samples once a workload is decided (a
// chart and a digest per pod). It is pure: no I/O, no clock. Sources of
// usage (Prometheus, recorded files, traces) produce these values; the
// decision engine consumes them.
package usage

import (
	"math"
	"strings"
	"time"
)

// Metric names one of the two resources a GPU share is judged on.
type Metric string

const (
	// Compute is SM / duty-cycle utilisation.
	Compute Metric = "compute"
	// Memory is GPU memory in use.
	Memory Metric = "memory"
)

// Metrics lists every Metric in a fixed order, for deterministic iteration.
var Metrics = [...]Metric{Compute, Memory}

// Sample is one observation. T is in Unix milliseconds, like Prometheus.
type Sample struct {
	T int64
	V float64
}

// The series a policy reads when it names none: the Kubex exporter's
// gauges, the guide's names, with the labels kube-state-metrics and the
// exporters use. Sources (the metrics presets) map them to other
// exporters' series; the decision math reads them as defaults.
const (
	DefaultComputeMetric  = "kubex_gpu_container_sm_utilization_percent"
	DefaultMemoryMetric   = "kubex_gpu_container_memory_footprint_percent"
	DefaultNamespaceLabel = "namespace"
	DefaultPodLabel       = "pod"
	DefaultContainerLabel = "container"
)

// MaxValue bounds a usable sample: values are percent of one GPU or of an
// allocation, and a million percent (ten thousand GPUs) is no reading of
// one pod. Past it, the arithmetic of a decision could overflow.
const MaxValue = 1e6

// Valid reports whether the sample carries a usable value. NaN, infinities,
// negative values and values past MaxValue are what broken exporters
// emit; they count as missing.
func (s Sample) Valid() bool {
	return s.Finite() && s.V <= MaxValue
}

// Finite reports whether the sample is a reading at all, in any unit: not
// NaN, infinite or negative. Sources check raw series (bytes, ratios)
// with it before they turn them into the percent Valid bounds.
func (s Sample) Finite() bool {
	return !math.IsNaN(s.V) && !math.IsInf(s.V, 0) && s.V >= 0
}

// Ref identifies a workload.
type Ref struct {
	// Cluster names the cluster the workload runs in, as the
	// repository's cluster map names it; "" when the run knows one
	// cluster only (no map). A workload whose definition several
	// clusters deploy alike is one Ref of all of them, their names
	// joined by ClusterSep.
	Cluster   string `json:",omitempty"`
	Namespace string
	Kind      string
	Name      string
}

// ClusterSep joins the clusters of one Ref that several clusters
// deploy from one definition: a cluster name (a DNS label) never holds
// it, and git accepts it in a branch name.
const ClusterSep = "+"

// String is namespace/Kind/name, after cluster: when the ref has one.
func (r Ref) String() string {
	s := r.Namespace + "/" + r.Kind + "/" + r.Name
	if r.Cluster != "" {
		return r.Cluster + ":" + s
	}
	return s
}

// Local is the ref without its cluster: the workload as one cluster's
// manifests name it.
func (r Ref) Local() Ref {
	r.Cluster = ""
	return r
}

// Clusters are the clusters of the ref, nil when it has none.
func (r Ref) Clusters() []string {
	if r.Cluster == "" {
		return nil
	}
	return strings.Split(r.Cluster, ClusterSep)
}

// ParseRef reads what String writes: [cluster:]namespace/Kind/name.
func ParseRef(s string) (Ref, bool) {
	var r Ref
	if c, rest, ok := strings.Cut(s, ":"); ok {
		r.Cluster, s = c, rest
	}
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Ref{}, false
	}
	r.Namespace, r.Kind, r.Name = parts[0], parts[1], parts[2]
	return r, true
}

// Pod is the usage of one pod of a workload.
type Pod struct {
	Name string
	// Start is when the pod started (Unix ms), from kube-state-metrics'
	// kube_pod_start_time; 0 when unknown.
	Start int64
	// Live is true when kube-state-metrics says the pod exists at the
	// evaluation time. Without kube-state-metrics it is false for every pod
	// and liveness is judged from the freshness of samples.
	Live bool
	// Allocation is the GPU share the pod was created with, in GPUs (pods
	// keep theirs until replaced); 0 when the source does not know, and
	// the workload's current allocation is assumed.
	Allocation float64
	// Series holds, per metric, the samples summed over the pod's selected
	// containers, oldest first, in the unit of the metric's source (percent
	// of one GPU, or percent of the current allocation).
	Series map[Metric][]Sample
	// ByDevice marks the metrics whose Series is the pod's busiest
	// device's, at each time, rather than a sum over devices: a percent of
	// one GPU then stands for each of the pod's devices, and a percent of
	// the allocation for the share on each device.
	ByDevice map[Metric]bool
	// digest is what Release kept of Series.
	digest *Digest
}

// Workload is the usage of all pods of one workload over a lookback.
type Workload struct {
	// Step is the expected interval between two samples of one series (the
	// scrape interval). Coverage and gaps are judged against it.
	Step time.Duration
	// Steps holds a metric's own interval where it differs from Step (two
	// exporters can scrape at different rates).
	Steps map[Metric]time.Duration
	// LiveKnown is true when pod liveness comes from kube-state-metrics
	// (Pod.Live is meaningful).
	LiveKnown bool
	Pods      []Pod
	// Partial, when set, says why the source's answer may lack data that
	// exists (e.g. a server that answered with warnings): what is there may
	// justify an upsize, never a scale-back.
	Partial string
	// Unattributed are the pods that may be this workload's but whose
	// owner could not be established, each said as a sentence: they count
	// for no workload, so the data may lack them, and what is there may
	// justify an upsize, never a scale-back.
	Unattributed []string
	// Mixed, when set, says why the data mixes series that should not be
	// combined: two series of one pod, container and device at the same
	// time that differ in a label the query does not tell apart (a second
	// cluster, a Prometheus replica, a device label the preset does not
	// know). Nothing may change on such data.
	Mixed string
	// chart is what Release kept of the pods' samples.
	chart *drawn
}

// StepOf is the sampling interval of metric m.
func (w Workload) StepOf(m Metric) time.Duration {
	if s, ok := w.Steps[m]; ok && s > 0 {
		return s
	}
	return w.Step
}

// Window is the half-open interval (From, To] in Unix milliseconds: a
// sample at exactly To belongs to the window, one at From does not.
type Window struct {
	From, To int64
}

// WindowEnding returns the window of length d that ends at t.
func WindowEnding(t time.Time, d time.Duration) Window {
	to := t.UnixMilli()
	return Window{From: to - d.Milliseconds(), To: to}
}

// Contains reports whether t falls in the window.
func (w Window) Contains(t int64) bool { return t > w.From && t <= w.To }

// Duration is the window's length.
func (w Window) Duration() time.Duration { return time.Duration(w.To-w.From) * time.Millisecond }

// In returns the samples of s inside w. s must be sorted by time.
func In(s []Sample, w Window) []Sample {
	lo := search(s, w.From)
	hi := search(s, w.To)
	return s[lo:hi]
}

// search returns the index of the first sample with T > t.
func search(s []Sample, t int64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].T <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Peak returns the largest valid value in s and how many valid samples
// there were. With no valid sample, ok is false.
func Peak(s []Sample) (peak float64, n int, ok bool) {
	for _, x := range s {
		if !x.Valid() {
			continue
		}
		if n == 0 || x.V > peak {
			peak = x.V
		}
		n++
	}
	return peak, n, n > 0
}

// Coverage describes how completely a series covers a window.
type Coverage struct {
	// Samples is the number of valid samples in the window.
	Samples int
	// Expected is the number of samples a healthy scrape would have produced.
	Expected int
	// MaxGap is the longest stretch of the window without a valid sample,
	// counting the stretches before the first and after the last sample.
	MaxGap time.Duration
	// Complete is true when no gap exceeds the tolerated one.
	Complete bool
}

// GapTolerance is the longest stretch without samples that still counts as
// normal scraping for a series with the given step: one missed scrape, plus
// jitter, is normal; two missed scrapes in a row are a gap.
func GapTolerance(step time.Duration) time.Duration { return 2*step + step/2 }

// Cover measures how s covers w for a series scraped every step. s must be
// sorted by time.
func Cover(s []Sample, w Window, step time.Duration) Coverage {
	c := Coverage{}
	if step > 0 {
		c.Expected = int(w.Duration() / step)
	}
	prev := w.From
	var maxGap int64
	for _, x := range In(s, w) {
		if !x.Valid() {
			continue
		}
		c.Samples++
		if g := x.T - prev; g > maxGap {
			maxGap = g
		}
		prev = x.T
	}
	if g := w.To - prev; g > maxGap {
		maxGap = g
	}
	c.MaxGap = time.Duration(maxGap) * time.Millisecond
	// The first sample of a window can legitimately arrive up to one step
	// after the window opened, and the newest one up to one step before the
	// evaluation time: GapTolerance allows for both.
	c.Complete = c.Samples > 0 && c.MaxGap <= GapTolerance(step)
	return c
}

// FirstSeen returns the time of the pod's oldest valid sample of any metric,
// and false when it has none.
func (p Pod) FirstSeen() (int64, bool) {
	var first int64
	found := false
	for _, m := range Metrics {
		for _, x := range p.Series[m] {
			if !x.Valid() {
				continue
			}
			if !found || x.T < first {
				first, found = x.T, true
			}
			break
		}
	}
	return first, found
}

// Age returns how long the pod has been running at t (Unix ms): from its
// known start, or else from its oldest sample, which makes the age a lower
// bound. ok is false when neither is known.
func (p Pod) Age(t int64) (age time.Duration, ok bool) {
	start := p.Start
	if start == 0 {
		first, found := p.FirstSeen()
		if !found {
			return 0, false
		}
		start = first
	}
	return time.Duration(t-start) * time.Millisecond, true
}
