package policy

import (
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Defaults, from the Kubex guide where it gives one.
const (
	DefaultCeiling           = 1.0
	DefaultFloor             = 0.05
	DefaultQueue             = "kubex-unlimited-gpu-queue"
	DefaultMinChangePercent  = 5
	DefaultMinPodMetricsAge  = 15 * time.Minute
	DefaultHeadroomPercent   = 20
	DefaultProactiveWindow   = 7 * 24 * time.Hour
	DefaultMinHistory        = 24 * time.Hour
	DefaultUpsizeThreshold   = 100
	DefaultUpsizeWindow      = 2 * time.Minute
	DefaultMaxPercent        = 200
	DefaultScaleBackThresh   = 75
	DefaultScaleBackWindow   = 10 * time.Minute
	DefaultNamespaceLabel    = "namespace"
	DefaultPodLabel          = "pod"
	DefaultContainerLabel    = "container"
	DefaultComputeMetric     = "kubex_gpu_container_sm_utilization_percent"
	DefaultMemoryMetric      = "kubex_gpu_container_memory_footprint_percent"
	DefaultConsolidationUtil = 75
)

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
	VLLMBufferPercent     int
	HAMiCore              bool
	Queue                 string
	SetQueueWhenSpecified bool
	MinChangePercent      int
	// LiveUpsize applies urgent upsizes to the live workload at once,
	// before their pull request merges (DESIGN §7).
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

// defaultSources is where usage is read from when no reactive policy says
// so: the Kubex exporter's metrics, interpreted as the guide does.
func defaultSources() map[usage.Metric]*MetricRules {
	mapping := func(metric string) usage.Mapping {
		return usage.Mapping{Metric: metric, NamespaceLabel: DefaultNamespaceLabel, PodLabel: DefaultPodLabel, ContainerLabel: DefaultContainerLabel}
	}
	return map[usage.Metric]*MetricRules{
		usage.Compute: {Source: mapping(DefaultComputeMetric), Interpretation: FullGPU},
		usage.Memory:  {Source: mapping(DefaultMemoryMetric), Interpretation: CurrentAllocation},
	}
}

func (s *Strategy) rules() *StrategyRules {
	r := &StrategyRules{
		Name:              s.Name,
		Ceiling:           DefaultCeiling,
		Floor:             DefaultFloor,
		MoveToKAI:         s.Spec.Enablement.OverrideScheduler == "kai",
		VLLMBufferPercent: -1,
		Queue:             DefaultQueue,
		MinChangePercent:  DefaultMinChangePercent,
	}
	if g := s.Spec.Enablement.GPU; g != nil {
		q := g.Requests
		r.Upsize = deref(q.Upsize, false)
		r.Downsize = deref(q.Downsize, false)
		r.SetFromUnspecified = deref(q.SetFromUnspecified, false)
		if q.Ceiling != nil {
			r.Ceiling = q.Ceiling.Value
		}
		if q.Floor != nil {
			r.Floor = q.Floor.Value
		}
	}
	k := s.Spec.KAI
	if k.VLLM != nil && k.VLLM.GpuMemoryUtilizationBufferPercent != nil {
		r.VLLMBufferPercent = *k.VLLM.GpuMemoryUtilizationBufferPercent
	}
	r.HAMiCore = deref(k.HAMiCore, false)
	if k.Queue != "" {
		r.Queue = k.Queue
	}
	r.SetQueueWhenSpecified = deref(k.SetQueueWhenSpecified, false)
	if g := s.Spec.GitOps; g != nil {
		r.MinChangePercent = deref(g.MinChangePercent, r.MinChangePercent)
		r.LiveUpsize = deref(g.LiveUpsize, false)
	}
	return r
}

func (p *ProactivePolicy) rules() *ProactiveRules {
	r := &ProactiveRules{Window: DefaultProactiveWindow, MinHistory: DefaultMinHistory, HeadroomPercent: DefaultHeadroomPercent,
		ComputePercentile: 100}
	if p.Spec.ComputePercentile != nil {
		r.ComputePercentile = *p.Spec.ComputePercentile
	}
	if p.Spec.Window != nil {
		r.Window = p.Spec.Window.Duration
	}
	if p.Spec.MinHistory != nil {
		r.MinHistory = p.Spec.MinHistory.Duration
	}
	if p.Spec.HeadroomPercent != nil {
		r.HeadroomPercent = *p.Spec.HeadroomPercent
	}
	return r
}

func (p *ReactivePolicy) rules() *ReactiveRules {
	r := &ReactiveRules{MinPodMetricsAge: DefaultMinPodMetricsAge, Metrics: map[usage.Metric]*MetricRules{}}
	if p.Spec.MinPodMetricsAge != nil {
		r.MinPodMetricsAge = p.Spec.MinPodMetricsAge.Duration
	}
	for m, mp := range p.Spec.Metrics.byMetric() {
		if mp == nil {
			continue
		}
		mr := &MetricRules{Interpretation: FullGPU}
		if pr := mp.Prometheus; pr != nil {
			mr.Source = usage.Mapping{
				Metric:         pr.Metric,
				NamespaceLabel: or(pr.NamespaceLabel, DefaultNamespaceLabel),
				PodLabel:       or(pr.PodLabel, DefaultPodLabel),
				ContainerLabel: or(pr.ContainerLabel, DefaultContainerLabel),
			}
			mr.Interpretation = or(pr.Interpretation, FullGPU)
		}
		if u := mp.Upsize; u != nil {
			mr.Upsize = &UpsizeRules{
				ThresholdPercent: deref(u.ThresholdPercent, DefaultUpsizeThreshold),
				Window:           durationOr(u.MetricsWindow, DefaultUpsizeWindow),
				HeadroomPercent:  deref(u.HeadroomPercent, DefaultHeadroomPercent),
				MaxPercent:       deref(u.MaxPercent, DefaultMaxPercent),
			}
		}
		if s := mp.ScaleBack; s != nil {
			mr.ScaleBack = &ScaleBackRules{
				ThresholdPercent: deref(s.ThresholdPercent, DefaultScaleBackThresh),
				Window:           durationOr(s.MetricsWindow, DefaultScaleBackWindow),
				HeadroomPercent:  deref(s.HeadroomPercent, DefaultHeadroomPercent),
			}
		}
		r.Metrics[m] = mr
	}
	return r
}

func (m ReactiveMetrics) byMetric() map[usage.Metric]*MetricPolicy {
	return map[usage.Metric]*MetricPolicy{usage.Compute: m.Compute, usage.Memory: m.Memory}
}

// Lookback is how much history a decision under these rules reads.
func Lookback(p *ProactiveRules, r *ReactiveRules) time.Duration {
	var d time.Duration
	if p != nil {
		d = max(d, p.Window)
	}
	if r != nil {
		d = max(d, r.MinPodMetricsAge)
		for _, m := range r.Metrics {
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

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func durationOr(d *Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
