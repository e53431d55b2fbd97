package patcher_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/kustomize"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// dgdRef names the workload of a DynamoGraphDeployment's service.
func dgdRef(ns, name string) usage.Ref {
	return usage.Ref{Kind: "DynamoGraphDeployment", Namespace: ns, Name: name}
}

// kustEdit is an edit of a workload as an overlay builds it.
func kustEdit(overlay string, ref usage.Ref, ops ...workload.Op) patcher.Edit {
	return patcher.Edit{Workload: ref, File: "overlays/" + overlay + "/kustomization.yaml", Reason: "golden", Ops: ops}
}

// TestKustomizeGolden: testdata/kustomize/<case>/original is a repository
// with kustomizations; expected/ holds the files after the edits are
// written (new ones included). Run with -update to rewrite expected/.
// Every overlay is then built from the written files with kustomize, and
// its gpu-fraction must be the one wanted.
func TestKustomizeGolden(t *testing.T) {
	tests := []struct {
		name      string
		workloads []string // as discovered: namespace/name in file
		edits     []patcher.Edit
		refused   []error
		// fractions is the pod gpu-fraction each overlay builds after
		fractions map[string]string
		// problems are the discovery problems expected, by file.
		problems []string
		// built are values the overlays build after, by "overlay kind
		// field path", for kinds other than Deployment.
		built map[string]string
	}{
		{
			// The base is shared by overlays that want different values:
			// the change goes into a new patch of the overlay that wants it.
			name:      "shared-base",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml", "staging/chat in overlays/staging/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27"))},
			fractions: map[string]string{"prod": "0.3", "staging": "0.5"},
		},
		{
			// The overlay's own patch sets the fraction: it is edited there.
			name:      "overlay-patch",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml", "staging/chat in overlays/staging/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.6"))},
			fractions: map[string]string{"prod": "0.6", "staging": "0.5"},
		},
		{
			// An inline patch of the overlay sets it: edited inside the
			// block, its comment kept.
			name:      "inline-patch",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml", "staging/chat in overlays/staging/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.6"))},
			fractions: map[string]string{"prod": "0.6", "staging": "0.5"},
		},
		{
			// prod reads a generator's env file (not YAML), which is read
			// and built with it; the base it shares with staging keeps
			// prod's value, so staging's change goes into a patch of its
			// own.
			name:      "generator-env",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml", "staging/chat in overlays/staging/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("staging", dep("staging", "chat"), patcher.SetGPUFraction("0.3"))},
			fractions: map[string]string{"prod": "0.5", "staging": "0.3"},
		},
		{
			// A JSON 6902 patch sets it as the value of its replace: the
			// value is edited there.
			name:      "json6902",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.6"))},
			fractions: map[string]string{"prod": "0.6"},
		},
		{
			// namePrefix, nameSuffix, namespace and commonLabels give the
			// built identity; only this overlay uses the base, so the base
			// is edited.
			name:      "name-prefix",
			workloads: []string{"ml/team-a-chat-v2 in overlays/prod/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("prod", dep("ml", "team-a-chat-v2"), patcher.SetGPUFraction("0.3"))},
			fractions: map[string]string{"prod": "0.3"},
		},
		{
			// Every overlay wants the same: the base is edited once.
			name:      "same-everywhere",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml", "staging/chat in overlays/staging/kustomization.yaml"},
			edits: []patcher.Edit{
				kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.3")),
				kustEdit("staging", dep("staging", "chat"), patcher.SetGPUFraction("0.3")),
			},
			fractions: map[string]string{"prod": "0.3", "staging": "0.3"},
		},
		{
			// A component both overlays include sets the fraction: editing
			// it would change staging too, which the proof refuses; a new
			// patch in prod, applied after the component, is proven.
			name:      "component",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml", "staging/chat in overlays/staging/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.6"))},
			fractions: map[string]string{"prod": "0.6", "staging": "0.7"},
		},
		{
			// A base still on a whole GPU, which its one overlay puts in a
			// namespace, is moved onto KAI in the base: the annotations the
			// edit adds after the labels are built where kustomize puts
			// them (before), and proven all the same.
			name:      "convert-in-base",
			workloads: []string{"prod/asr-whisper in overlays/prod/kustomization.yaml"},
			edits: []patcher.Edit{kustEdit("prod", dep("prod", "asr-whisper"), patcher.RemoveWholeGPUs(), patcher.SetGPUFraction("0.24"),
				patcher.SetSchedulerName("kai-scheduler"), patcher.SetPodLabel("kai.scheduler/queue", "default-queue"))},
			fractions: map[string]string{"prod": "0.24"},
		},
		{
			// The other kinds: a LeaderWorkerSet's leader and workers are
			// edited together in the overlay's patch that sets both; a
			// StatefulSet's value in the base that only this overlay uses.
			name:      "kinds",
			workloads: []string{"prod/llama in overlays/prod/kustomization.yaml", "prod/embed in overlays/prod/kustomization.yaml"},
			edits: []patcher.Edit{
				kustEdit("prod", usage.Ref{Kind: "LeaderWorkerSet", Namespace: "prod", Name: "llama"}, patcher.SetGPUFraction("0.3")),
				kustEdit("prod", usage.Ref{Kind: "StatefulSet", Namespace: "prod", Name: "embed"}, patcher.SetGPUFraction("0.4")),
			},
			built: map[string]string{
				"prod LeaderWorkerSet spec.leaderWorkerTemplate.leaderTemplate.metadata.annotations.gpu-fraction": "0.3",
				"prod LeaderWorkerSet spec.leaderWorkerTemplate.workerTemplate.metadata.annotations.gpu-fraction": "0.3",
				"prod StatefulSet spec.template.metadata.annotations.gpu-fraction":                                "0.4",
			},
		},
		{
			// NVIDIA Dynamo's DynamoGraphDeployment, a workload per
			// service, renamed with the graph by prod's namePrefix: the
			// decode worker's fraction where each overlay's patch sets it
			// (staging's by target, whatever the name in it); the prefill
			// worker's, defined in the base that staging shares, in a new
			// patch of prod with the vLLM flag of its mainContainer.
			name: "dynamo",
			// (kustomize writes the services in key order)
			workloads: []string{"prod/prod-llama-frontend in overlays/prod/kustomization.yaml",
				"prod/prod-llama-vllmdecodeworker in overlays/prod/kustomization.yaml",
				"prod/prod-llama-vllmprefillworker in overlays/prod/kustomization.yaml",
				"staging/llama-frontend in overlays/staging/kustomization.yaml",
				"staging/llama-vllmdecodeworker in overlays/staging/kustomization.yaml",
				"staging/llama-vllmprefillworker in overlays/staging/kustomization.yaml"},
			edits: []patcher.Edit{
				kustEdit("prod", dgdRef("prod", "prod-llama-vllmdecodeworker"), patcher.SetGPUFraction("0.4")),
				kustEdit("prod", dgdRef("prod", "prod-llama-vllmprefillworker"), patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27")),
				kustEdit("staging", dgdRef("staging", "llama-vllmdecodeworker"), patcher.SetGPUFraction("0.35")),
			},
			built: map[string]string{
				"prod DynamoGraphDeployment spec.services.VllmDecodeWorker.extraPodMetadata.annotations.gpu-fraction":     "0.4",
				"prod DynamoGraphDeployment spec.services.VllmPrefillWorker.extraPodMetadata.annotations.gpu-fraction":    "0.3",
				"prod DynamoGraphDeployment spec.services.VllmPrefillWorker.extraPodSpec.mainContainer.args[4]":           "0.27",
				"staging DynamoGraphDeployment spec.services.VllmDecodeWorker.extraPodMetadata.annotations.gpu-fraction":  "0.35",
				"staging DynamoGraphDeployment spec.services.VllmPrefillWorker.extraPodMetadata.annotations.gpu-fraction": "0.5",
				"staging DynamoGraphDeployment spec.services.VllmPrefillWorker.extraPodSpec.mainContainer.args[4]":        "0.45",
			},
		},
		{
			// A Dynamo service's whole GPU, set by prod's patch in its
			// resources (which the operator gives its main container),
			// moves to KAI: the count is removed where the patch sets it,
			// the fraction and scheduler go to the base only prod builds.
			name:      "dynamo-whole-gpu",
			workloads: []string{"prod/llama-vllmworker in overlays/prod/kustomization.yaml"},
			edits: []patcher.Edit{kustEdit("prod", dgdRef("prod", "llama-vllmworker"),
				patcher.RemoveWholeGPUs(), patcher.SetGPUFraction("0.5"), patcher.SetSchedulerName("kai-scheduler"))},
			built: map[string]string{
				"prod DynamoGraphDeployment spec.services.VllmWorker.extraPodMetadata.annotations.gpu-fraction": "0.5",
				"prod DynamoGraphDeployment spec.services.VllmWorker.extraPodSpec.schedulerName":                "kai-scheduler",
			},
		},
		{
			// KServe's InferenceService: the fraction where prod's patch
			// sets it in spec.predictor.annotations; for the model that
			// staging shares, a new patch in prod that moves it from
			// nvidia.com/gpu to a fraction and sets the vLLM flag in the
			// model's args.
			name: "inferenceservice",
			workloads: []string{"prod/llama in overlays/prod/kustomization.yaml", "prod/chat in overlays/prod/kustomization.yaml",
				"staging/llama in overlays/staging/kustomization.yaml", "staging/chat in overlays/staging/kustomization.yaml"},
			edits: []patcher.Edit{
				kustEdit("prod", usage.Ref{Kind: "InferenceService", Namespace: "prod", Name: "chat"}, patcher.SetGPUFraction("0.3")),
				kustEdit("prod", usage.Ref{Kind: "InferenceService", Namespace: "prod", Name: "llama"},
					patcher.RemoveWholeGPUs(), patcher.SetGPUFraction("0.4"), patcher.SetVLLMMemoryUtilization("0.35")),
			},
			built: map[string]string{
				"prod InferenceService/chat spec.predictor.annotations.gpu-fraction":       "0.3",
				"prod InferenceService/llama spec.predictor.annotations.gpu-fraction":      "0.4",
				"prod InferenceService/llama spec.predictor.model.resources.limits.cpu":    "6",
				"staging InferenceService/llama spec.predictor.model.resources.limits.cpu": "6",
				"staging InferenceService/chat spec.predictor.containers[0].image":         "vllm/vllm-openai:v0.8.5",
			},
		},
		{
			// An Argo Rollout that runs a Deployment's pod template
			// (spec.workloadRef), both in the base: the Rollout is the
			// workload, its edit made where the overlay's patch sets the
			// Deployment's fraction.
			name:      "workloadref",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml"},
			edits: []patcher.Edit{kustEdit("prod", usage.Ref{Kind: "Rollout", Namespace: "prod", Name: "chat"},
				patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27"))},
			built: map[string]string{
				"prod Deployment spec.template.metadata.annotations.gpu-fraction":     "0.3",
				"prod Deployment spec.template.metadata.labels.kai\\.scheduler/queue": "prod",
			},
		},
		{
			// commonAnnotations would put the value on every object.
			name:      "common-annotations",
			workloads: []string{"prod/chat in overlays/prod/kustomization.yaml"},
			edits:     []patcher.Edit{kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.3"))},
			refused:   []error{kustomize.ErrKustomize},
			fractions: map[string]string{"prod": "0.5"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join("testdata", "kustomize", tc.name)
			orig := filepath.Join(dir, "original")
			inv, err := patcher.Discover(ctx, orig)
			require.NoError(t, err)
			problems := problemFiles(t, inv)
			require.Equal(t, tc.problems, problems)
			got := workloadNames(inv)
			require.Equal(t, tc.workloads, got)

			res, err := patcher.Apply(ctx, orig, inv, tc.edits)
			require.NoError(t, err)
			refused := refusedErrs(t, res)
			requireErrors(t, tc.refused, refused, "refusals")

			out := t.TempDir()
			copyTree(t, orig, out)
			require.NoError(t, writeResult(out, res))
			for _, f := range res.Files {
				require.NotEmpty(t, f.Changes, f.Path)
				requireSplicesMake(t, f)
			}
			expected := filepath.Join(dir, "expected")
			if *update {
				writeExpected(t, expected, res.Files)
			}
			want := readTree(t, orig)
			for p, b := range readTree(t, expected) {
				want[p] = b
			}
			have := readTree(t, out)
			require.Equal(t, sortedKeys(want), sortedKeys(have))
			for p := range want {
				require.Equal(t, string(want[p]), string(have[p]), "file %s", p)
			}

			for overlay, fraction := range tc.fractions {
				require.Equal(t, fraction, builtFraction(t, filepath.Join(out, "overlays", overlay)), "kustomize build %s", overlay)
			}
			for key, want := range tc.built {
				overlay, rest, _ := strings.Cut(key, " ")
				kind, field, _ := strings.Cut(rest, " ")
				require.Equal(t, want, builtField(t, filepath.Join(out, "overlays", overlay), kind, field), "kustomize build %s", key)
			}
		})
	}
}

// builtFraction builds dir with kustomize from disk and returns the
// gpu-fraction of the one Deployment's pod template.
func builtFraction(t *testing.T, dir string) string {
	t.Helper()
	return builtField(t, dir, "Deployment", "spec.template.metadata.annotations.gpu-fraction")
}

// builtField builds dir with kustomize from disk and returns field of the
// one object of kind, written Kind or Kind/name.
func builtField(t *testing.T, dir, kind, field string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	require.NoError(t, err)
	var vs []string
	kind, name, named := strings.Cut(kind, "/")
	for _, r := range rm.Resources() {
		if r.GetKind() == kind && (!named || r.GetName() == name) {
			v, err := r.GetString(field)
			require.NoError(t, err)
			vs = append(vs, v)
		}
	}
	require.Len(t, vs, 1)
	return vs[0]
}

// Every name kustomize reads is a kustomization; a directory that does
// not build is a problem, and its files are still not plain workloads.
func TestKustomizeDiscoverNames(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"base/Kustomization":              "resources:\n  - deployment.yaml\n",
		"base/deployment.yaml":            applyDeployment,
		"overlay/kustomization.yml":       "namePrefix: x-\nresources:\n  - ../base\n",
		"broken/kustomization.yaml":       "resources:\n  - missing.yaml\n  - deployment.yaml\n",
		"broken/deployment.yaml":          applyDeployment,
		"plain/deployment.yaml":           applyDeployment,
		"notakustomization/kustomization": "resources: [x]\n",
	})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	var got []string
	for _, w := range inv.Workloads {
		got = append(got, w.Ref.Name+" in "+w.File)
	}
	require.Equal(t, []string{"x-app in overlay/kustomization.yml", "app in plain/deployment.yaml"}, got)
	require.Len(t, inv.Problems, 1)
	require.ErrorIs(t, inv.Problems[0], kustomize.ErrKustomize)
	require.Equal(t, "broken/kustomization.yaml", inv.Problems[0].File)
}

// A kustomization deleted between discovery and the edit refuses the
// edit instead of failing the run.
func TestKustomizeGoneSinceDiscovery(t *testing.T) {
	root := t.TempDir()
	copyTree(t, filepath.Join("testdata", "kustomize", "name-prefix", "original"), root)
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(root, "overlays", "prod", "kustomization.yaml")))
	res, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{kustEdit("prod", dep("ml", "team-a-chat-v2"), patcher.SetGPUFraction("0.3"))})
	require.NoError(t, err)
	require.Empty(t, res.Files)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, workload.ErrNotFound)
}

