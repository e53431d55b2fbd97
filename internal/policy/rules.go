package policy

import (
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Defaults, from the Kubex guide where it gives one.
const (
	DefaultCeiling           = engine.DefaultCeiling
	DefaultFloor             = engine.DefaultFloor
	DefaultQueue             = "kubex-unlimited-gpu-queue"
	DefaultMinChangePercent  = 5
	DefaultMinPodMetricsAge  = engine.DefaultMinPodMetricsAge
	DefaultHeadroomPercent   = 20
	DefaultProactiveWindow   = 7 * 24 * time.Hour
	DefaultMinHistory        = 24 * time.Hour
	DefaultUpsizeThreshold   = 100
	DefaultUpsizeWindow      = 2 * time.Minute
	DefaultMaxPercent        = engine.DefaultMaxPercent
	DefaultScaleBackThresh   = 75
	DefaultScaleBackWindow   = 10 * time.Minute
	DefaultNamespaceLabel    = usage.DefaultNamespaceLabel
	DefaultPodLabel          = usage.DefaultPodLabel
	DefaultContainerLabel    = usage.DefaultContainerLabel
	DefaultComputeMetric     = usage.DefaultComputeMetric
	DefaultMemoryMetric      = usage.DefaultMemoryMetric
	DefaultConsolidationUtil = 75
)

func (s *Strategy) rules() *engine.StrategyRules {
	r := &engine.StrategyRules{
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
	r.GPUMemoryMiB = int64(deref(k.GPUMemoryMiB, 0))
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

// pullRequest is the strategy's settings for pull requests, labels and
// reviewers sorted and without repeats so that equal policies give equal
// pull requests.
func (s *Strategy) pullRequest() PullRequest {
	g := s.Spec.GitOps
	if g == nil {
		return PullRequest{}
	}
	return PullRequest{Grouping: g.Grouping, Labels: sortedSet(g.Labels), Reviewers: sortedSet(g.Reviewers)}
}

// sortedSet returns ss sorted, without repeats or empty strings; nil when
// none is left.
func sortedSet(ss []string) []string {
	out := slices.DeleteFunc(slices.Clone(ss), func(s string) bool { return s == "" })
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (p *ProactivePolicy) rules() *engine.ProactiveRules {
	r := &engine.ProactiveRules{Window: DefaultProactiveWindow, MinHistory: DefaultMinHistory, HeadroomPercent: DefaultHeadroomPercent,
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
	r.MemoryConfidenceHeadroomPercent = deref(p.Spec.MemoryConfidenceHeadroomPercent, 0)
	if p.Spec.MemoryWindow != nil {
		r.MemoryWindow = p.Spec.MemoryWindow.Duration
	}
	if p.Spec.MemoryConfidenceWindow != nil {
		r.MemoryConfidenceWindow = p.Spec.MemoryConfidenceWindow.Duration
	}
	r.MemoryDailyPeakPercentile = deref(p.Spec.MemoryDailyPeakPercentile, 0)
	r.BreachRiskPercent = deref(p.Spec.BreachRiskPercent, 0)
	return r
}

func (p *ReactivePolicy) rules() *engine.ReactiveRules {
	r := &engine.ReactiveRules{MinPodMetricsAge: DefaultMinPodMetricsAge, Metrics: map[usage.Metric]*engine.MetricRules{}}
	if p.Spec.MinPodMetricsAge != nil {
		r.MinPodMetricsAge = p.Spec.MinPodMetricsAge.Duration
	}
	for m, mp := range p.Spec.Metrics.byMetric() {
		if mp == nil {
			continue
		}
		// Without a prometheus block the metric reads the default series,
		// as the metrics no reactive policy configures do: the run's
		// preset maps it to its exporter's.
		mr := &engine.MetricRules{}
		if d := (engine.Rules{}).Sources()[m]; d != nil {
			mr.Source, mr.Interpretation = d.Source, d.Interpretation
		}
		if pr := mp.Prometheus; pr != nil {
			mr.Source = usage.Mapping{
				Metric:         pr.Metric,
				NamespaceLabel: or(pr.NamespaceLabel, DefaultNamespaceLabel),
				PodLabel:       or(pr.PodLabel, DefaultPodLabel),
				ContainerLabel: or(pr.ContainerLabel, DefaultContainerLabel),
				Named:          true,
			}
			mr.Interpretation = or(pr.Interpretation, FullGPU)
		}
		if u := mp.Upsize; u != nil {
			mr.Upsize = &engine.UpsizeRules{
				ThresholdPercent: deref(u.ThresholdPercent, DefaultUpsizeThreshold),
				Window:           durationOr(u.MetricsWindow, DefaultUpsizeWindow),
				HeadroomPercent:  deref(u.HeadroomPercent, DefaultHeadroomPercent),
				MaxPercent:       deref(u.MaxPercent, DefaultMaxPercent),
			}
		}
		if s := mp.ScaleBack; s != nil {
			mr.ScaleBack = &engine.ScaleBackRules{
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
