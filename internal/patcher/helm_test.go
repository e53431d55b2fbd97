package patcher_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/helm"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// helmEdit is an edit of a workload as the release defined in file
// renders it.
func helmEdit(file string, ref usage.Ref, ops ...workload.Op) patcher.Edit {
	return patcher.Edit{Workload: ref, File: file, Reason: "golden", Ops: ops}
}

// TestHelmGolden: testdata/helm/<case>/original is a repository with
// charts and the releases that render them; expected/ holds the files
// after the edits are written. Run with -update to rewrite expected/.
// The written repository is then discovered again, which renders every
// release with the Helm SDK: each workload must ask for the fraction and
// vLLM utilization wanted.
func TestHelmGolden(t *testing.T) {
	tests := []struct {
		name      string
		workloads []string // as discovered: namespace/name in file
		problems  []string // discovery problems, by file
		edits     []patcher.Edit
		refused   []error
		// refusedText are texts each refusal's message must contain.
		refusedText []string
		// unreleased are the charts no release renders.
		unreleased []string
		// after is each workload's gpu-fraction and vLLM flag after the
		// edits, by namespace/name.
		after map[string][2]string
	}{
		{
			// Two Argo CD Applications render the chart with a values file
			// each. prod's fraction is set in its own file: edited there.
			// vLLM's utilization comes from the chart's values.yaml, which
			// dev renders too: prod's file gets the key.
			name:      "values-per-environment",
			workloads: []string{"dev/chat in argocd/chat-dev.yaml", "inference/chat in argocd/chat-prod.yaml"},
			edits: []patcher.Edit{helmEdit("argocd/chat-prod.yaml", dep("inference", "chat"),
				patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"))},
			after: map[string][2]string{"dev/chat": {"0.3", "0.45"}, "inference/chat": {"0.37", "0.33"}},
		},
		{
			// A Flux HelmRelease of a production-stack style chart: one
			// Deployment per item of servingEngineSpec.modelSpec, in the
			// cluster's values file. Each engine's values are edited in its
			// own item; the other item's equal values are left alone.
			name: "helmrelease",
			workloads: []string{"serving/vllm-llama3-deployment-vllm in clusters/prod/stack.yaml",
				"serving/vllm-qwen-deployment-vllm in clusters/prod/stack.yaml"},
			edits: []patcher.Edit{
				helmEdit("clusters/prod/stack.yaml", dep("serving", "vllm-llama3-deployment-vllm"),
					patcher.SetWholeGPUs(2), patcher.SetVLLMMemoryUtilization("0.85")),
				helmEdit("clusters/prod/stack.yaml", dep("serving", "vllm-qwen-deployment-vllm"),
					patcher.SetVLLMMemoryUtilization("0.8")),
			},
			after: map[string][2]string{"serving/vllm-llama3-deployment-vllm": {"", "0.85"}, "serving/vllm-qwen-deployment-vllm": {"", "0.8"}},
		},
		{
			// A kustomization's helmCharts, rendered here with the SDK
			// (kustomize would run the helm binary): the fraction is in the
			// last of its values files, edited in place, flow style kept.
			name:      "helmcharts-kustomization",
			workloads: []string{"inference/chat in apps/chat/kustomization.yaml"},
			edits:     []patcher.Edit{helmEdit("apps/chat/kustomization.yaml", dep("inference", "chat"), patcher.SetGPUFraction("0.25"))},
			after:     map[string][2]string{"inference/chat": {"0.25", "0.45"}},
		},
		{
			// The kustomization with helmCharts is included by another
			// one, which renames what the chart renders: what is deployed
			// is not traced, so neither is read (kustomize reports the
			// including one).
			name:     "helmcharts-included",
			problems: []string{"apps/chat-canary/kustomization.yaml", "apps/chat/kustomization.yaml"},
			after:    map[string][2]string{},
		},
		{
			// Values written as a YAML mapping in the release definition
			// (Flux spec.values, Argo CD valuesObject) are edited there,
			// like a values file; a value they do not set is added to them
			// rather than to the chart's values.yaml, which both render.
			name:      "inline-values",
			workloads: []string{"prod/chat in deploy/releases.yaml", "staging/chat in deploy/releases.yaml"},
			edits: []patcher.Edit{
				helmEdit("deploy/releases.yaml", dep("prod", "chat"), patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33")),
				helmEdit("deploy/releases.yaml", dep("staging", "chat"), patcher.SetGPUFraction("0.2"), patcher.SetVLLMMemoryUtilization("0.18")),
			},
			after: map[string][2]string{"prod/chat": {"0.37", "0.33"}, "staging/chat": {"0.2", "0.18"}},
		},
		{
			// A fraction the template computes from two values is not
			// traced, nor one whose value sets a ConfigMap too; one set inline in an Application is not edited; a
			// chart whose dependency is not vendored does not render; a
			// chart from a Helm repository is not read; a chart no release
			// names is not rendered. Nothing is written.
			name:       "reported",
			workloads:  []string{"research/embed in argocd/apps.yaml", "research/chat in argocd/apps.yaml", "research/rerank in argocd/apps.yaml"},
			problems:   []string{"argocd/apps.yaml"},
			unreleased: []string{"charts/orphan"},
			edits: []patcher.Edit{
				helmEdit("argocd/apps.yaml", dep("research", "embed"), patcher.SetGPUFraction("0.3")),
				helmEdit("argocd/apps.yaml", dep("research", "chat"), patcher.SetGPUFraction("0.3")),
				helmEdit("argocd/apps.yaml", dep("research", "rerank"), patcher.SetGPUFraction("0.3")),
			},
			refused: []error{helm.ErrHelm, helm.ErrHelm, helm.ErrHelm},
			after:   map[string][2]string{"research/chat": {"0.6", "0.45"}, "research/embed": {"0.5", ""}, "research/rerank": {"0.5", ""}},
		},
		{
			// prod's fraction is in its own values file, but every release
			// of the chart ships that file in a ConfigMap: rendering dev
			// again shows the edit changes it, so it is refused.
			name:      "proof",
			workloads: []string{"dev/chat in argocd/chat-dev.yaml", "inference/chat in argocd/chat-prod.yaml"},
			edits:     []patcher.Edit{helmEdit("argocd/chat-prod.yaml", dep("inference", "chat"), patcher.SetGPUFraction("0.37"))},
			refused:   []error{helm.ErrHelm},
			after:     map[string][2]string{"dev/chat": {"0.3", "0.45"}, "inference/chat": {"0.5", "0.45"}},
		},
		{
			// The fraction is the chart's default, which three releases
			// render. prod and dev want different values: each gets the
			// key in its own values file, and the chart is left alone.
			// staging has no values file of its own: refused.
			name: "shared-default",
			workloads: []string{"dev/chat in argocd/chat-dev.yaml", "prod/chat in argocd/chat-prod.yaml",
				"staging/chat in argocd/chat-staging.yaml"},
			edits: []patcher.Edit{
				helmEdit("argocd/chat-prod.yaml", dep("prod", "chat"), patcher.SetGPUFraction("0.37")),
				helmEdit("argocd/chat-dev.yaml", dep("dev", "chat"), patcher.SetGPUFraction("0.6")),
				helmEdit("argocd/chat-staging.yaml", dep("staging", "chat"), patcher.SetGPUFraction("0.4")),
			},
			refused: []error{helm.ErrHelm},
			after:   map[string][2]string{"dev/chat": {"0.6", "0.45"}, "prod/chat": {"0.37", "0.45"}, "staging/chat": {"0.5", "0.45"}},
		},
		{
			// prod's values file is also named by an Application of a
			// chart from a Helm repository ($values/...), which is not
			// rendered here: what the edit does to it cannot be proven,
			// so the edit is refused, naming it.
			name:        "shared-unrendered",
			workloads:   []string{"dev/chat in argocd/chat-dev.yaml", "inference/chat in argocd/chat-prod.yaml"},
			edits:       []patcher.Edit{helmEdit("argocd/chat-prod.yaml", dep("inference", "chat"), patcher.SetGPUFraction("0.37"))},
			refused:     []error{helm.ErrHelm},
			refusedText: []string{"chat-remote"},
			after:       map[string][2]string{"dev/chat": {"0.3", "0.45"}, "inference/chat": {"0.5", "0.45"}},
		},
		{
			// An Application with spec.sources and a left-over spec.source:
			// Argo CD ignores spec.source, and helm.values when
			// valuesObject is set. The edit goes to sources[0]'s
			// valuesObject.
			name:      "argo-sources",
			workloads: []string{"staging/chat in deploy/app.yaml"},
			edits:     []patcher.Edit{helmEdit("deploy/app.yaml", dep("staging", "chat"), patcher.SetGPUFraction("0.3"))},
			after:     map[string][2]string{"staging/chat": {"0.3", "0.45"}},
		},
		{
			// A chart that renders a StatefulSet: its values are edited where
			// they win, as a Deployment's are (prod's file for the fraction,
			// the chart's values.yaml, which only this release reads, for the
			// flag).
			name:      "kinds",
			workloads: []string{"inference/embed in deploy/embed.yaml"},
			edits: []patcher.Edit{helmEdit("deploy/embed.yaml", usage.Ref{Kind: "StatefulSet", Namespace: "inference", Name: "embed"},
				patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"))},
			after: map[string][2]string{"inference/embed": {"0.37", "0.33"}},
		},
		{
			// A chart that renders NVIDIA Dynamo's DynamoGraphDeployment,
			// a workload per service: the decode worker's fraction in the
			// release's inline values, its vLLM flag in the chart's
			// values.yaml (only this release reads it); the prefill
			// worker's whole GPUs, its resources.limits.gpu, there too.
			name: "dynamo",
			workloads: []string{"inference/llama-frontend in deploy/llama.yaml",
				"inference/llama-vllmprefillworker in deploy/llama.yaml", "inference/llama-vllmdecodeworker in deploy/llama.yaml"},
			edits: []patcher.Edit{
				helmEdit("deploy/llama.yaml", dgdRef("inference", "llama-vllmdecodeworker"),
					patcher.SetGPUFraction("0.4"), patcher.SetVLLMMemoryUtilization("0.36")),
				helmEdit("deploy/llama.yaml", dgdRef("inference", "llama-vllmprefillworker"), patcher.SetWholeGPUs(2)),
			},
			after: map[string][2]string{"inference/llama-frontend": {"", ""},
				"inference/llama-vllmprefillworker": {"", ""}, "inference/llama-vllmdecodeworker": {"0.4", "0.36"}},
		},
		{
			// A chart that renders KServe's InferenceService: the fraction
			// of spec.predictor.annotations in prod's values file, the vLLM
			// flag of the model's args in the chart's values.yaml.
			name:      "inferenceservice",
			workloads: []string{"inference/llm in deploy/llm.yaml"},
			edits: []patcher.Edit{helmEdit("deploy/llm.yaml", isvc("llm"),
				patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"))},
			after: map[string][2]string{"inference/llm": {"0.37", "0.33"}},
		},
		{
			// An Argo Rollout (a plain file) runs the template of the
			// Deployment prod's release renders (spec.workloadRef): the
			// Rollout is the workload, edited where prod's values set the
			// Deployment's; dev's Deployment, in another namespace, stays
			// a workload of its own.
			name:      "workloadref",
			workloads: []string{"dev/chat in argocd/chat-dev.yaml", "inference/chat in argocd/chat-prod.yaml"},
			edits: []patcher.Edit{helmEdit("argocd/chat-prod.yaml", usage.Ref{Kind: "Rollout", Namespace: "inference", Name: "chat"},
				patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"))},
			after: map[string][2]string{"dev/chat": {"0.3", "0.45"}, "inference/chat": {"0.37", "0.33"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join("testdata", "helm", tc.name)
			orig := filepath.Join(dir, "original")
			inv, err := patcher.Discover(ctx, orig)
			require.NoError(t, err)
			problems := problemFiles(t, inv)
			require.Equal(t, tc.problems, problems)
			got := workloadNames(inv)
			require.Equal(t, tc.workloads, got)
			require.Equal(t, tc.unreleased, inv.Unreleased)

			res, err := patcher.Apply(ctx, orig, inv, tc.edits)
			require.NoError(t, err)
			refused := refusedErrs(t, res)
			requireErrors(t, tc.refused, refused, "refusals")
			for i, txt := range tc.refusedText {
				require.ErrorContains(t, refused[i], txt)
			}
			for _, f := range res.Files {
				require.NotEmpty(t, f.Changes, f.Path)
				requireSplicesMake(t, f)
				for _, c := range f.Changes {
					t.Logf("%s: %s: %s -> %s", f.Path, c.Field, c.Old, c.New)
				}
			}

			out := t.TempDir()
			copyTree(t, orig, out)
			require.NoError(t, writeResult(out, res))
			expected := filepath.Join(dir, "expected")
			if *update {
				writeExpected(t, expected, res.Files)
			}
			compareTrees(t, orig, expected, out)

			again, err := patcher.Discover(ctx, out)
			require.NoError(t, err)
			require.Equal(t, len(inv.Problems), len(again.Problems), "%v", again.Problems)
			now := map[string][2]string{}
			for _, w := range again.Workloads {
				util := ""
				for _, c := range w.Containers {
					if c.VLLM {
						util = c.GPUMemoryUtilization
					}
				}
				now[w.Ref.Namespace+"/"+w.Ref.Name] = [2]string{w.GPU.FractionText, util}
			}
			require.Equal(t, tc.after, now)
		})
	}
}

// BenchmarkHelm times one chart with a values file per environment (two
// releases): discovery, which renders both, and an edit of prod's
// fraction and vLLM flag, which renders prod once per candidate value
// to trace each field, then both releases again for the proof.
func BenchmarkHelm(b *testing.B) {
	ctx := context.Background()
	orig := filepath.Join("testdata", "helm", "values-per-environment", "original")
	b.Run("discover", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := patcher.Discover(ctx, orig); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("trace-edit-prove", func(b *testing.B) {
		inv, err := patcher.Discover(ctx, orig)
		require.NoError(b, err)
		edits := []patcher.Edit{helmEdit("argocd/chat-prod.yaml", dep("inference", "chat"),
			patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"))}
		b.ReportAllocs()
		for b.Loop() {
			res, err := patcher.Apply(ctx, orig, inv, edits)
			if err != nil || len(res.Files) != 1 {
				b.Fatal(err, res.Refused)
			}
		}
	})
}

// TestHelmHostileChartIsOneProblem: a release whose templates would
// exhaust memory is a problem naming it, bounded by the render child; the
// release beside it is rendered and its workload discovered.
func TestHelmHostileChartIsOneProblem(t *testing.T) {
	chart := func(tpl string) map[string]string {
		return map[string]string{"Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n", "templates/deploy.yaml": tpl}
	}
	files := map[string]string{}
	for p, b := range chart(`{{ range until 1000000000 }}x{{ end }}`) {
		files["charts/bomb/"+p] = b
	}
	for p, b := range chart(`apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata:
      labels: {app: x}
      annotations: {gpu-fraction: "0.5"}
    spec:
      schedulerName: kai-scheduler
      containers: [{name: x, image: x}]
`) {
		files["charts/good/"+p] = b
	}
	release := func(name, chart string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: " + name + ", namespace: inference}\n" +
			"spec:\n  chart:\n    spec:\n      chart: ./charts/" + chart + "\n      sourceRef: {kind: GitRepository, name: gitops, namespace: flux-system}\n"
	}
	files["apps/bomb.yaml"] = release("bomb", "bomb")
	files["apps/good.yaml"] = release("good", "good")
	root := t.TempDir()
	writeFiles(t, root, files)
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	var names []string
	for _, w := range inv.Workloads {
		names = append(names, w.Ref.Name)
	}
	require.Equal(t, []string{"good"}, names)
	require.Len(t, inv.Problems, 1)
	require.Equal(t, "apps/bomb.yaml", inv.Problems[0].File)
	require.ErrorIs(t, inv.Problems[0], helm.ErrHelm)
	// The heap bound (192 MiB) or the resident backstop stops it, by
	// which the child reaches first (under the race detector, resident
	// memory grows faster than the heap).
	require.Regexp(t, `rendering stopped: more than (192 MiB of memory|\d+ MiB resident)`, inv.Problems[0].Error())
}