// TestKustomizeNeverRunsGit: every form kustomize's loader reads as a
// remote repository is refused before any build, even when a directory of
// that exact name exists in the checkout (kustomize tries the remote
// first, running git init, remote add and fetch). A git on PATH records
// any call; no kustomize-* directory is left in the temp directory.
func TestKustomizeNeverRunsGit(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "git-calls")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\nexit 1\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, ref := range []string{
		"github.com/acme/gitops/base",
		"GitHub.com/acme/gitops/base",
		"github.com:acme/gitops/base",
		"git@github.com:acme/gitops/base",
		"deploy@gitlab.example:platform/gitops/base",
		"git::https://gitlab.example/platform/gitops/base",
		"https://gitlab.example/platform/gitops.git/base",
		"ssh://git@gitlab.example/platform/gitops/base",
		"file:///srv/gitops/base",
		"FILE:///srv/gitops/base",
	} {
		t.Run(ref, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{
				"overlay/kustomization.yaml": "resources:\n  - " + ref + "\n",
			}
			// The same name as a directory of the checkout, where it can be one.
			if !strings.Contains(ref, "://") && !strings.Contains(ref, ":") {
				files["overlay/"+ref+"/kustomization.yaml"] = "resources:\n  - deployment.yaml\n"
				files["overlay/"+ref+"/deployment.yaml"] = applyDeployment
			}
			writeFiles(t, root, files)
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			var named bool
			for _, p := range inv.Problems {
				require.ErrorIs(t, p, kustomize.ErrKustomize)
				named = named || strings.Contains(p.Error(), "overlay/kustomization.yaml") && strings.Contains(p.Error(), "remote repository")
			}
			require.True(t, named, "the refusal names the kustomization and why: %v", inv.Problems)
			b, _ := os.ReadFile(calls)
			require.Empty(t, string(b), "git was run")
			left, err := filepath.Glob(filepath.Join(tmp, "kustomize-*"))
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

// TestKustomizeNeverFetches: a kustomization that names anything beyond
// the checkout — a URL, a git repository, a Helm chart, a path outside —
// is not built, and so nothing is fetched; one that includes it is not
// built either.
func TestKustomizeNeverFetches(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	tests := []struct {
		name, kustomization string
	}{
		{name: "an HTTP resource", kustomization: "resources:\n  - " + srv.URL + "/deployment.yaml\n"},
		{name: "a git repository", kustomization: "resources:\n  - github.com/acme/gitops//base?ref=main\n"},
		{name: "a patch by URL", kustomization: "resources:\n  - deployment.yaml\npatches:\n  - path: " + srv.URL + "/p.yaml\n"},
		{name: "a Helm chart", kustomization: "helmCharts:\n  - name: x\n    repo: " + srv.URL + "\n"},
		{name: "a path outside the checkout", kustomization: "resources:\n  - ../../elsewhere\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{
				"remote/kustomization.yaml":  tt.kustomization,
				"remote/deployment.yaml":     applyDeployment,
				"overlay/kustomization.yaml": "resources:\n  - ../remote\n",
			})
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			for _, w := range inv.Workloads {
				require.NotContains(t, w.File, "kustomization", "nothing is built through it")
			}
			require.Len(t, inv.Problems, 2, "%v", inv.Problems)
			for _, p := range inv.Problems {
				require.ErrorIs(t, p, kustomize.ErrKustomize)
			}
			require.Zero(t, hits, "nothing was fetched")
		})
	}
}

