package patcher_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestKindsOnCluster: every kind the editor sizes, as it writes it, is an
// object the real API server accepts with strict field validation, its
// upstream CRD installed (Argo Rollouts v1.9.1, LeaderWorkerSet v0.10.0,
// Dynamo v0.5.1): the edits of the "kinds" golden are created there, and
// the GPU share reads back from each pod template the editor changed; so
// is the "dynamo" golden's expected graph (TestGolden proves the editor
// writes it), its services' pod metadata where the operator reads it.
func TestKindsOnCluster(t *testing.T) {
	ctx := context.Background()
	orig := filepath.Join("testdata", "golden", "kinds", "original")
	inv, err := patcher.Discover(ctx, orig)
	require.NoError(t, err)
	edit := func(kind, name string) patcher.Edit {
		return patcher.Edit{Workload: usage.Ref{Kind: kind, Namespace: "inference", Name: name}, Reason: "cluster",
			Ops: []workload.Op{patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33")}}
	}
	res, err := patcher.Apply(ctx, orig, inv, []patcher.Edit{
		edit("StatefulSet", "embed"), edit("Rollout", "chat"), edit("LeaderWorkerSet", "llama"),
	})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 3)

	kube := kubeenv.StartAPIServer(t)
	kube.InstallArgoRolloutCRD(t)
	kube.InstallLeaderWorkerSetCRD(t)
	kube.InstallDynamoGraphDeploymentCRD(t)
	kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n"))
	dgd, err := os.ReadFile(filepath.Join("testdata", "golden", "dynamo", "expected", "disagg.yaml"))
	require.NoError(t, err)
	kube.Apply(t, dgd)
	out := t.TempDir()
	copyTree(t, orig, out)
	require.NoError(t, writeResult(out, res))
	for _, f := range res.Files {
		b, err := os.ReadFile(filepath.Join(out, f.Path))
		require.NoError(t, err)
		kube.Apply(t, b)
	}
	for _, tc := range []struct {
		path  string
		pods  []string // the pod templates, as paths of the object read back
		want  string
		group string
	}{
		{path: "/apis/apps/v1/namespaces/inference/statefulsets/embed", pods: []string{"spec.template"}},
		{path: "/apis/argoproj.io/v1alpha1/namespaces/inference/rollouts/chat", pods: []string{"spec.template"}},
		{path: "/apis/leaderworkerset.x-k8s.io/v1/namespaces/inference/leaderworkersets/llama",
			pods: []string{"spec.leaderWorkerTemplate.workerTemplate", "spec.leaderWorkerTemplate.leaderTemplate"}},
		{path: "/apis/nvidia.com/v1alpha1/namespaces/inference/dynamographdeployments/llama-disagg",
			pods: []string{"spec.services.VllmDecodeWorker.extraPodMetadata"}, want: "0.25"},
		{path: "/apis/nvidia.com/v1alpha1/namespaces/inference/dynamographdeployments/llama-disagg",
			pods: []string{"spec.services.VllmPrefillWorker.extraPodMetadata"}, want: "0.5"},
	} {
		status, body := kube.Do(t, kubeenv.Admin, "GET", tc.path, nil, "")
		require.Equal(t, 200, status, "%s: %s", tc.path, body)
		for _, p := range tc.pods {
			if tc.want != "" {
				require.Equal(t, tc.want, field(t, body, p+".annotations.gpu-fraction"), "%s %s", tc.path, p)
				continue
			}
			require.Equal(t, "0.37", field(t, body, p+".metadata.annotations.gpu-fraction"), "%s %s", tc.path, p)
		}
	}
}

// field reads the dotted path p of a JSON object; "" when it is absent.
// Keys with dots (annotation names) are matched whole at the end.
func field(t *testing.T, body []byte, p string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(body, &v))
	parts := strings.Split(p, ".")
	for i := 0; i < len(parts); i++ {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		if rest := strings.Join(parts[i:], "."); m[rest] != nil {
			v = m[rest]
			break
		}
		v = m[parts[i]]
	}
	s, _ := v.(string)
	return s
}
