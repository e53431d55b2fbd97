package policy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// starterPath is the quickstart's policy file, written in the shape of the
// Kubex guide's starter example: its loading unchanged is the
// compatibility contract.
const starterPath = "../../examples/quickstart/policies/kai-gpu-sharing.yaml"

// hang bounds what must return at once and would otherwise hang or run
// for hours: a minute, which a loaded 2-core machine under -race does
// not take for work of milliseconds, and which tells it from a hang.
const hang = time.Minute

func readStarter(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(starterPath)
	require.NoError(t, err)
	return string(b)
}

var gpuDeployment = policy.Target{
	Ref:    usage.Ref{Namespace: "inference", Kind: "Deployment", Name: "chat"},
	Labels: map[string]string{"nvidia.com/gpu.present": "true"},
}

func TestLoadStarterExample(t *testing.T) {
	set, err := policy.Load(context.Background(), filepath.Dir(starterPath))
	require.NoError(t, err)
	require.Empty(t, set.Errors)
	require.Len(t, set.Strategies, 1)
	require.Len(t, set.Proactive, 1)
	require.Len(t, set.Reactive, 1)

	g := set.Govern(gpuDeployment)
	require.Empty(t, g.Skip)
	require.Equal(t, &engine.StrategyRules{
		Name: "kai-gpu-sharing", Upsize: true, Downsize: true, Ceiling: 1, Floor: policy.DefaultFloor,
		MoveToKAI: true, VLLMBufferPercent: 10, Queue: policy.DefaultQueue, MinChangePercent: policy.DefaultMinChangePercent,
	}, g.Strategy)
	require.Equal(t, &engine.ProactiveRules{Window: 7 * 24 * time.Hour, MinHistory: 24 * time.Hour, HeadroomPercent: 20, ComputePercentile: 100}, g.Proactive)
	mapping := func(metric string) usage.Mapping {
		// Named: the starter names its series, so no preset remaps them.
		return usage.Mapping{Metric: metric, NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container", Named: true}
	}
	require.Equal(t, &engine.ReactiveRules{
		MinPodMetricsAge: 10 * time.Minute,
		Metrics: map[usage.Metric]*engine.MetricRules{
			usage.Compute: {
				Source: mapping("kubex_gpu_container_sm_utilization_percent"), Interpretation: policy.FullGPU,
				Upsize:    &engine.UpsizeRules{ThresholdPercent: 100, Window: 2 * time.Minute, HeadroomPercent: 20, MaxPercent: 200},
				ScaleBack: &engine.ScaleBackRules{ThresholdPercent: 75, Window: 10 * time.Minute, HeadroomPercent: 20},
			},
			usage.Memory: {
				Source: mapping("kubex_gpu_container_memory_footprint_percent"), Interpretation: policy.CurrentAllocation,
				Upsize:    &engine.UpsizeRules{ThresholdPercent: 100, Window: 2 * time.Minute, HeadroomPercent: 20, MaxPercent: 200},
				ScaleBack: &engine.ScaleBackRules{ThresholdPercent: 75, Window: 10 * time.Minute, HeadroomPercent: 20},
			},
		},
	}, g.Reactive)
	require.Len(t, g.Policies, 2)

	unlabelled := gpuDeployment
	unlabelled.Labels = map[string]string{"app": "chat"}
	out := set.Govern(unlabelled)
	require.Equal(t, engine.CauseOutOfScope, out.Skip)
	require.Equal(t, "no policy selects it", out.Why)
}

// TestLoadMemoryRules: the project's memory settings reach the engine's
// proactive rules as written.
// TestLoadReactiveSeries: a reactive metric with a prometheus block
// reads the series it names, marked so that no metric preset remaps it,
// even when it names the default series; one without reads the default
// series, the run's preset's to map, with the metric's default reading.
func TestLoadReactiveSeries(t *testing.T) {
	const doc = `apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterAutomationStrategy
metadata: {name: gpu}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  enablement: {gpu: {requests: {upsize: true}}}
---
apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterGpuReactivePolicy
metadata: {name: r}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  scope: {workloadTypes: [Deployment]}
  automationStrategyRef: {name: gpu}
  metrics:
    compute:
      upsize: {thresholdPercent: 90}
%s    memory:
      upsize: {thresholdPercent: 90}
`
	defaults := (engine.Rules{}).Sources()
	tests := []struct {
		name, block string
		want        *engine.MetricRules
	}{
		{name: "no block: the default series, unnamed", want: defaults[usage.Compute]},
		{name: "the default series named", block: "      prometheus: {metric: " + policy.DefaultComputeMetric + "}\n",
			want: &engine.MetricRules{Interpretation: policy.FullGPU, Source: usage.Mapping{Metric: policy.DefaultComputeMetric,
				NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container", Named: true}}},
		{name: "another series", block: "      prometheus: {metric: DCGM_FI_DEV_GPU_UTIL, podLabel: exported_pod}\n",
			want: &engine.MetricRules{Interpretation: policy.FullGPU, Source: usage.Mapping{Metric: "DCGM_FI_DEV_GPU_UTIL",
				NamespaceLabel: "namespace", PodLabel: "exported_pod", ContainerLabel: "container", Named: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := policy.Parse("r.yaml", []byte(fmt.Sprintf(doc, tt.block)))
			require.Empty(t, set.Errors)
			g := set.Govern(gpuDeployment)
			require.Empty(t, g.Skip)
			got := g.Reactive.Metrics[usage.Compute]
			require.Equal(t, tt.want.Source, got.Source)
			require.Equal(t, tt.want.Interpretation, got.Interpretation)
			mem := g.Reactive.Metrics[usage.Memory]
			require.Equal(t, defaults[usage.Memory].Source, mem.Source, "memory names none")
			require.Equal(t, defaults[usage.Memory].Interpretation, mem.Interpretation)
		})
	}
}

func TestLoadMemoryRules(t *testing.T) {
	set := policy.Parse("memory.yaml", []byte(`apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterAutomationStrategy
metadata: {name: gpu}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  enablement: {gpu: {requests: {downsize: true}}}
---
apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterProactivePolicy
metadata: {name: p}
spec:
  scope: {workloadTypes: [Deployment]}
  memoryWindow: 14d
  memoryConfidenceHeadroomPercent: 100
  memoryConfidenceWindow: 2d
  memoryDailyPeakPercentile: 90
  breachRiskPercent: 5
  automationStrategyRef: {name: gpu}
`))
	require.Empty(t, set.Errors)
	g := set.Govern(gpuDeployment)
	require.Empty(t, g.Skip)
	require.Equal(t, &engine.ProactiveRules{Window: 7 * 24 * time.Hour, MinHistory: 24 * time.Hour, HeadroomPercent: 20, ComputePercentile: 100,
		MemoryWindow: 14 * 24 * time.Hour, MemoryConfidenceHeadroomPercent: 100, MemoryConfidenceWindow: 48 * time.Hour,
		MemoryDailyPeakPercentile: 90, BreachRiskPercent: 5}, g.Proactive)
}

func TestLoadConsolidationPolicy(t *testing.T) {
	set := policy.Parse("consolidation.yaml", []byte(`apiVersion: rightsizing.kubex.ai/v1alpha1
kind: GpuConsolidationPolicy
metadata:
  name: gpu-consolidation-pool-a
spec:
  experimental:
    gpuKaiContract: v1alpha1-2026-07
  nodeSelector:
    matchLabels:
      cloud.google.com/gke-accelerator: nvidia-tesla-t4
  utilizationThresholdPercent: 75
  requeueAfter: 1m
`))
	require.Empty(t, set.Errors)
	require.Len(t, set.Consolidation, 1)
	require.Equal(t, 75, *set.Consolidation[0].Spec.UtilizationThresholdPercent)
	require.Equal(t, time.Minute, set.Consolidation[0].Spec.RequeueAfter.Duration)
}

// lineOf returns the 1-based line and column of the first occurrence of
// needle in text, so that expected error positions follow the fixture.
func lineOf(t *testing.T, text, needle string) (int, int) {
	t.Helper()
	i := strings.Index(text, needle)
	require.GreaterOrEqual(t, i, 0, "fixture lacks %q", needle)
	line := strings.Count(text[:i], "\n") + 1
	col := i - strings.LastIndex(text[:i], "\n")
	return line, col
}

func TestLoadRefusesBadPolicies(t *testing.T) {
	starter := readStarter(t)
	tests := []struct {
		name string
		// old is replaced by new, once, after the anchor text.
		anchor, old, new string
		// at is the text the error must point at (its first occurrence
		// after the edit).
		at, field, msg string
	}{
		{
			name: "wrong contract version", anchor: "kind: ClusterGpuReactivePolicy",
			old: "gpuKaiContract: v1alpha1-2026-07", new: "gpuKaiContract: v1alpha1-2026-04",
			at: "v1alpha1-2026-04", field: "spec.experimental.gpuKaiContract", msg: `"v1alpha1-2026-04" is not supported`,
		},
		{
			name: "missing contract", anchor: "kind: ClusterGpuReactivePolicy",
			old: "  experimental:\n    gpuKaiContract: v1alpha1-2026-07\n", new: "",
			at: "spec:\n  scope", field: "spec.experimental.gpuKaiContract", msg: "missing",
		},
		{
			// The label goes into a PromQL selector: it must not widen it.
			name: "a label name that is a selector", anchor: "kind: ClusterGpuReactivePolicy",
			old: "namespaceLabel: namespace", new: `namespaceLabel: 'namespace=~".+", x'`,
			at: `'namespace=~`, field: "spec.metrics.compute.prometheus.namespaceLabel", msg: `"namespace=~\".+\", x" is not a Prometheus label name`,
		},
		{
			name: "unknown field", anchor: "scaleBack:",
			old: "metricsWindow: 10m", new: "metricWindow: 10m",
			at: "metricWindow", field: "spec.metrics.compute.scaleBack.metricWindow", msg: "unknown field",
		},
		{
			name: "bad duration", anchor: "kind: ClusterGpuReactivePolicy",
			old: "metricsWindow: 2m", new: "metricsWindow: 2 minutes",
			at: "2 minutes", field: "spec.metrics.compute.upsize.metricsWindow", msg: `invalid duration "2 minutes"`,
		},
		{
			name: "duration below the minimum", anchor: "memory:",
			old: "metricsWindow: 10m", new: "metricsWindow: 30s",
			at: "30s", field: "spec.metrics.memory.scaleBack.metricsWindow", msg: "30s is too short: must be at least 1m",
		},
		{
			name: "percentage out of range", anchor: "scaleBack:",
			old: "thresholdPercent: 75", new: "thresholdPercent: 175",
			at: "175", field: "spec.metrics.compute.scaleBack.thresholdPercent", msg: "175 is out of range",
		},
		{
			name: "wrong type", anchor: "kind: ClusterGpuReactivePolicy",
			old: "headroomPercent: 20", new: `headroomPercent: "20"`,
			at: `"20"`, field: "spec.metrics.compute.upsize.headroomPercent", msg: `expected an integer, got the string "20"`,
		},
		{
			name: "unquoted label value", anchor: "kind: ClusterGpuReactivePolicy",
			old: `nvidia.com/gpu.present: "true"`, new: `nvidia.com/gpu.present: true`,
			at: "true\n", field: "spec.scope.labelSelector.matchLabels.nvidia.com/gpu.present", msg: "expected a string, got the boolean true (quote it)",
		},
		{
			name: "dangling strategy ref", anchor: "kind: ClusterGpuReactivePolicy",
			old: "  automationStrategyRef:\n    name: kai-gpu-sharing", new: "  automationStrategyRef:\n    name: kai-gpu-shared",
			at: "kai-gpu-shared", field: "spec.automationStrategyRef.name", msg: `no ClusterAutomationStrategy named "kai-gpu-shared"`,
		},
		{
			name: "unknown operator", anchor: "kind: ClusterProactivePolicy",
			old: "operator: In", new: "operator: Within",
			at: "Within", field: "spec.scope.namespaceSelector.operator", msg: `"Within" is not supported`,
		},
		{
			name: "a namespace pattern that does not parse", anchor: "kind: ClusterProactivePolicy",
			old: `        - "*"`, new: `        - "ml-["`,
			at: `"ml-["`, field: "spec.scope.namespaceSelector.values[0]", msg: `"ml-[" is neither a namespace nor a pattern such as team-*`,
		},
		{
			name: "project field in Kubex group", anchor: "kind: ClusterAutomationStrategy",
			old: "        setFromUnspecified: false", new: "        setFromUnspecified: false\n        floor: \"0.1\"",
			at: "floor", field: "spec.enablement.gpu.requests.floor", msg: "field is only available in apiVersion gpu-rightsizing.github.io/v1alpha1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := strings.Index(starter, tt.anchor)
			require.GreaterOrEqual(t, i, 0)
			j := strings.Index(starter[i:], tt.old)
			require.GreaterOrEqual(t, j, 0, "fixture lacks %q after %q", tt.old, tt.anchor)
			text := starter[:i+j] + tt.new + starter[i+j+len(tt.old):]
			atFrom := strings.Index(text, tt.anchor)
			line, col := lineOf(t, text[atFrom:], tt.at)
			line += strings.Count(text[:atFrom], "\n")
			if line == strings.Count(text[:atFrom], "\n")+1 {
				col += atFrom - strings.LastIndex(text[:atFrom], "\n") - 1
			}

			set := policy.Parse("policies.yaml", []byte(text))
			require.NotEmpty(t, set.Errors)
			want := fmt.Sprintf("policies.yaml:%d:%d: %s: %s", line, col, tt.field, tt.msg)
			require.Contains(t, set.Errors[0].Error(), want)

			// docs/design.md §3: a bad policy stops that policy, and nothing it
			// governs is changed.
			require.Equal(t, engine.CausePolicyInvalid, set.Govern(gpuDeployment).Skip)
		})
	}
}

func TestLoadUnparsablePolicyFileBlocksEverything(t *testing.T) {
	set := policy.Parse("broken.yaml", []byte("apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: [unclosed\n"))
	require.Len(t, set.Errors, 1)
	require.Contains(t, set.Errors[0].Error(), "broken.yaml: yaml: line")
	require.Equal(t, engine.CausePolicyInvalid, set.Govern(gpuDeployment).Skip)
	require.Contains(t, set.Govern(gpuDeployment).Why, "a policy file is invalid")
}

func TestLoadIgnoresOtherGroupsAndKubexKinds(t *testing.T) {
	set := policy.Parse("mixed.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
---
apiVersion: rightsizing.kubex.ai/v1alpha1
kind: ClusterStaticPolicy
metadata: {name: cpu}
spec: {anything: goes}
`))
	require.Empty(t, set.Errors)
	require.Empty(t, set.Broken)
}

func TestLoadRefusesPathsOutsideTheRepository(t *testing.T) {
	root := t.TempDir()
	_, err := policy.Load(context.Background(), root, "../elsewhere")
	require.ErrorContains(t, err, `policy path "../elsewhere" must be relative to the checkout and stay inside it`)

	outside := filepath.Join(t.TempDir(), "secret.yaml")
	require.NoError(t, os.WriteFile(outside, []byte("apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterAutomationStrategy\n"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link.yaml")))
	set, err := policy.Load(context.Background(), root)
	require.NoError(t, err)
	require.Len(t, set.Errors, 1)
	require.ErrorContains(t, set.Errors[0], "link.yaml: symlink leads outside the checkout")
	require.Equal(t, engine.CausePolicyInvalid, set.Govern(gpuDeployment).Skip, "an unreadable file may hold policies")
}

func TestLoadRefusesMoreBadDocuments(t *testing.T) {
	const strategy = `apiVersion: rightsizing.kubex.ai/v1alpha1
kind: ClusterAutomationStrategy
metadata: {name: gpu}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  enablement: {gpu: {requests: {downsize: true}}}
---
`
	const proactive = `apiVersion: rightsizing.kubex.ai/v1alpha1
kind: ProactivePolicy
metadata: {name: p, namespace: team-a}
spec:
  scope: {workloadTypes: [Deployment]}
  automationStrategyRef: {name: gpu}
`
	// withSpec is the strategy, then a ProactivePolicy in the project's
	// group whose spec holds field (at line 13 of the file).
	withSpec := func(field string) string {
		return strategy + "apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ProactivePolicy\nmetadata: {name: p, namespace: team-a}\nspec:\n" +
			"  scope: {workloadTypes: [Deployment]}\n  " + field + "\n  automationStrategyRef: {name: gpu}\n"
	}
	teamA := policy.Target{Ref: usage.Ref{Namespace: "team-a", Kind: "Deployment", Name: "w"}}
	tests := []struct {
		name, doc, err string
	}{
		{
			name: "a namespaced strategy of an unknown version does not fall back to the cluster one",
			doc: strategy + `apiVersion: rightsizing.kubex.ai/v1beta1
kind: AutomationStrategy
metadata: {name: gpu, namespace: team-a}
spec: {}
---
` + proactive,
			err: `p.yaml:8:1: apiVersion: "rightsizing.kubex.ai/v1beta1" is not supported`,
		},
		{
			name: "a misspelt kind",
			doc:  strategy + "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: GPUReactivePolicy\nmetadata: {name: r, namespace: team-a}\n",
			err:  `p.yaml:8:1: kind: unknown kind "GPUReactivePolicy" in rightsizing.kubex.ai/v1alpha1`,
		},
		{
			name: "no kind",
			doc:  strategy + "apiVersion: rightsizing.kubex.ai/v1alpha1\nmetadata: {name: r, namespace: team-a}\n",
			err:  `p.yaml:8:1: kind: unknown kind ""`,
		},
		{
			name: "a defaulted scale-back threshold above the upsize one",
			doc: strategy + `apiVersion: rightsizing.kubex.ai/v1alpha1
kind: GpuReactivePolicy
metadata: {name: r, namespace: team-a}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  scope: {workloadTypes: [Deployment]}
  metrics:
    compute:
      upsize: {thresholdPercent: 60}
      scaleBack: {metricsWindow: 10m}
      prometheus: {metric: m}
  automationStrategyRef: {name: gpu}
`,
			err: "p.yaml:17:7: spec.metrics.compute.scaleBack.thresholdPercent: 75 must be below the upsize threshold 60",
		},
		{
			name: "a missing field of a missing parent still has a line",
			doc:  strategy + "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ProactivePolicy\n",
			err:  "p.yaml:8:1: metadata.name: missing",
		},
		{
			name: "a duration too long to represent",
			doc:  withSpec("window: 65535w"),
			err:  `p.yaml:13:11: spec.window: invalid duration "65535w": longer than 3650d`,
		},
		{
			name: "a memory window shorter than the window",
			doc:  withSpec("memoryWindow: 3d"),
			err:  `p.yaml:13:17: spec.memoryWindow: 3d is shorter than the window 7d`,
		},
		{
			name: "a memory confidence headroom out of range",
			doc:  withSpec("memoryConfidenceHeadroomPercent: 900"),
			err:  `p.yaml:13:36: spec.memoryConfidenceHeadroomPercent: 900`,
		},
		{
			name: "a memory confidence window longer than the window",
			doc:  withSpec("memoryConfidenceWindow: 8d"),
			err:  `p.yaml:13:27: spec.memoryConfidenceWindow: 8d is longer than the window 7d`,
		},
		{
			name: "a daily peak percentile below 50",
			doc:  withSpec("memoryDailyPeakPercentile: 20"),
			err:  `p.yaml:13:30: spec.memoryDailyPeakPercentile: 20`,
		},
		{
			name: "a breach risk above even odds",
			doc:  withSpec("breachRiskPercent: 60"),
			err:  `p.yaml:13:22: spec.breachRiskPercent: 60`,
		},
		{
			name: "no breach risk at all",
			doc:  withSpec("breachRiskPercent: 0"),
			err:  `p.yaml:13:22: spec.breachRiskPercent: 0`,
		},
		{
			name: "a GPU memory that is not one",
			doc: `apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterAutomationStrategy
metadata: {name: gpu}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  enablement: {gpu: {requests: {downsize: true}}}
  kai: {gpuMemoryMiB: 80}
---
` + proactive,
			err: "p.yaml:7:23: spec.kai.gpuMemoryMiB: 80 is not the memory of a GPU in MiB: use 1024 to 4194304 (e.g. 81920 for 80 GiB)",
		},
		{
			// It would reach the forge as it is, after the branch is pushed.
			name: "an empty pull request label",
			doc: `apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterAutomationStrategy
metadata: {name: gpu}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  gitops:
    labels: [gpu, ""]
---
` + proactive,
			err: `p.yaml:7:19: spec.gitops.labels[1]: "" must be a name without surrounding spaces`,
		},
		{
			name: "a padded reviewer",
			doc: `apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterAutomationStrategy
metadata: {name: gpu}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  gitops: {reviewers: [" ana"]}
---
` + proactive,
			err: `spec.gitops.reviewers[0]: " ana" must be a name without surrounding spaces`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := policy.Parse("p.yaml", []byte(tt.doc))
			require.NotEmpty(t, set.Errors)
			require.ErrorContains(t, set.Errors[0], tt.err)
			require.Equal(t, engine.CausePolicyInvalid, set.Govern(teamA).Skip)
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "2m", want: 2 * time.Minute},
		{in: "10m", want: 10 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1w", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "", err: "invalid duration"},
		{in: "10", err: "invalid duration"},
		{in: "m", err: "invalid duration"},
		{in: "2 minutes", err: "invalid duration"},
		{in: "0s", err: "must be more than zero"},
		{in: "-5m", err: "invalid duration"},
		{in: "1.5d", err: "invalid duration"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := policy.ParseDuration(tt.in)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, got, must(policy.ParseDuration(policy.FormatDuration(got))))
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestLoadSkipsHelmTemplates(t *testing.T) {
	root := t.TempDir()
	chart := filepath.Join(root, "charts", "policies")
	require.NoError(t, os.MkdirAll(filepath.Join(chart, "templates"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: policies\nversion: 0.1.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "templates", "strategy.yaml"),
		[]byte("apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterAutomationStrategy\nmetadata:\n  name: {{ .Values.name }}\n{{- end }}\n"), 0o644))
	set, err := policy.Load(context.Background(), root)
	require.NoError(t, err)
	require.Empty(t, set.Errors)
	require.Empty(t, set.Broken)
}

// TestLoadThroughTheReader: policies are read by package checkout's rules,
// the same as workloads.
func TestLoadThroughTheReader(t *testing.T) {
	starter := readStarter(t)
	// Each level names the one before nine times: a few hundred bytes
	// that once took seconds and gigabytes to decode.
	bomb := "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterAutomationStrategy\nmetadata: {name: bomb}\nspec:\n  a0: &a0 [x]\n"
	for i := 1; i <= 12; i++ {
		bomb += fmt.Sprintf("  a%d: &a%d [%s*a%d]\n", i, i, strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 8), i-1)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) (dir string, paths []string)
		// loaded is how many strategies load; errs what Errors say.
		loaded int
		errs   []string
	}{
		{
			name: "a symlinked root",
			setup: func(t *testing.T, root string) (string, []string) {
				writePolicy(t, root, "policies/p.yaml", starter)
				link := filepath.Join(t.TempDir(), "repo")
				require.NoError(t, os.Symlink(root, link))
				return link, nil
			},
			loaded: 1,
		},
		{
			name: "a policy path that is a symlink to a directory",
			setup: func(t *testing.T, root string) (string, []string) {
				writePolicy(t, root, "config/policies/p.yaml", starter)
				writePolicy(t, root, "other/p.yaml", starter)
				require.NoError(t, os.Symlink("config/policies", filepath.Join(root, "policies")))
				return root, []string{"policies"}
			},
			loaded: 1,
		},
		{
			name: "the extension in capitals",
			setup: func(t *testing.T, root string) (string, []string) {
				writePolicy(t, root, "P.YAML", starter)
				return root, nil
			},
			loaded: 1,
		},
		{
			name: "an alias bomb",
			setup: func(t *testing.T, root string) (string, []string) {
				writePolicy(t, root, "bomb.yaml", bomb)
				return root, nil
			},
			errs: []string{"bomb.yaml: line 11: aliases expand beyond the limit: with alias *a5, aliases add more than 1000000 nodes (policies in this file are ignored, and every workload they could govern is left alone)"},
		},
		{
			name: "a file above the size cap",
			setup: func(t *testing.T, root string) (string, []string) {
				writePolicy(t, root, "p.yaml", starter)
				writePolicy(t, root, "huge.yaml", starter+strings.Repeat("#", 8<<20))
				return root, nil
			},
			loaded: 1,
			errs:   []string{"huge.yaml: file too large: more than 8388608 bytes (every workload a policy in it could govern is left alone)"},
		},
		{
			name: "a FIFO",
			setup: func(t *testing.T, root string) (string, []string) {
				require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o644))
				return root, nil
			},
			errs: []string{"fifo.yaml: not a regular file (every workload a policy in it could govern is left alone)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, paths := tt.setup(t, t.TempDir())
			start := time.Now()
			set, err := policy.Load(context.Background(), dir, paths...)
			require.NoError(t, err)
			require.Less(t, time.Since(start), hang)
			var errs []string
			for _, e := range set.Errors {
				errs = append(errs, e.Error())
			}
			require.Equal(t, tt.errs, errs)
			require.Len(t, set.Strategies, tt.loaded)
			if len(tt.errs) > 0 {
				require.Equal(t, engine.CausePolicyInvalid, set.Govern(gpuDeployment).Skip)
			}
		})
	}
}

func writePolicy(t *testing.T, root, name, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}