// chainRepo is n kustomizations, each including the one before; the
// first holds a Deployment, or is broken when broken is set.
func chainRepo(n int, broken bool) map[string]string {
	files := map[string]string{"k0/kustomization.yaml": "resources:\n  - deployment.yaml\n", "k0/deployment.yaml": applyDeployment}
	if broken {
		files["k0/kustomization.yaml"] = "resources:\n  - https://example.com/deployment.yaml\n"
	}
	for i := 1; i < n; i++ {
		files[fmt.Sprintf("k%d/kustomization.yaml", i)] = fmt.Sprintf("resources:\n  - ../k%d\n", i-1)
	}
	return files
}

// TestKustomizeLargeGraphs: include graphs are walked once, whatever
// their shape. A chain of 1,000 builds its one root (walked again at
// every level it would be half a million includes, past the bound of
// 10,000; 2,000 took past the 30 s build bound under -race at load 20); the same chain with
// a broken leaf is one problem per kustomization, each naming only the
// one it includes (not every error below it, again at every level); and
// a fan-out that doubles at each of fifteen levels is refused before it
// is built, naming how often it would include.
func TestKustomizeLargeGraphs(t *testing.T) {
	discover := func(t *testing.T, files map[string]string) *patcher.Inventory {
		t.Helper()
		root := t.TempDir()
		writeFiles(t, root, files)
		inv, err := patcher.Discover(context.Background(), root)
		require.NoError(t, err)
		return inv
	}
	t.Run("a chain of 1,000", func(t *testing.T) {
		inv := discover(t, chainRepo(1000, false))
		require.Empty(t, inv.Problems)
		require.Len(t, inv.Workloads, 1)
		require.Equal(t, "k999/kustomization.yaml", inv.Workloads[0].File)
	})
	t.Run("a chain of 1,500 with a broken leaf", func(t *testing.T) {
		inv := discover(t, chainRepo(1500, true))
		require.Len(t, inv.Problems, 1500)
		size := 0
		for _, p := range inv.Problems {
			size += len(p.Error())
			require.ErrorIs(t, p, kustomize.ErrKustomize)
		}
		require.Less(t, size, 300<<10, "each error is said once")
		require.Contains(t, inv.Problems[1].Error(), "k1/kustomization.yaml includes k0/kustomization.yaml, which is not built")
	})
	t.Run("a fan-out doubling at fifteen levels", func(t *testing.T) {
		files := map[string]string{"l15a/kustomization.yaml": "resources:\n  - deployment.yaml\n", "l15a/deployment.yaml": applyDeployment,
			"l15b/kustomization.yaml": "resources:\n  - deployment.yaml\n", "l15b/deployment.yaml": applyDeployment}
		for i := 14; i >= 0; i-- {
			for _, side := range []string{"a", "b"} {
				files[fmt.Sprintf("l%d%s/kustomization.yaml", i, side)] = fmt.Sprintf("namePrefix: %s%d-\nresources:\n  - ../l%da\n  - ../l%db\n", side, i, i+1, i+1)
			}
		}
		files["top/kustomization.yaml"] = "resources:\n  - ../l0a\n  - ../l0b\n"
		inv := discover(t, files)
		require.Empty(t, inv.Workloads)
		require.Len(t, inv.Problems, 1)
		require.ErrorContains(t, inv.Problems[0], "top/kustomization.yaml includes kustomizations 131071 times over (the bound is 10000): not built")
	})
}

