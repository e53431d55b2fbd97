package backtest

import (
	"math"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// VPA is the Kubernetes Vertical Pod Autoscaler carried over to a GPU share,
// following kubernetes/autoscaler vertical-pod-autoscaler at its default
// settings:
//
//   - pkg/recommender/util/histogram.go, histogram_options.go,
//     decaying_histogram.go: exponential buckets, each 5 % wider than the
//     last, whose percentile is the end of the bucket it falls in; sample
//     weights double every 24 h half-life.
//   - pkg/recommender/model/aggregations_config.go, aggregate_container_state.go,
//     container.go: compute samples of equal weight; memory as one peak per
//     container per 24 h interval, weighted at the interval's end; 8 days of
//     history; after an out-of-memory kill, a peak of max(+20 %, +100 MB)
//     over the larger of the request and the interval's peak.
//   - pkg/recommender/logic/recommender.go, estimator.go, config/config.go:
//     target p90, lower bound p50, upper bound p95, each + 15 %; the upper
//     bound × (1 + 1/confidence), the lower × (1 + 0.001/confidence)^−2,
//     confidence being the days of history (the lesser of its span and its
//     samples at one a minute).
//   - pkg/updater/priority/update_priority_calculator.go, priority_processor.go:
//     a pod is evicted when its request is outside [lower, upper], or when it
//     is at least 12 h old and the target differs by at least 10 %, or when
//     its container was last killed for memory within 10 minutes of its
//     start.
//
// The rules are read as they apply to one resource (kubernetes/autoscaler
// at commit 55c37cd5eb550756c5ccc5a89e9068d77797e575,
// vertical-pod-autoscaler/pkg):
//
//   - the share is one resource VPA does not know, which must hold both
//     compute and memory: its recommendation is the larger of the two
//     resources' target, lower bound and upper bound. The updater then
//     tests the share against that one range and measures the change
//     against that one target, as updater/priority/priority_processor.go
//     L65-93 does for each resource it knows. Testing the one share
//     against each resource's range (Reading.PerResource, a labelled
//     sensitivity row) puts a share set by memory above compute's upper
//     bound, and evicts whenever the target moves: a departure that
//     favoured us.
//   - updater/priority/update_priority_calculator.go L119-126: a quick OOM
//     is the container's last termination (LastTerminationState), an
//     OOMKilled whose run, from the container's start to the kill, was under
//     10 minutes; L149-153: then evicted only if the resources change.
//   - updater/restriction/pods_restriction_factory.go L180-203 and
//     updater/config/config.go L62: a workload with fewer replicas than
//     min-replicas (2, or the VPA's updatePolicy.minReplicas) is never
//     evicted.
//   - recommender/model/container.go L158-201: each interval's peak is added
//     at its first sample and replaced only by a larger one when the peak is
//     not 0 (L169); a first sample of 0 bytes freezes the interval at 0,
//     OOM samples included. VPA reads a container's working set, which is
//     never 0 bytes while it runs; GPU memory is, until the model loads. So
//     a pod's samples before its first one above 0 bytes are not fed: the
//     freeze applies only where the pod has held GPU memory and then reads
//     0, where upstream's would.
//   - an eviction deletes the pod: it restarts (Config.Restart) as after a
//     kill, where a merged change rolls the Deployment without a gap.
//
// The reading of round two, kinder to VPA, is kept as a sensitivity row
// (Kind): a quick OOM timed from the pod's start, the peak never frozen,
// and evictions without a restart.
type VPA struct {
	Bounds Bounds
	// Auto applies every eviction at once and decides at every sample, as
	// VPA's recommender and updater loops do (every minute) in updateMode
	// Auto; otherwise each eviction VPA would make is a pull request at the
	// job's cadence.
	Auto bool
	// GPUMemoryBytes is the card's memory, for the memory histogram's
	// smallest bucket (10 MB); 0 means 80 GiB.
	GPUMemoryBytes float64
	// Replicas is the workload's replica count, and MinReplicas the
	// updater's: with fewer replicas, VPA Auto evicts nothing. 0 means 1
	// and 1: a trace is one pod, and a single-replica workload is evicted
	// only under updatePolicy.minReplicas: 1, which its owner would set.
	Replicas, MinReplicas int
	// Reading is how the updater's rules are read; zero is literally.
	Reading VPAReading
}

// VPAReading names the departures from the headline reading a
// sensitivity row makes.
type VPAReading struct {
	// PerResource tests the share against each resource's range and sums
	// the change over both resources, as if the share were two requests:
	// the literal reading of earlier rounds, harsher on VPA.
	PerResource bool
	// Kind adds every reading of round two, kinder to VPA: a quick OOM
	// timed from the pod's start, no frozen peak, evictions free.
	Kind bool
	// Label names the row.
	Label string
}

// Defaults of the VPA recommender and updater (see VPA's doc for sources).
const (
	vpaHalfLife        = 24 * time.Hour
	vpaHistory         = 8 * 24 * time.Hour
	vpaPeakInterval    = 24 * time.Hour
	vpaConfidenceDay   = 24 * time.Hour
	vpaBucketGrowth    = 0.05
	vpaFirstCPUBucket  = 0.01 // cores, here GPUs of compute
	vpaFirstMemBucket  = 1e7  // bytes
	vpaTarget          = 0.90
	vpaLower           = 0.50
	vpaUpper           = 0.95
	vpaMargin          = 0.15
	vpaPodLifetime     = 12 * time.Hour
	vpaMinChange       = 0.10
	vpaQuickOOM        = 10 * time.Minute
	vpaOOMBumpRatio    = 1.2
	vpaOOMMinBumpBytes = 100 * 1024 * 1024
	defaultGPUMemory   = 80 * 1024 * 1024 * 1024
)

func (v VPA) Name() string {
	n := "vpa"
	if v.Auto {
		n = "vpa-auto"
	}
	if v.Reading.Label != "" {
		n += ", " + v.Reading.Label
	}
	return n
}

// oneResource tests the share as the one resource it is.
func (v VPA) oneResource() bool { return !v.Reading.PerResource }

// EveryStep makes VPA Auto decide at every sample.
func (v VPA) EveryStep() bool { return v.Auto }

// VPARecommendation is what VPA's recommender publishes, in GPUs.
type VPARecommendation struct {
	// Target, Lower and Upper are the larger of the two resources'.
	Target, Lower, Upper float64
	// Compute and Memory are each resource's.
	Compute, Memory VPABounds
	// Confidence is the history in days.
	Confidence float64
	// Samples counts the compute samples aggregated: with none, VPA has
	// no recommendation.
	Samples int
}

// VPABounds is one resource's recommendation, in GPUs.
type VPABounds struct{ Target, Lower, Upper float64 }

// histogram is VPA's exponential histogram: bucket n starts at
// first·(1.05ⁿ − 1)/0.05.
type histogram struct {
	first   float64
	weights []float64
	total   float64
}

func (h *histogram) bucket(v float64) int {
	if v < h.first {
		return 0
	}
	r := 1 + vpaBucketGrowth
	return int(math.Log(v*(r-1)/h.first+1) / math.Log(r))
}

func (h *histogram) start(b int) float64 {
	if b == 0 {
		return 0
	}
	r := 1 + vpaBucketGrowth
	return h.first * (math.Pow(r, float64(b)) - 1) / (r - 1)
}

func (h *histogram) add(v, w float64) {
	b := h.bucket(v)
	for len(h.weights) <= b {
		h.weights = append(h.weights, 0)
	}
	h.weights[b] += w
	h.total += w
}

// percentile is the end of the bucket where the cumulative weight reaches
// p of the total (0 when empty).
func (h *histogram) percentile(p float64) float64 {
	if h.total == 0 {
		return 0
	}
	var sum float64
	last := len(h.weights) - 1
	b := 0
	for ; b < last; b++ {
		sum += h.weights[b]
		if sum >= p*h.total {
			break
		}
	}
	return h.start(b + 1)
}

// Recommend builds VPA's histograms from the past and reads its
// recommendation. ooms are the times of memory kills, each at the
// allocation then in effect.
func (v VPA) Recommend(s State) VPARecommendation {
	memBytes := v.GPUMemoryBytes
	if memBytes == 0 {
		memBytes = defaultGPUMemory
	}
	from := s.At - vpaHistory.Milliseconds()
	w := usage.Window{From: from, To: s.At}
	decay := func(t int64) float64 { return math.Exp2(float64(t-s.At) / float64(vpaHalfLife.Milliseconds())) }

	cpu := &histogram{first: vpaFirstCPUBucket}
	var first, last int64
	var n int
	for _, x := range usage.In(s.Past.Compute, w) {
		if !x.Valid() {
			continue
		}
		cpu.add(x.V/100, decay(x.T))
		if n == 0 {
			first = x.T
		}
		last = x.T
		n++
	}
	// Memory: one peak per container per interval. Every allocation is a
	// pod of its own; its intervals start at its first sample.
	mem := &histogram{first: vpaFirstMemBucket / memBytes}
	kind := v.Reading.Kind
	changes := s.Allocations.Changes
	for i, ch := range changes {
		end := s.At
		if i+1 < len(changes) {
			end = changes[i+1].T - 1
		}
		span := usage.Window{From: max(ch.T-1, from), To: min(end, s.At)}
		if span.To <= span.From {
			// The pod ended before the history VPA keeps.
			continue
		}
		var windowEnd int64
		// peak is the interval's peak; seen, that of its samples alone,
		// which an OOM bump starts from (container.go RecordOOM).
		// frozen: the interval began at 0 bytes (container.go L169).
		peak, seen, have, frozen := 0.0, 0.0, false, false
		loaded := loadedAt(s.Past.Memory, usage.Window{From: ch.T - 1, To: min(end, s.At)}, memBytes)
		add := func(t int64, v float64, oom bool) {
			if !have || t >= windowEnd {
				if have {
					mem.add(peak, decay(windowEnd))
				} else {
					windowEnd = t
				}
				iv := vpaPeakInterval.Milliseconds()
				windowEnd += (t-windowEnd)/iv*iv + iv
				peak, seen, have = 0, 0, true
				frozen = !oom && v*memBytes < 1 && !kind
			}
			if frozen {
				return
			}
			if oom {
				used := max(ch.Alloc.GPUs, seen)
				v = max(used+vpaOOMMinBumpBytes/memBytes, used*vpaOOMBumpRatio)
			} else {
				seen = max(seen, v)
			}
			peak = max(peak, v)
		}
		kills := s.OOMKills
		for _, x := range usage.In(s.Past.Memory, span) {
			if !x.Valid() {
				continue
			}
			for len(kills) > 0 && kills[0].T <= x.T {
				if span.Contains(kills[0].T) {
					add(kills[0].T, 0, true)
				}
				kills = kills[1:]
			}
			if x.T < loaded {
				// Loading: no GPU memory yet, where a working set would
				// not be 0.
				continue
			}
			add(x.T, x.V/100, false)
		}
		for _, k := range kills {
			if span.Contains(k.T) {
				add(k.T, 0, true)
			}
		}
		if have {
			mem.add(peak, decay(windowEnd))
		}
	}
	// Samples are counted as VPA's one a minute would be: a trace sampled
	// every 10 minutes stands for ten.
	perMinute := float64(s.Past.Step) / float64(time.Minute)
	conf := math.Min(float64(last-first)/float64(vpaConfidenceDay.Milliseconds()),
		float64(n)*perMinute/vpaConfidenceDay.Minutes())
	of := func(h *histogram) VPABounds {
		return VPABounds{
			Target: h.percentile(vpaTarget) * (1 + vpaMargin),
			Lower:  h.percentile(vpaLower) * (1 + vpaMargin) * math.Pow(1+0.001/conf, -2),
			Upper:  h.percentile(vpaUpper) * (1 + vpaMargin) * (1 + 1/conf),
		}
	}
	c, m := of(cpu), of(mem)
	return VPARecommendation{
		Target: max(c.Target, m.Target), Lower: max(c.Lower, m.Lower), Upper: max(c.Upper, m.Upper),
		Compute: c, Memory: m,
		Confidence: conf,
		Samples:    n,
	}
}

// loadedAt is the time of a pod's first memory sample above 0 bytes, in
// w (the pod's life), or the end of w when it has none.
func loadedAt(mem []usage.Sample, w usage.Window, memBytes float64) int64 {
	for _, x := range usage.In(mem, w) {
		if x.Valid() && x.V/100*memBytes >= 1 {
			return x.T
		}
	}
	return w.To + 1
}

func (v VPA) Decide(s State) Proposal {
	r := v.Recommend(s)
	if r.Samples == 0 {
		return Proposal{Target: s.Current}
	}
	if v.Auto && max(v.Replicas, 1) < max(v.MinReplicas, 1) {
		// The updater leaves the workload alone (pods_restriction_factory.go
		// L196-203).
		return Proposal{Target: s.Current}
	}
	cur := s.Current.GPUs
	podStart := s.Allocations.Changes[len(s.Allocations.Changes)-1].T
	var outside bool
	var diff float64
	if v.oneResource() {
		outside = cur < r.Lower || cur > r.Upper
		diff = math.Abs(cur-r.Target) / cur
	} else {
		for _, b := range []VPABounds{r.Compute, r.Memory} {
			outside = outside || cur < b.Lower || cur > b.Upper
			diff += math.Abs(cur-b.Target) / cur
		}
	}
	quickOOM := v.QuickOOM(s)
	if !outside && !quickOOM {
		if s.At-podStart < vpaPodLifetime.Milliseconds() || diff < vpaMinChange {
			return Proposal{Target: s.Current}
		}
	}
	// A quick OOM evicts only if the resources change (L149-153); any
	// other eviction that would set the same share is no change either.
	return Proposal{Target: v.Bounds.Apply(s.Current, r.Target), Immediate: v.Auto, Evict: v.Auto && !v.Reading.Kind}
}

// QuickOOM is the updater's rule (update_priority_calculator.go L119-126):
// the container's last termination was an OOM kill less than 10 minutes
// after the container started, which is the pod's start or, after an
// earlier kill, that kill plus the restart. The kind reading takes any
// kill within 10 minutes of the pod's start.
func (v VPA) QuickOOM(s State) bool {
	podStart := s.Allocations.Changes[len(s.Allocations.Changes)-1].T
	var last, prev int64
	n := 0
	for _, k := range s.OOMKills {
		if k.T < podStart {
			continue
		}
		if v.Reading.Kind {
			if k.T-podStart < vpaQuickOOM.Milliseconds() {
				return true
			}
			continue
		}
		prev, last = last, k.T
		n++
	}
	if n == 0 {
		return false
	}
	started := podStart
	if n > 1 {
		started = prev + s.Restart.Milliseconds()
	}
	return last-started < vpaQuickOOM.Milliseconds()
}

var _ Strategy = VPA{}
