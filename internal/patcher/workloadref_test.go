package patcher_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestDiscoverWorkloadRef: an Argo Rollout whose spec.workloadRef names
// a Deployment of the repository in its namespace is a workload of its
// own, read from that Deployment's pod template and edited in its
// document; the Deployment is then no workload of its own. Every other
// spec.workloadRef leaves its Rollout unsupported, saying why.
func TestDiscoverWorkloadRef(t *testing.T) {
	orig := filepath.Join("testdata", "golden", "workloadref", "original")
	inv, err := patcher.Discover(context.Background(), orig)
	require.NoError(t, err)
	require.Empty(t, inv.Problems)

	got := map[usage.Ref]patcher.Workload{}
	for _, w := range inv.Workloads {
		got[w.Ref] = w
	}
	require.Len(t, got, 2, "%v", workloadNames(inv))
	w, ok := got[rollout("chat")]
	require.True(t, ok, "the Rollout is a workload")
	require.Equal(t, dep("inference", "chat-template"), w.Template)
	require.Equal(t, "deployment.yaml", w.File)
	require.Equal(t, 3, w.Line, "the Deployment's document")
	require.Equal(t, "0.5", w.GPU.FractionText, "read from the Deployment's template")
	require.Equal(t, "team-b", w.Queue, "the Rollout's own label, which KAI reads first")
	require.Equal(t, map[string]string{"app": "chat", "kai.scheduler/queue": "team-b"}, w.Labels, "the Rollout's labels, for policies")
	require.Equal(t, "kai-scheduler", w.SchedulerName)
	require.Len(t, w.Containers, 1)
	require.Equal(t, "0.45", w.Containers[0].GPUMemoryUtilization)
	_, ok = got[dep("inference", "chat-template")]
	require.False(t, ok, "the referenced Deployment is sized through the Rollout only")
	_, ok = got[dep("staging", "embed")]
	require.True(t, ok, "a Deployment no Rollout of its namespace runs stays a workload")

	why := map[string]string{}
	for _, u := range inv.Unsupported {
		why[u.Ref.Name] = u.Why
	}
	require.Equal(t, map[string]string{
		"from-replicaset": "spec.workloadRef names ReplicaSet rank (apps/v1): only a Deployment's (apps/v1) pod template is followed, so it is not sized",
		"embed":           "spec.workloadRef names Deployment embed, which the repository has in namespace staging only, not in inference: Argo reads it from the Rollout's namespace",
	}, why)
}

// TestApplyWorkloadRef: the edit of such a Rollout changes the
// Deployment's document, and what it changed, left alone or refused is
// said of the Rollout, the workload decided on.
func TestApplyWorkloadRef(t *testing.T) {
	ctx := context.Background()
	orig := filepath.Join("testdata", "golden", "workloadref", "original")
	inv, err := patcher.Discover(ctx, orig)
	require.NoError(t, err)
	res, err := patcher.Apply(ctx, orig, inv, []patcher.Edit{
		{Workload: rollout("chat"), File: "deployment.yaml", Reason: "sized", Ops: []workload.Op{patcher.SetGPUFraction("0.3"), patcher.SetWholeGPUs(1)}},
	})
	require.NoError(t, err)
	require.Empty(t, res.Files, "KAI refuses a fraction next to nvidia.com/gpu: nothing is written")
	require.Len(t, res.Refused, 1)
	require.Equal(t, rollout("chat"), res.Refused[0].Workload)
	require.Equal(t, "deployment.yaml", res.Refused[0].File)

	res, err = patcher.Apply(ctx, orig, inv, []patcher.Edit{
		{Workload: rollout("chat"), File: "deployment.yaml", Reason: "sized", Ops: []workload.Op{patcher.SetGPUFraction("0.3")}},
	})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	require.Equal(t, "deployment.yaml", res.Files[0].Path)
	require.Equal(t, []changes.Change{{Workload: rollout("chat"), Field: "spec.template.metadata.annotations.gpu-fraction", Old: "0.5", New: "0.3", Reason: "sized", Definition: "deployment.yaml"}},
		res.Files[0].Changes)
}

// TestWorkloadRefOnCluster: the workloadref golden as the editor writes
// it, the Rollout and the Deployment whose template it runs, is accepted
// by the real API server with strict field validation and the upstream
// Argo Rollouts CRD (v1.9.1); the Deployment reads back with the new
// share, the Rollout still names it.
func TestWorkloadRefOnCluster(t *testing.T) {
	kube := kubeenv.StartAPIServer(t)
	kube.InstallArgoRolloutCRD(t)
	for _, ns := range []string{"inference", "staging"} {
		kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n"))
	}
	dir := filepath.Join("testdata", "golden", "workloadref")
	for _, f := range []string{"original/rollout.yaml", "expected/deployment.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		kube.Apply(t, b)
	}
	status, body := kube.Do(t, kubeenv.Admin, "GET", "/apis/apps/v1/namespaces/inference/deployments/chat-template", nil, "")
	require.Equal(t, 200, status, "%s", body)
	require.Equal(t, "0.37", field(t, body, "spec.template.metadata.annotations.gpu-fraction"))
	require.Equal(t, "team-b", field(t, body, "spec.template.metadata.labels.kai.scheduler/queue"))
	status, body = kube.Do(t, kubeenv.Admin, "GET", "/apis/argoproj.io/v1alpha1/namespaces/inference/rollouts/chat", nil, "")
	require.Equal(t, 200, status, "%s", body)
	require.Equal(t, "chat-template", field(t, body, "spec.workloadRef.name"))
	require.Equal(t, "onsuccess", field(t, body, "spec.workloadRef.scaleDown"))
}