// TestKustomizeGenerators: an overlay whose configMapGenerator and
// secretGenerator read files of the checkout that are not YAML (a
// properties file, an env file) is built, and its GPU Deployment edited
// and proven; a generator naming a file the checkout lacks is refused,
// saying so (not that it is remote).
func TestKustomizeGenerators(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"base/deployment.yaml":    applyDeployment,
		"prod/kustomization.yaml": "resources:\n  - ../base\n" +
			"configMapGenerator:\n  - name: engine\n    files:\n      - engine.properties\n    envs:\n      - tuning.env\n" +
			"secretGenerator:\n  - name: hf\n    files:\n      - token=hf.txt\n",
		"prod/engine.properties":    "max-model-len=8192\n",
		"prod/tuning.env":           "VLLM_WORKER_MULTIPROC_METHOD=spawn\n",
		"prod/hf.txt":               "hf_not_a_real_token\n",
		"broken/kustomization.yaml": "resources:\n  - ../base\nconfigMapGenerator:\n  - name: x\n    files:\n      - missing.properties\n",
	})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	var built []string
	for _, w := range inv.Workloads {
		built = append(built, w.File)
	}
	require.Equal(t, []string{"prod/kustomization.yaml"}, built, "%v", inv.Problems)
	require.Len(t, inv.Problems, 1)
	require.ErrorContains(t, inv.Problems[0], `broken/kustomization.yaml names "missing.properties", which is not a file or directory of the checkout: not built`)

	res, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{{Workload: inv.Workloads[0].Ref, File: "prod/kustomization.yaml", Reason: "t",
		Ops: []workload.Op{patcher.SetGPUFraction("0.4")}}})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.NotEmpty(t, res.Files, "edited, and proven by building the overlay with its generators")
}

