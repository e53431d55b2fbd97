package engine

import (
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The bounds of every decision when no policy sets them, in one place:
// the policy loader fills them in, and the live path checks against them
// again. From the Kubex guide where it gives one.
const (
	DefaultMinPodMetricsAge = 15 * time.Minute
	// DefaultMaxPercent caps one upsize step: at most this percent of the
	// allocation it grows from.
	DefaultMaxPercent = 200
	// DefaultCeiling and DefaultFloor bound a recommendation, in GPUs.
	DefaultCeiling = 1.0
	DefaultFloor   = 0.05
)

// Interpretations of a GPU metric's value.
const (
	// FullGPU: the value is a percentage of one whole GPU.
	FullGPU = "fullGPU"
	// CurrentAllocation: the value is a percentage of the container's
	// current GPU allocation.
	CurrentAllocation = "currentAllocation"
)

// Rules are the validated policies that govern one workload. Proactive and
// Reactive are nil when no such policy selects it.
type Rules struct {
	Strategy  *StrategyRules
	Proactive *ProactiveRules
	Reactive  *ReactiveRules
}

// StrategyRules is a validated strategy with its defaults filled in: what
// the decision engine and the editor may do.
type StrategyRules struct {
	Name               string
	Upsize, Downsize   bool
	SetFromUnspecified bool
	// Ceiling and Floor bound every recommendation, in GPUs.
	Ceiling, Floor float64
	// MoveToKAI: workloads not on KAI yet are moved onto it.
	MoveToKAI bool
	// VLLMBufferPercent is the share of its allocation vLLM must leave
	// unused; negative when the strategy does not manage vLLM.
	VLLMBufferPercent int
	HAMiCore          bool
	// GPUMemoryMiB is the memory of one GPU, for gpu-memory requests;
	// 0 when unknown.
	GPUMemoryMiB          int64
	Queue                 string
	SetQueueWhenSpecified bool
	MinChangePercent      int
	// LiveUpsize applies urgent upsizes to the live workload at once,
	// before their pull request merges (docs/design.md §7).
	LiveUpsize bool
}

// ProactiveRules sets the long-term baseline.
type ProactiveRules struct {
	Window          time.Duration
	MinHistory      time.Duration
	HeadroomPercent int
	// ComputePercentile is the percentile of compute samples the baseline
	// is sized on; 100 is the peak.
	ComputePercentile int
	// MemoryConfidenceHeadroomPercent widens memory's headroom while its
	// history is shorter than Window, as VPA widens its bounds for a young
	// workload: it adds this percent with no history, shrinking in
	// proportion to the history there is, to nothing over the whole
	// window. Memory only: beyond the share it is an out-of-memory kill,
	// where compute beyond it is contention. 0 turns it off.
	MemoryConfidenceHeadroomPercent int
	// MemoryConfidenceWindow, when set, is the history over which that
	// confidence headroom shrinks to nothing, in place of Window: a
	// workload whose pods live under a day never has a week of history.
	MemoryConfidenceWindow time.Duration
	// MemoryWindow, when longer than Window, is the window memory's peak
	// is taken over: an out-of-memory kill is fatal where compute beyond
	// the share is contention, so a memory peak is remembered longer.
	MemoryWindow time.Duration
	// MemoryDailyPeakPercentile, when set, sizes memory on a forecast of
	// the next day's peak instead of the window's peak: this
	// nearest-rank percentile of the daily peaks in memory's window, each
	// day counted back from the run. A single spike then counts once among
	// the days, not as the whole window's peak; 100 is the window's peak.
	// 0 turns it off.
	MemoryDailyPeakPercentile int
	// BreachRiskPercent, when set, sizes each metric for this chance, in
	// percent, that the next hour's demand exceeds the baseline, judged
	// from the workload's own hours (hourlyRisk): in place of the
	// percentile, the headroom and the confidence headroom, once the
	// window holds enough hours for it (100/BreachRiskPercent − 1); those
	// size the baseline until then. 0 turns it off.
	BreachRiskPercent int
}

// WindowOf is the window the baseline reads metric m over.
func (p *ProactiveRules) WindowOf(m usage.Metric) time.Duration {
	if m == usage.Memory {
		return max(p.Window, p.MemoryWindow)
	}
	return p.Window
}

// confidenceWindow is the history over which memory's confidence
// headroom shrinks to nothing.
func (p *ProactiveRules) confidenceWindow() time.Duration {
	if p.MemoryConfidenceWindow > 0 {
		return p.MemoryConfidenceWindow
	}
	return p.Window
}

// ReactiveRules answers pressure now.
type ReactiveRules struct {
	MinPodMetricsAge time.Duration
	// Metrics holds the rules of each configured metric.
	Metrics map[usage.Metric]*MetricRules
}

// MetricRules is how one metric is read and acted on.
type MetricRules struct {
	Source         usage.Mapping
	Interpretation string
	Upsize         *UpsizeRules    // nil: this metric never upsizes
	ScaleBack      *ScaleBackRules // nil: this metric never allows a scale-back
}

type UpsizeRules struct {
	ThresholdPercent int
	Window           time.Duration
	HeadroomPercent  int
	MaxPercent       int
}

type ScaleBackRules struct {
	ThresholdPercent int
	Window           time.Duration
	HeadroomPercent  int
}

// Sources returns, per metric, where usage is read and how it is
// interpreted: the reactive policy's mapping where it configures the
// metric, else the Kubex exporter's series. Both metrics always count: a
// baseline that ignored memory because a policy only watches compute would
// shrink a workload into out-of-memory errors.
func (r Rules) Sources() map[usage.Metric]*MetricRules {
	mapping := func(metric string) usage.Mapping {
		return usage.Mapping{Metric: metric, NamespaceLabel: usage.DefaultNamespaceLabel, PodLabel: usage.DefaultPodLabel, ContainerLabel: usage.DefaultContainerLabel}
	}
	s := map[usage.Metric]*MetricRules{
		usage.Compute: {Source: mapping(usage.DefaultComputeMetric), Interpretation: FullGPU},
		usage.Memory:  {Source: mapping(usage.DefaultMemoryMetric), Interpretation: CurrentAllocation},
	}
	if r.Reactive != nil {
		for m, mr := range r.Reactive.Metrics {
			s[m] = mr
		}
	}
	return s
}

// lookbackMargin widens what Decide reads beyond its longest window, so
// that a pod whose age is judged from its oldest sample is seen as older
// than minPodMetricsAge when it is.
const lookbackMargin = 15 * time.Minute

// Lookback is how much history Decide reads under these rules: what a
// usage query must cover.
func (r Rules) Lookback() time.Duration {
	return max(r.window(), DefaultMinPodMetricsAge) + lookbackMargin
}

// window is the longest window the rules read.
func (r Rules) window() time.Duration {
	var d time.Duration
	if p := r.Proactive; p != nil {
		d = max(d, p.WindowOf(usage.Compute), p.WindowOf(usage.Memory))
	}
	if re := r.Reactive; re != nil {
		d = max(d, re.MinPodMetricsAge)
		for _, m := range re.Metrics {
			if m.Upsize != nil {
				d = max(d, m.Upsize.Window)
			}
			if m.ScaleBack != nil {
				d = max(d, m.ScaleBack.Window)
			}
		}
	}
	return d
}

func (r Rules) minPodAge() time.Duration {
	if r.Reactive != nil {
		return r.Reactive.MinPodMetricsAge
	}
	return DefaultMinPodMetricsAge
}

// maxStep is the largest upsize allowed in one step, as a multiple of the
// current allocation: the reactive policy's tightest maxPercent.
func (r Rules) maxStep() float64 {
	limit := DefaultMaxPercent
	if r.Reactive != nil {
		first := true
		for _, m := range r.Reactive.Metrics {
			if m.Upsize != nil && (first || m.Upsize.MaxPercent < limit) {
				limit, first = m.Upsize.MaxPercent, false
			}
		}
	}
	return float64(limit) / 100
}

// ChartScale turns a pod's samples into GPUs for a chart of usage: a
// percent of one GPU, or of the pod's share (current when the pod's is
// unknown). It leaves out the metrics the rules do not read.
func (r Rules) ChartScale(current float64) usage.Scale {
	sources := r.Sources()
	return func(p usage.Pod, m usage.Metric) (float64, bool) {
		src := sources[m]
		if src == nil {
			return 0, false
		}
		scale := 1.0 / 100
		if src.Interpretation == CurrentAllocation {
			share := p.Allocation
			if share <= 0 {
				share = current
			}
			scale *= share
		}
		return scale, true
	}
}
