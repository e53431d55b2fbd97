package run_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// liveQuickstart is a git copy of the quickstart whose strategy lets
// urgent upsizes go live (a project policy: gitops is not in Kubex's
// kinds), and a real API server holding its Deployments and KAI queues.
func liveQuickstart(t *testing.T) (repo string, kube *kubeenv.APIServer) {
	t.Helper()
	kube = kubeenv.StartAPIServer(t)
	kube.InstallKAIQueueCRD(t)
	var manifests []string
	manifests = append(manifests, "apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n")
	files, err := filepath.Glob(quickstartRepo + "/apps/*/*.yaml")
	require.NoError(t, err)
	files = append(files, "../../examples/kai-queues/queues.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		manifests = append(manifests, string(b))
	}
	kube.Apply(t, []byte(strings.Join(manifests, "\n---\n")))

	repo = t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	require.NoError(t, os.Remove(filepath.Join(repo, "metrics.om")))
	policy := filepath.Join(repo, "policies", "kai-gpu-sharing.yaml")
	b, err := os.ReadFile(policy)
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), "rightsizing.kubex.ai/v1alpha1", "gpu-rightsizing.github.io/v1alpha1")
	s = strings.Replace(s, "  podEviction:\n    enabled: true\n---", "  podEviction:\n    enabled: true\n  gitops:\n    liveUpsize: true\n---", 1)
	require.Contains(t, s, "liveUpsize: true")
	require.NoError(t, os.WriteFile(policy, []byte(s), 0o644))
	gitRepo(t, repo)
	return repo, kube
}

func deployment(t *testing.T, kube *kubeenv.APIServer, name string) *appsv1.Deployment {
	t.Helper()
	code, body := kube.Do(t, kubeenv.Admin, http.MethodGet, "/apis/apps/v1/namespaces/inference/deployments/"+name, nil, "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var d appsv1.Deployment
	require.NoError(t, json.Unmarshal(body, &d))
	return &d
}

// TestRunLive is a run with Live on the quickstart against a real API
// server: a dry run says what it would apply and changes nothing; a run
// without Force reports whoever owns the fields; with it, the urgent
// upsizes go live, each marked with its pull request.
func TestRunLive(t *testing.T) {
	repo, kube := liveQuickstart(t)
	base := options(repo)
	base.Live = run.Live{Enabled: true, Namespaces: []string{"inference"}, MaxChanges: 3, Kubeconfig: kube.Kubeconfig(t, kubeenv.Admin)}
	base.Observe.Output = "table"
	gen := deployment(t, kube, "chat").Generation

	dry := base
	dry.DryRun = true
	out, _ := runOK(t, dry, run.ChangesProposed)
	t.Logf("dry run:\n%s", out)
	require.Contains(t, out, `
LIVE WORKLOAD        OUTCOME      CHANGE                                                                         DETAIL
inference/chat       would apply  gpu-fraction 0.5 → 0.72, container vllm --gpu-memory-utilization 0.45 → 0.64   would apply by server-side apply as gpu-rightsizing-recommender
inference/translate  would apply  gpu-fraction 0.25 → 0.32, container vllm --gpu-memory-utilization 0.22 → 0.28  would apply by server-side apply as gpu-rightsizing-recommender
`)
	d := deployment(t, kube, "chat")
	require.Equal(t, gen, d.Generation, "a dry run changes nothing")
	require.NotContains(t, d.Annotations, live.MarkerAnnotation)

	out, errOut, _, _ := runOnce(t, base)
	t.Logf("without force:\n%s\n%s", out, errOut)
	require.Contains(t, out, "inference/chat       conflict")
	require.Equal(t, gen, deployment(t, kube, "chat").Generation, "a conflict changes nothing")

	forced := base
	forced.Live.Force = true
	out, errOut, _, _ = runOnce(t, forced)
	t.Logf("forced:\n%s\n%s", out, errOut)
	require.Contains(t, out, "inference/chat       applied")
	require.Equal(t, 2.0, summary(t, errOut)["live"].(map[string]any)["applied"], "the summary line counts live changes: chat and translate")
	d = deployment(t, kube, "chat")
	require.Equal(t, gen+1, d.Generation, "the Deployment rolls")
	require.Equal(t, "0.72", d.Spec.Template.Annotations["gpu-fraction"])
	var mk live.Marker
	require.NoError(t, json.Unmarshal([]byte(d.Annotations[live.MarkerAnnotation]), &mk))
	require.Equal(t, "gpu-rightsizing/inference/chat", mk.Branch)
	require.Contains(t, mk.PullRequest, "file://")
	require.Positive(t, mk.Number)

	// A person merges chat's pull request and closes translate's: the next
	// run lets go of chat's live change, Git holding it now, and reverts
	// translate's.
	gitIn(t, repo, "merge", "-q", "--no-ff", "-m", "merge chat", "gpu-rightsizing/inference/chat")
	forge, err := scm.NewLocal(filepath.Join(repo, ".git", "gpu-rightsizing", "pulls"))
	require.NoError(t, err)
	require.NoError(t, forge.SetState(mk.Number, scm.Merged, ""))
	var tr live.Marker
	require.NoError(t, json.Unmarshal([]byte(deployment(t, kube, "translate").Annotations[live.MarkerAnnotation]), &tr))
	require.NoError(t, forge.SetState(tr.Number, scm.Closed, ""))

	revert := forced
	revert.Live.RevertClosed = true
	out, errOut, _, _ = runOnce(t, revert)
	t.Logf("after merge and close:\n%s\n%s", out, errOut)
	require.Contains(t, out, "inference/chat       released")
	require.Contains(t, out, "inference/translate  reverted")
	require.Contains(t, out, "inference/translate  refused   ", "a declined pull request carries no live change")
	d = deployment(t, kube, "translate")
	require.Equal(t, "0.25", d.Spec.Template.Annotations["gpu-fraction"])
	require.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--gpu_memory_utilization=0.22", "the flag as it was spelt")
	require.NotContains(t, d.Annotations, live.MarkerAnnotation)
}