// TestKustomizeNewPatchHoldsNoReading: a new patch of an overlay holds
// what the edit does and nothing measured, so that the same change made
// from other readings writes the same bytes (a pull request's branch then
// stays put while its usage moves below a step).
func TestKustomizeNewPatchHoldsNoReading(t *testing.T) {
	orig := filepath.Join("testdata", "kustomize", "shared-base", "original")
	inv, err := patcher.Discover(context.Background(), orig)
	require.NoError(t, err)
	written := map[string]string{}
	for _, reason := range []string{"compute peaked at 9.96% of a GPU", "compute peaked at 11.00% of a GPU"} {
		e := kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27"))
		e.Reason = reason
		res, err := patcher.Apply(context.Background(), orig, inv, []patcher.Edit{e})
		require.NoError(t, err)
		require.Empty(t, res.Refused)
		files := map[string]string{}
		for _, f := range res.Files {
			require.NotContains(t, string(f.New), "peaked", f.Path)
			files[f.Path] = string(f.New)
		}
		if len(written) > 0 {
			require.Equal(t, written, files, "the bytes written depend on the reading")
		}
		written = files
	}
}

// builtArgs builds overlay dir with kustomize from disk and returns the
// args of its one Deployment's first container, or the build's error.
func builtArgs(t *testing.T, dir string) ([]string, error) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, err
	}
	var args []string
	for _, r := range rm.Resources() {
		if r.GetKind() == "Deployment" {
			n, err := r.Pipe(yaml.Lookup("spec", "template", "spec", "containers", "[name=vllm]", "args"))
			require.NoError(t, err)
			require.NotNil(t, n)
			for _, it := range n.YNode().Content {
				args = append(args, it.Value)
			}
		}
	}
	return args, nil
}

