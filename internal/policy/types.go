package policy

import (
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/engine"
)

// The API groups whose documents are policies. Kubex's group must load the
// guide's starter example unchanged; the project's own group accepts the
// same kinds plus GitOps settings.
const (
	KubexGroup   = "rightsizing.kubex.ai"
	ProjectGroup = "gpu-rightsizing.github.io"
	Version      = "v1alpha1"

	// KAIContract is the only spec.experimental.gpuKaiContract accepted:
	// the GPU/KAI fields are experimental, and their meaning is pinned to
	// this contract version.
	KAIContract = "v1alpha1-2026-07"
)

// Kinds, as they appear in documents.
const (
	KindClusterStrategy  = "ClusterAutomationStrategy"
	KindStrategy         = "AutomationStrategy"
	KindClusterProactive = "ClusterProactivePolicy"
	KindProactive        = "ProactivePolicy"
	KindClusterReactive  = "ClusterGpuReactivePolicy"
	KindReactive         = "GpuReactivePolicy"
	KindConsolidation    = "GpuConsolidationPolicy"
	// KindClusterMap is the project's own kind: which clusters a
	// repository deploys, from which paths.
	KindClusterMap = "ClusterMap"
)

// Interpretations of a GPU metric's value.
const (
	// FullGPU: the value is a percentage of one whole GPU.
	FullGPU = engine.FullGPU
	// CurrentAllocation: the value is a percentage of the container's
	// current GPU allocation.
	CurrentAllocation = engine.CurrentAllocation
)

// Meta is what every policy document carries besides its spec.
type Meta struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string // empty for cluster-scoped kinds
	File       string // slash path relative to the repo root
	Line       int    // line of the document's first key
	// Clusters are the clusters whose policy directories (a ClusterMap's
	// spec.clusters[].policies) hold the file: the policy governs their
	// workloads only. nil: every cluster's.
	Clusters []string
}

// Clustered reports whether the document's kind is cluster-scoped.
func (m Meta) Clustered() bool {
	switch m.Kind {
	case KindClusterStrategy, KindClusterProactive, KindClusterReactive, KindConsolidation, KindClusterMap:
		return true
	}
	return false
}

func (m Meta) String() string {
	s := m.Kind + " " + m.Name
	if m.Namespace != "" {
		s = m.Kind + " " + m.Namespace + "/" + m.Name
	}
	if len(m.Clusters) > 0 {
		s += " (" + strings.Join(m.Clusters, ", ") + ")"
	}
	return s
}

// Strategy is an AutomationStrategy or ClusterAutomationStrategy: how
// changes are made to the workloads that policies hand to it.
type Strategy struct {
	Meta
	Spec StrategySpec
}

type StrategySpec struct {
	Experimental  *Experimental `yaml:"experimental"`
	Enablement    Enablement    `yaml:"enablement"`
	KAI           KAISettings   `yaml:"kai"`
	InPlaceResize Toggle        `yaml:"inPlaceResize"`
	PodEviction   Toggle        `yaml:"podEviction"`
	GitOps        *GitOps       `yaml:"gitops" group:"project"`
}

type Experimental struct {
	GpuKaiContract string `yaml:"gpuKaiContract"`
}

type Enablement struct {
	// OverrideScheduler "kai" moves workloads that are not on KAI yet onto it.
	OverrideScheduler string         `yaml:"overrideScheduler"`
	GPU               *GPUEnablement `yaml:"gpu"`
}

type GPUEnablement struct {
	Requests GPURequests `yaml:"requests"`
}

type GPURequests struct {
	Downsize           *bool     `yaml:"downsize"`
	Upsize             *bool     `yaml:"upsize"`
	Ceiling            *Quantity `yaml:"ceiling"`
	Floor              *Quantity `yaml:"floor" group:"project"`
	SetFromUnspecified *bool     `yaml:"setFromUnspecified"`
}

type KAISettings struct {
	VLLM                  *VLLMSettings `yaml:"vllm"`
	SetQueueWhenSpecified *bool         `yaml:"setQueueWhenSpecified"`
	// Queue is the kai.scheduler/queue given to workloads moved onto KAI.
	Queue string `yaml:"queue" group:"project"`
	// HAMiCore says HAMi-core enforces each pod's memory share, so vLLM
	// sees only its share of the GPU.
	HAMiCore *bool `yaml:"hamiCore" group:"project"`
	// GPUMemoryMiB is the memory of the GPUs the governed workloads run
	// on, in MiB: it turns a gpu-memory request into a share of a GPU and
	// back. Without it, gpu-memory workloads are left alone.
	GPUMemoryMiB *int `yaml:"gpuMemoryMiB" group:"project"`
}

