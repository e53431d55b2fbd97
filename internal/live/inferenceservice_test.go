package live_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// isvc is the InferenceService fixture: its predictor inlines the pods'
// annotations and serves its model with vLLM.
var isvc = kindCase{kind: "InferenceService", file: "inferenceservice.yaml",
	collection: "/apis/serving.kserve.io/v1beta1/namespaces/inference/inferenceservices", name: "qwen",
	templates: [][]string{{"spec", "predictor"}}, container: "kserve-container"}

// installInferenceServiceCRD installs KServe v0.20.0's CRD, the one the
// editor's schema test reads, so both hold to the same copy.
func installInferenceServiceCRD(t *testing.T, c testCluster) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "patcher", "testdata", "kinds", "serving.kserve.io_inferenceservices.yaml"))
	require.NoError(t, err)
	c.s.Apply(t, b)
}

// TestLiveInferenceService: an urgent upsize of a KServe InferenceService
// goes live in its predictor's gpu-fraction annotation and its model's
// vLLM args under the tool's field manager, and once the pull request
// merged with Git's values both go back to the GitOps controller.
func TestLiveInferenceService(t *testing.T) {
	c := startCluster(t, "admin")
	installInferenceServiceCRD(t, c)
	k := isvc
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodPatch, k.collection+"/"+k.name+"?fieldManager=argocd-controller",
		fixture(t, k.file, nil), "application/apply-patch+yaml")
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "%s", body)
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	pr, err := prs.Open(ctx(t), scm.NewPullRequest{Branch: "gpu-rightsizing/inference/" + k.name, Base: "main", Title: "t", Body: "b"})
	require.NoError(t, err)
	o := live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}
	tg := live.Target{Namespace: "inference", Name: k.name, Kind: k.kind, Fraction: live.Values{Old: "0.5", New: "0.75"},
		VLLM:    &live.VLLMValues{Container: k.container, Values: live.Values{Old: "0.45", New: "0.6"}},
		Ceiling: 1, MaxPercent: 200, Reason: "reactive upsize", PullRequest: pr.URL, Number: pr.Number, Branch: pr.Branch}

	res, err := live.NewApplier(c.c, o).Apply(ctx(t), tg)
	require.NoError(t, err)
	require.Equal(t, live.Applied, res.Outcome, res.Detail)
	require.Equal(t, []string{`KAI queue inference could not be read (queues.scheduling.run.ai "inference" not found): its quota and limit were not checked`}, res.Warnings)
	obj, mfs := c.object(t, k)
	fraction := []string{"f:spec", "f:predictor", "f:annotations", "f:gpu-fraction"}
	args := []string{"f:spec", "f:predictor", "f:model", "f:args"}
	require.Equal(t, "0.75", at(obj, "spec", "predictor", "annotations", "gpu-fraction"))
	require.Equal(t, []string{live.FieldManager}, managers(t, mfs, fraction...))
	require.Equal(t, []string{live.FieldManager}, managers(t, mfs, args...))
	require.Equal(t, []any{"--model_name=qwen", "--model_id=Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-utilization", "0.6"},
		at(obj, "spec", "predictor", "model", "args"))
	require.Contains(t, managers(t, mfs, "f:spec", "f:predictor", "f:containers"), "argocd-controller", "the atomic containers list stays the controller's")
	var mk live.Marker
	require.NoError(t, json.Unmarshal([]byte(at(obj, "metadata", "annotations", live.MarkerAnnotation).(string)), &mk))
	require.Equal(t, []string{"argocd-controller"}, mk.Owners)

	require.NoError(t, prs.SetState(pr.Number, scm.Merged, ""))
	results, err := live.NewApplier(c.c, o).Reconcile(ctx(t), prs, func(_, name string) (live.GitValues, bool) {
		return live.GitValues{Fraction: "0.75", VLLM: map[string]string{k.container: "0.6"}}, name == k.name
	})
	require.NoError(t, err)
	require.Len(t, results, 1)
	require.Equal(t, live.Released, results[0].Outcome, results[0].Detail)
	after, mfs := c.object(t, k)
	require.Nil(t, at(after, "metadata", "annotations", live.MarkerAnnotation), "marker removed")
	require.Equal(t, at(obj, "spec"), at(after, "spec"), "releasing does not change the spec: nothing rolls")
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, fraction...), "handed back to the manager that applied it before")
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, args...))
	require.Contains(t, managers(t, mfs, "f:spec", "f:predictor", "f:model", "f:modelFormat"), "argocd-controller", "and it keeps everything else it applied")
	for _, mf := range mfs {
		require.NotEqual(t, live.FieldManager, mf.Manager, "the tool holds nothing")
		require.NotEqual(t, live.HandoffManager, mf.Manager)
	}
}

