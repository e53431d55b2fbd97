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
//     it was killed for memory within 10 minutes of starting.
//
// A GPU share is one number where VPA has two resources: the target and
// both bounds are the larger of compute's and memory's, since the share
// must hold both.
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
	if v.Auto {
		return "vpa-auto"
	}
	return "vpa"
}

// EveryStep makes VPA Auto decide at every sample.
func (v VPA) EveryStep() bool { return v.Auto }

// VPARecommendation is what VPA's recommender publishes, in GPUs.
type VPARecommendation struct {
	Target, Lower, Upper float64
	// Confidence is the history in days.
	Confidence float64
	// Samples counts the compute samples aggregated: with none, VPA has
	// no recommendation.
	Samples int
}

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
		peak, seen, have := 0.0, 0.0, false
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
	both := func(p float64) float64 { return max(cpu.percentile(p), mem.percentile(p)) * (1 + vpaMargin) }
	return VPARecommendation{
		Target:     both(vpaTarget),
		Lower:      both(vpaLower) * math.Pow(1+0.001/conf, -2),
		Upper:      both(vpaUpper) * (1 + 1/conf),
		Confidence: conf,
		Samples:    n,
	}
}

func (v VPA) Decide(s State) Proposal {
	r := v.Recommend(s)
	if r.Samples == 0 {
		return Proposal{Target: s.Current}
	}
	cur := s.Current.GPUs
	podStart := s.Allocations.Changes[len(s.Allocations.Changes)-1].T
	outside := cur < r.Lower || cur > r.Upper
	quickOOM := false
	for _, k := range s.OOMKills {
		if k.T >= podStart && k.T-podStart < vpaQuickOOM.Milliseconds() {
			quickOOM = true
		}
	}
	if !outside && !quickOOM {
		if s.At-podStart < vpaPodLifetime.Milliseconds() || math.Abs(cur-r.Target)/cur < vpaMinChange {
			return Proposal{Target: s.Current}
		}
	}
	return Proposal{Target: v.Bounds.Apply(s.Current, r.Target), Immediate: v.Auto}
}

var _ Strategy = VPA{}