type VLLMSettings struct {
	GpuMemoryUtilizationBufferPercent *int `yaml:"gpuMemoryUtilizationBufferPercent"`
}

type Toggle struct {
	Enabled *bool `yaml:"enabled"`
}

// GitOps holds the project's settings for pull requests.
type GitOps struct {
	// MinChangePercent is the smallest change, relative to the current
	// allocation, worth a pull request.
	MinChangePercent *int     `yaml:"minChangePercent"`
	Grouping         string   `yaml:"grouping"`
	Labels           []string `yaml:"labels"`
	Reviewers        []string `yaml:"reviewers"`
	LiveUpsize       *bool    `yaml:"liveUpsize"`
}

// Scope selects the workloads a policy governs.
type Scope struct {
	NamespaceSelector *NamespaceSelector `yaml:"namespaceSelector"`
	LabelSelector     *LabelSelector     `yaml:"labelSelector"`
	WorkloadTypes     []string           `yaml:"workloadTypes"`
	// Containers restricts the containers whose usage counts; empty: all.
	Containers []string `yaml:"containers"`
}

type NamespaceSelector struct {
	Operator string   `yaml:"operator"`
	Values   []string `yaml:"values"`
}

type LabelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []Requirement     `yaml:"matchExpressions"`
}

type Requirement struct {
	Key      string   `yaml:"key"`
	Operator string   `yaml:"operator"`
	Values   []string `yaml:"values"`
}

type StrategyRef struct {
	Name string `yaml:"name"`
}

// ProactivePolicy is a ProactivePolicy or ClusterProactivePolicy: it puts
// workloads under a strategy and sets their long-term baseline.
type ProactivePolicy struct {
	Meta
	Spec ProactiveSpec
	link
}

type ProactiveSpec struct {
	Scope                 Scope       `yaml:"scope"`
	AutomationStrategyRef StrategyRef `yaml:"automationStrategyRef"`
	// Window is how much history the baseline is taken from.
	Window *Duration `yaml:"window" group:"project"`
	// HeadroomPercent is added on top of the observed peak.
	HeadroomPercent *int `yaml:"headroomPercent" group:"project"`
	// MinHistory is the gap-free history a downsize needs.
	MinHistory *Duration `yaml:"minHistory" group:"project"`
	// ComputePercentile sizes compute on this percentile of the window's
	// samples instead of its peak (100). Compute beyond the share slows a
	// pod down; memory beyond it fails, so memory stays on the peak.
	ComputePercentile *int `yaml:"computePercentile" group:"project"`
	// MemoryConfidenceHeadroomPercent widens memory's headroom while its
	// history is shorter than the window. This percent is added with no
	// history, shrinking in proportion to the history. A young workload's
	// peak says less, and memory beyond the share is an OOM kill.
	MemoryConfidenceHeadroomPercent *int `yaml:"memoryConfidenceHeadroomPercent" group:"project"`
	// MemoryConfidenceWindow is the history over which that added headroom
	// shrinks to nothing, when shorter than the window: pods that live
	// under a day never show a week of history.
	MemoryConfidenceWindow *Duration `yaml:"memoryConfidenceWindow" group:"project"`
	// MemoryWindow is a longer window for memory's peak than Window: an
	// out-of-memory kill is fatal, compute beyond the share is only
	// contention, so a memory peak is remembered longer.
	MemoryWindow *Duration `yaml:"memoryWindow" group:"project"`
	// MemoryDailyPeakPercentile sizes memory on a forecast of the next
	// day's peak: this percentile of the daily peaks in memory's window,
	// days counted back from the run. A spike counts as one day; 100 is
	// the window's peak.
	MemoryDailyPeakPercentile *int `yaml:"memoryDailyPeakPercentile" group:"project"`
	// BreachRiskPercent is the risk knob: the percent chance the next
	// hour's demand exceeds the baseline. Each metric is sized on the
	// hour whose rank gives that chance, with no headroom. With fewer
	// hours than 100/breachRiskPercent − 1, fixed margins size it.
	BreachRiskPercent *int `yaml:"breachRiskPercent" group:"project"`
}

// ReactivePolicy is a GpuReactivePolicy or ClusterGpuReactivePolicy: it
// answers pressure now, from recent usage.
type ReactivePolicy struct {
	Meta
	Spec ReactiveSpec
	link
}