// TestLiveInferenceServiceSidecarArgs: a vLLM flag in a container of the
// predictor's containers list is left to the pull request, since that
// list is atomic to server-side apply; the fraction still goes live.
func TestLiveInferenceServiceSidecarArgs(t *testing.T) {
	c := startCluster(t, "admin")
	installInferenceServiceCRD(t, c)
	k := isvc
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodPatch, k.collection+"/"+k.name+"?fieldManager=argocd-controller",
		fixture(t, k.file, func(m map[string]any) {
			p := m["spec"].(map[string]any)["predictor"].(map[string]any)
			delete(p, "model")
			p["containers"] = []any{map[string]any{"name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
				"args": []any{"--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-utilization", "0.45"}}}
		}), "application/apply-patch+yaml")
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "%s", body)
	tg := live.Target{Namespace: "inference", Name: k.name, Kind: k.kind, Fraction: live.Values{Old: "0.5", New: "0.75"},
		VLLM:    &live.VLLMValues{Container: "vllm", Values: live.Values{Old: "0.45", New: "0.6"}},
		Ceiling: 1, MaxPercent: 200, PullRequest: "https://forge/pull/1", Number: 1, Branch: "b"}
	res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}).Apply(ctx(t), tg)
	require.NoError(t, err)
	require.Equal(t, live.Applied, res.Outcome, res.Detail)
	require.Contains(t, strings.Join(res.Warnings, "\n"), "container vllm: its args are in a list server-side apply owns whole (spec.predictor.containers): left to the pull request")
	obj, mfs := c.object(t, k)
	require.Equal(t, "0.75", at(obj, "spec", "predictor", "annotations", "gpu-fraction"))
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, "f:spec", "f:predictor", "f:containers"))
	require.Equal(t, "0.45", at(obj, "spec", "predictor", "containers").([]any)[0].(map[string]any)["args"].([]any)[3])
}

// TestLiveInferenceServiceRefused: a stopped InferenceService runs no
// pods, so it is refused by name and nothing is written.
func TestLiveInferenceServiceRefused(t *testing.T) {
	c := startCluster(t, "admin")
	installInferenceServiceCRD(t, c)
	k := isvc
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodPatch, k.collection+"/"+k.name+"?fieldManager=argocd-controller",
		fixture(t, k.file, func(m map[string]any) {
			m["metadata"].(map[string]any)["annotations"].(map[string]any)["serving.kserve.io/stop"] = "true"
		}), "application/apply-patch+yaml")
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "%s", body)
	before, _ := c.object(t, k)
	tg := live.Target{Namespace: "inference", Name: k.name, Kind: k.kind, Fraction: live.Values{Old: "0.5", New: "0.75"},
		Ceiling: 1, MaxPercent: 200, PullRequest: "https://forge/pull/1", Number: 1, Branch: "b"}
	res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}).Apply(ctx(t), tg)
	require.NoError(t, err)
	require.Equal(t, live.Refused, res.Outcome, res.Detail)
	require.Equal(t, "InferenceService inference/qwen is stopped (serving.kserve.io/stop): KServe runs none of its pods, so the live fast path refuses it; it waits for its pull request", res.Detail)
	after, _ := c.object(t, k)
	require.Equal(t, at(before, "metadata", "resourceVersion"), at(after, "metadata", "resourceVersion"), "nothing written")
}