// TestKustomizeOverlayArgsFollowTheBase: the vLLM flag an overlay's new
// patch sets is the only argument it pins. After the change merges, the
// base's later changes to the other arguments reach the overlay (built
// with kustomize); a base that moves or changes the flag itself fails the
// overlay's build, naming the test, instead of being overridden; and the
// next recommendation for the overlay edits the value in its patch.
func TestKustomizeOverlayArgsFollowTheBase(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	copyTree(t, filepath.Join("testdata", "kustomize", "shared-base", "original"), repo)
	apply := func(e patcher.Edit) *patcher.Result {
		t.Helper()
		inv, err := patcher.Discover(ctx, repo)
		require.NoError(t, err)
		res, err := patcher.Apply(ctx, repo, inv, []patcher.Edit{e})
		require.NoError(t, err)
		require.Empty(t, res.Refused)
		require.NoError(t, writeResult(repo, res))
		return res
	}
	apply(kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27")))
	prod, staging := filepath.Join(repo, "overlays", "prod"), filepath.Join(repo, "overlays", "staging")
	args, err := builtArgs(t, prod)
	require.NoError(t, err)
	require.Equal(t, []string{"--model", "Qwen/Qwen2.5-7B", "--gpu-memory-utilization", "0.27"}, args)

	// Merged. Then the base changes its model and gains an argument.
	const baseFile = "base/deployment.yaml"
	base, err := os.ReadFile(filepath.Join(repo, baseFile))
	require.NoError(t, err)
	later := strings.Replace(string(base), `args: ["--model", "Qwen/Qwen2.5-7B", "--gpu-memory-utilization", "0.45"]`,
		`args: ["--model", "Qwen/Qwen2.5-14B", "--gpu-memory-utilization", "0.45", "--max-model-len", "8192"]`, 1)
	require.NotEqual(t, string(base), later)
	require.NoError(t, os.WriteFile(filepath.Join(repo, baseFile), []byte(later), 0o644))
	args, err = builtArgs(t, prod)
	require.NoError(t, err)
	require.Equal(t, []string{"--model", "Qwen/Qwen2.5-14B", "--gpu-memory-utilization", "0.27", "--max-model-len", "8192"}, args,
		"the base's new model and argument reach prod; its flag stays prod's")
	args, err = builtArgs(t, staging)
	require.NoError(t, err)
	require.Equal(t, []string{"--model", "Qwen/Qwen2.5-14B", "--gpu-memory-utilization", "0.45", "--max-model-len", "8192"}, args)

	// The next recommendation for prod edits the value where its patch
	// holds it.
	res := apply(kustEdit("prod", dep("prod", "chat"), patcher.SetGPUFraction("0.35"), patcher.SetVLLMMemoryUtilization("0.31")))
	var edited []string
	for _, f := range res.Files {
		edited = append(edited, f.Path)
	}
	require.Equal(t, []string{"overlays/prod/gpu-rightsizing-args-deployment-chat.yaml", "overlays/prod/gpu-rightsizing-deployment-chat.yaml"}, edited)
	args, err = builtArgs(t, prod)
	require.NoError(t, err)
	require.Equal(t, []string{"--model", "Qwen/Qwen2.5-14B", "--gpu-memory-utilization", "0.31", "--max-model-len", "8192"}, args)

	// A base that changes the flag's value, or moves it, fails prod's
	// build loudly: prod's own value would otherwise hide it.
	for _, moved := range []string{
		`args: ["--model", "Qwen/Qwen2.5-14B", "--gpu-memory-utilization", "0.5", "--max-model-len", "8192"]`,
		`args: ["--max-model-len", "8192", "--model", "Qwen/Qwen2.5-14B", "--gpu-memory-utilization", "0.45"]`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(repo, baseFile), []byte(strings.Replace(later,
			`args: ["--model", "Qwen/Qwen2.5-14B", "--gpu-memory-utilization", "0.45", "--max-model-len", "8192"]`, moved, 1)), 0o644))
		_, err = builtArgs(t, prod)
		require.ErrorContains(t, err, "test", moved)
	}
}