type ReactiveSpec struct {
	Experimental          *Experimental   `yaml:"experimental"`
	Scope                 Scope           `yaml:"scope"`
	MinPodMetricsAge      *Duration       `yaml:"minPodMetricsAge"`
	Metrics               ReactiveMetrics `yaml:"metrics"`
	AutomationStrategyRef StrategyRef     `yaml:"automationStrategyRef"`
}

type ReactiveMetrics struct {
	Compute *MetricPolicy `yaml:"compute"`
	Memory  *MetricPolicy `yaml:"memory"`
}

type MetricPolicy struct {
	Upsize     *UpsizeSpec    `yaml:"upsize"`
	ScaleBack  *ScaleBackSpec `yaml:"scaleBack"`
	Prometheus *Prometheus    `yaml:"prometheus"`
}

type UpsizeSpec struct {
	ThresholdPercent *int      `yaml:"thresholdPercent"`
	MetricsWindow    *Duration `yaml:"metricsWindow"`
	HeadroomPercent  *int      `yaml:"headroomPercent"`
	MaxPercent       *int      `yaml:"maxPercent"`
}

type ScaleBackSpec struct {
	ThresholdPercent *int      `yaml:"thresholdPercent"`
	MetricsWindow    *Duration `yaml:"metricsWindow"`
	HeadroomPercent  *int      `yaml:"headroomPercent"`
}

type Prometheus struct {
	Metric         string `yaml:"metric"`
	Interpretation string `yaml:"interpretation"`
	NamespaceLabel string `yaml:"namespaceLabel"`
	PodLabel       string `yaml:"podLabel"`
	ContainerLabel string `yaml:"containerLabel"`
}

// link ties a policy to its strategy once the whole repository is read.
type link struct {
	strategy *Strategy
	// refAt is where automationStrategyRef.name stands, for errors.
	refAt position
}

// governing is what the two kinds of policies that govern workloads have
// in common.
type governing interface {
	*ProactivePolicy | *ReactivePolicy
	meta() Meta
	scope() *Scope
	strategyName() string
	links() *link
}

func (p *ProactivePolicy) meta() Meta           { return p.Meta }
func (p *ProactivePolicy) scope() *Scope        { return &p.Spec.Scope }
func (p *ProactivePolicy) strategyName() string { return p.Spec.AutomationStrategyRef.Name }
func (p *ProactivePolicy) links() *link         { return &p.link }
func (p *ReactivePolicy) meta() Meta            { return p.Meta }
func (p *ReactivePolicy) scope() *Scope         { return &p.Spec.Scope }
func (p *ReactivePolicy) strategyName() string  { return p.Spec.AutomationStrategyRef.Name }
func (p *ReactivePolicy) links() *link          { return &p.link }

// ConsolidationPolicy is a GpuConsolidationPolicy. It only produces a
// report: GitOps never evicts pods.
type ConsolidationPolicy struct {
	Meta
	Spec ConsolidationSpec
}

type ConsolidationSpec struct {
	Experimental                *Experimental `yaml:"experimental"`
	NodeSelector                LabelSelector `yaml:"nodeSelector"`
	UtilizationThresholdPercent *int          `yaml:"utilizationThresholdPercent"`
	RequeueAfter                *Duration     `yaml:"requeueAfter"`
}

// ClusterMap says which clusters a repository deploys, and from where: a
// workload belongs to the clusters whose paths hold its definition (a
// root kustomization, a plain file, a Helm release). It is the project's
// own kind, read from the base branch like policies; one per repository.
type ClusterMap struct {
	Meta
	Spec ClusterMapSpec
}

type ClusterMapSpec struct {
	// Label is the label that tells the clusters' series apart in a
	// store that holds several (Thanos, Mimir, VictoriaMetrics).
	Label string `yaml:"label"`
	// Clusters are the clusters, each with the paths it deploys.
	Clusters []ClusterSpec `yaml:"clusters"`
}

// ClusterSpec is one cluster of a ClusterMap.
type ClusterSpec struct {
	// Name names the cluster in plan rows, filters, pull requests and
	// branches: a DNS label.
	Name string `yaml:"name"`
	// LabelValue is the value of spec.label its series carry.
	LabelValue string `yaml:"labelValue"`
	// Paths are the directories or files of the repository the cluster
	// deploys, relative to its root. A workload whose definition lies
	// under none of any cluster is reported unmapped.
	Paths []string `yaml:"paths"`
	// Policies are directories whose policies govern this cluster's
	// workloads only; a name may then be used again in another
	// cluster's directory.
	Policies []string `yaml:"policies"`
}
