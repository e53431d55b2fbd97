package policy_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/policy"
)

// fieldNote is what the reference says of a field beyond its type: its
// default (what applies when it is absent) and, for a field whose Go type
// carries no doc comment, its effect.
type fieldNote struct {
	Default string
	Meaning string
}

// Defaults that are no value: the field is needed, or absent means off.
const (
	required = "required"
	none     = "none"
)

func dur(d time.Duration) string { return "`" + policy.FormatDuration(d) + "`" }
func num(v any) string           { return fmt.Sprintf("`%v`", v) }

// fieldNotes holds a note for every field the reference lists, by path;
// `spec.metrics.<metric>` stands for compute and memory alike. A field of
// the decoder's types without a note fails TestPolicyReference, so a new
// field cannot reach the reference without its default. The defaults are
// the loader's own constants wherever it has one.
var fieldNotes = map[string]fieldNote{
	// Every kind.
	"spec.experimental":                {none, "The version of the experimental GPU/KAI contract the document is written against."},
	"spec.experimental.gpuKaiContract": {"required (in a strategy: only where a GPU/KAI field is used)", "Must be `" + policy.KAIContract + "`: the only contract this version implements."},

	// Strategies.
	"spec.enablement":                                 {none, "What the strategy may change."},
	"spec.enablement.overrideScheduler":               {"`none`", ""},
	"spec.enablement.gpu":                             {"none: GPU requests are left alone", "How GPU requests (KAI gpu-fraction) may change."},
	"spec.enablement.gpu.requests":                    {none, ""},
	"spec.enablement.gpu.requests.downsize":           {"`false`", "Recommendations may lower a workload's GPU fraction."},
	"spec.enablement.gpu.requests.upsize":             {"`false`", "Recommendations may raise a workload's GPU fraction."},
	"spec.enablement.gpu.requests.ceiling":            {num(policy.DefaultCeiling), "No recommendation goes above this many GPUs."},
	"spec.enablement.gpu.requests.floor":              {num(policy.DefaultFloor), "No recommendation goes below this many GPUs (0.01 to 0.99, below the ceiling)."},
	"spec.enablement.gpu.requests.setFromUnspecified": {"`false`", "A workload that requests no GPU fraction yet gets one."},
	"spec.kai":      {none, "KAI Scheduler settings of the governed workloads."},
	"spec.kai.vllm": {"none: vLLM is not managed", "vLLM servers: their --gpu-memory-utilization follows the GPU fraction."},
	"spec.kai.vllm.gpuMemoryUtilizationBufferPercent": {"none: vLLM is not managed", "The share of its allocation vLLM leaves unused (0 to 90)."},
	"spec.kai.setQueueWhenSpecified":                  {"`false`", "Also set the queue of workloads that already name one."},
	"spec.kai.queue":                                  {num(policy.DefaultQueue), ""},
	"spec.kai.hamiCore":                               {"`false`", ""},
	"spec.kai.gpuMemoryMiB":                           {"none: gpu-memory workloads are left alone", ""},
	"spec.inPlaceResize":                              {none, "Kubex's in-place resize; accepted for compatibility, not used by GitOps."},
	"spec.inPlaceResize.enabled":                      {"`false`", "Accepted; GitOps edits manifests instead."},
	"spec.podEviction":                                {none, "Kubex's pod eviction; accepted for compatibility, never done by GitOps."},
	"spec.podEviction.enabled":                        {"`false`", "Accepted; GitOps never evicts pods."},
	"spec.gitops":                                     {none, ""},
	"spec.gitops.minChangePercent":                    {num(policy.DefaultMinChangePercent), ""},
	"spec.gitops.grouping":                            {"one pull request per workload", "workload, namespace, policy or cluster (with a ClusterMap; else workload): how the workloads this strategy governs share pull requests. The run's `--group-by` (or `pullRequests.groupBy`), when set, wins for every workload."},
	"spec.gitops.labels":                              {none, "Added to the pull request of every workload this strategy governs, with the run's `--label`s (sorted, each once); a pull request of several strategies' workloads gets all their labels. Applied when the pull request opens."},
	"spec.gitops.reviewers":                           {none, "Asked to review the pull request of every workload this strategy governs, with the run's `--reviewer`s (sorted, each once); a pull request of several strategies' workloads asks all of theirs. Applied when the pull request opens."},
	"spec.gitops.liveUpsize":                          {"`false`", "Apply urgent upsizes to the live workload at once, before their pull request merges (needs live mode)."},

	// The cluster map.
	"spec.label":                 {"`" + policy.DefaultClusterLabel + "`", ""},
	"spec.clusters":              {required, ""},
	"spec.clusters[].name":       {required, ""},
	"spec.clusters[].labelValue": {"its name", ""},
	"spec.clusters[].paths":      {required, ""},
	"spec.clusters[].policies":   {none, ""},

	// Scope, of proactive and reactive policies.
	"spec.scope":                                           {required, ""},
	"spec.scope.namespaceSelector":                         {"the policy's own namespace (namespaced kinds); cluster kinds: every namespace", "Cluster kinds only: the namespaces governed."},
	"spec.scope.namespaceSelector.operator":                {required, "In or NotIn."},
	"spec.scope.namespaceSelector.values":                  {required, "Namespaces, each a name or a pattern as `--namespace` takes it (`ml-*`); `*` is every namespace."},
	"spec.scope.labelSelector":                             {"every workload", "Selects workloads by their labels."},
	"spec.scope.labelSelector.matchLabels":                 {none, "Labels a workload must carry, each with this value."},
	"spec.scope.labelSelector.matchExpressions":            {none, "Requirements a workload's labels must meet, all of them."},
	"spec.scope.labelSelector.matchExpressions[].key":      {required, "The label's name."},
	"spec.scope.labelSelector.matchExpressions[].operator": {required, "In, NotIn, Exists or DoesNotExist."},
	"spec.scope.labelSelector.matchExpressions[].values":   {"none (needed by In and NotIn)", "The label's values."},
	"spec.scope.workloadTypes":                             {required, "The kinds selected. Sized: Deployment, StatefulSet, Rollout, LeaderWorkerSet, InferenceService and DynamoGraphDeployment, as [edits.md](edits.md) says. DaemonSet, Job, CronJob and Model load; what they select gets a plan row with cause `unsupported`."},
	"spec.scope.containers":                                {"every container", ""},
	"spec.automationStrategyRef":                           {required, "The strategy that makes this policy's changes."},
	"spec.automationStrategyRef.name":                      {required, "The strategy's name (a namespaced policy finds one in its namespace first)."},

	// Proactive policies.
	"spec.window":                          {dur(policy.DefaultProactiveWindow), ""},
	"spec.headroomPercent":                 {num(policy.DefaultHeadroomPercent), ""},
	"spec.minHistory":                      {dur(policy.DefaultMinHistory), ""},
	"spec.computePercentile":               {"`100` (the peak)", ""},
	"spec.memoryWindow":                    {"`window`", ""},
	"spec.memoryConfidenceHeadroomPercent": {"`0` (no added headroom)", ""},
	"spec.memoryConfidenceWindow":          {"`window`", ""},
	"spec.memoryDailyPeakPercentile":       {"none: memory on its window's peak", ""},
	"spec.breachRiskPercent":               {"none: the fixed margins", ""},

	// Reactive policies.
	"spec.minPodMetricsAge":                            {dur(policy.DefaultMinPodMetricsAge), "A pod younger than this is not acted on: its usage is not settled yet."},
	"spec.metrics":                                     {required, "compute, memory or both."},
	"spec.metrics.<metric>":                            {none, "The rules of one metric."},
	"spec.metrics.<metric>.upsize":                     {"none: no upsize on this metric", "Raise the allocation when usage stays high."},
	"spec.metrics.<metric>.upsize.thresholdPercent":    {num(policy.DefaultUpsizeThreshold), "Usage above this percent of the allocation, over the whole window, asks for more."},
	"spec.metrics.<metric>.upsize.metricsWindow":       {dur(policy.DefaultUpsizeWindow), "How long usage must stay above the threshold."},
	"spec.metrics.<metric>.upsize.headroomPercent":     {num(policy.DefaultHeadroomPercent), "Added on top of the usage seen."},
	"spec.metrics.<metric>.upsize.maxPercent":          {num(policy.DefaultMaxPercent), "One upsize grows the allocation to at most this percent of what it was."},
	"spec.metrics.<metric>.scaleBack":                  {"none: no scale-back on this metric", "Lower the allocation when usage stays low."},
	"spec.metrics.<metric>.scaleBack.thresholdPercent": {num(policy.DefaultScaleBackThresh), "Usage below this percent of the allocation, over the whole window, allows less (below the upsize threshold)."},
	"spec.metrics.<metric>.scaleBack.metricsWindow":    {dur(policy.DefaultScaleBackWindow), "How long usage must stay below the threshold."},
	"spec.metrics.<metric>.scaleBack.headroomPercent":  {num(policy.DefaultHeadroomPercent), "Added on top of the usage seen."},
	"spec.metrics.<metric>.prometheus":                 {"none: the run's `--metrics-preset` series", "The series that carries the metric's usage. It wins over any preset, even when it names the default series."},
	"spec.metrics.<metric>.prometheus.metric":          {required, "The series' name."},
	"spec.metrics.<metric>.prometheus.interpretation":  {num(policy.FullGPU), "`" + policy.FullGPU + "`: the value is a percent of one GPU; `" + policy.CurrentAllocation + "`: of the container's allocation."},
	"spec.metrics.<metric>.prometheus.namespaceLabel":  {num(policy.DefaultNamespaceLabel), "The series' label holding the namespace."},
	"spec.metrics.<metric>.prometheus.podLabel":        {num(policy.DefaultPodLabel), "The series' label holding the pod."},
	"spec.metrics.<metric>.prometheus.containerLabel":  {num(policy.DefaultContainerLabel), "The series' label holding the container."},

	// Consolidation policies.
	"spec.nodeSelector":                             {required, "The nodes of one pool."},
	"spec.nodeSelector.matchLabels":                 {none, "Labels a node must carry, each with this value."},
	"spec.nodeSelector.matchExpressions":            {none, "Requirements a node's labels must meet, all of them."},
	"spec.nodeSelector.matchExpressions[].key":      {required, "The label's name."},
	"spec.nodeSelector.matchExpressions[].operator": {required, "In, NotIn, Exists or DoesNotExist."},
	"spec.nodeSelector.matchExpressions[].values":   {"none (needed by In and NotIn)", "The label's values."},
	"spec.utilizationThresholdPercent":              {num(policy.DefaultConsolidationUtil), "Nodes used below this percent are reported as candidates to consolidate."},
	"spec.requeueAfter":                             {none, "Kubex's re-evaluation period; accepted, a run's schedule decides here."},
}

// noteKey is the key of path in fieldNotes.
func noteKey(path string) string {
	for _, m := range []string{"compute", "memory"} {
		if rest, ok := strings.CutPrefix(path, "spec.metrics."+m); ok {
			return "spec.metrics.<metric>" + rest
		}
	}
	return path
}
