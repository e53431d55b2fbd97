package plan_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestNoSilentDrop: every object that asks for GPUs, or that a policy
// selects, has a row in the plan: decided when its kind is sized, with
// cause unsupported, naming its kind, when it is not. A StatefulSet that
// a policy's workloadTypes names, with no GPU request, has one too; a
// ConfigMap has none.
func TestNoSilentDrop(t *testing.T) {
	dir := quickstartCopy(t, map[string][2]string{
		// The reactive policy names StatefulSet too.
		"policies/kai-gpu-sharing.yaml": {"    workloadTypes:\n      - Deployment\n  # A pod's first", "    workloadTypes:\n      - Deployment\n      - StatefulSet\n  # A pod's first"},
	})
	gpuTemplate := func(kind, apiVersion, name, path string) string {
		return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: %s, namespace: inference}\n%s", apiVersion, kind, name, path)
	}
	pod := "template:\n  metadata: {annotations: {gpu-fraction: \"0.3\"}}\n  spec: {schedulerName: kai-scheduler, containers: [{name: c, image: i}]}\n"
	indent := func(s, by string) string {
		out := ""
		for _, l := range splitLines(s) {
			out += by + l + "\n"
		}
		return out
	}
	objects := map[string]string{
		"StatefulSet":           gpuTemplate("StatefulSet", "apps/v1", "sts", "spec:\n"+indent(pod, "  ")),
		"DaemonSet":             gpuTemplate("DaemonSet", "apps/v1", "ds", "spec:\n"+indent(pod, "  ")),
		"Rollout":               gpuTemplate("Rollout", "argoproj.io/v1alpha1", "ro", "spec:\n"+indent(pod, "  ")),
		"LeaderWorkerSet":       gpuTemplate("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", "lws", "spec:\n  leaderWorkerTemplate:\n    workerTemplate:\n      spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"),
		"InferenceService":      gpuTemplate("InferenceService", "serving.kserve.io/v1beta1", "isvc", "spec:\n  predictor:\n    model: {resources: {limits: {nvidia.com/gpu: 1}}}\n"),
		"DynamoGraphDeployment": gpuTemplate("DynamoGraphDeployment", "nvidia.com/v1alpha1", "dgd", "spec:\n  services:\n    worker: {resources: {limits: {gpu: \"1\"}}, extraPodSpec: {schedulerName: kai-scheduler}}\n"),
		"AnUnknownGPUKind":      gpuTemplate("Trainer", "example.com/v1", "odd", "spec:\n  resources: {limits: {nvidia.com/gpu: 2}}\n"),
	}
	for kind, doc := range objects {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "apps", kind+".yaml"), []byte(doc), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apps", "selected.yaml"), []byte(
		"apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: selected\n  namespace: inference\n  labels: {nvidia.com/gpu.present: \"true\"}\nspec:\n  template:\n    spec: {containers: [{name: c, image: i}]}\n"+
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: inference}\ndata: {gpu: none}\n"), 0o644))

	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: recorded(t)})
	require.NoError(t, err)
	rows := map[string]plan.Decision{}
	for _, d := range p.Decisions {
		rows[d.Workload.Ref.Kind+"/"+d.Workload.Ref.Name] = d
	}
	// The kinds that are sized are decided; the rest have cause
	// unsupported, naming the kind and the kinds that are sized.
	for _, key := range []string{"StatefulSet/sts", "Rollout/ro", "LeaderWorkerSet/lws", "InferenceService/isvc", "DynamoGraphDeployment/dgd-worker", "StatefulSet/selected"} {
		d, ok := rows[key]
		require.True(t, ok, "no row for %s", key)
		require.NotEqual(t, engine.CauseUnsupported, d.Cause, key)
	}
	for kind, name := range map[string]string{"DaemonSet": "ds", "Trainer": "odd"} {
		d, ok := rows[kind+"/"+name]
		require.True(t, ok, "no row for %s %s", kind, name)
		require.Equal(t, engine.Skipped, d.Action)
		require.Equal(t, engine.CauseUnsupported, d.Cause)
		require.Contains(t, d.Reason(), "kind "+kind+" (")
		require.Contains(t, d.Reason(), "Deployment, StatefulSet, Rollout, LeaderWorkerSet, InferenceService and DynamoGraphDeployment are")
		require.Contains(t, d.Reason(), "it asks for GPUs")
	}
	require.NotContains(t, rows, "ConfigMap/settings")
	require.Equal(t, engine.Upsize, rows["Deployment/chat"].Action, "Deployments are decided as before")
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// TestStatefulSetDecidedLikeItsDeployment: the quickstart's chat as a
// StatefulSet, its pods named as a StatefulSet's (chat-0, chat-1), is
// decided exactly as the Deployment was, from the same samples; the pods
// of chat-canary, whose name shares the prefix, count for neither.
func TestStatefulSetDecidedLikeItsDeployment(t *testing.T) {
	asDeployment, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	want := decisionOf(t, asDeployment, "chat")
	require.Equal(t, "Deployment", want.Workload.Ref.Kind)

	dir := quickstartCopy(t, map[string][2]string{
		"apps/chat/deployment.yaml": {"kind: Deployment\n", "kind: StatefulSet\n"},
	})
	policies := filepath.Join(dir, "policies", "kai-gpu-sharing.yaml")
	pb, err := os.ReadFile(policies)
	require.NoError(t, err)
	both := strings.ReplaceAll(string(pb), "    workloadTypes:\n      - Deployment\n", "    workloadTypes:\n      - Deployment\n      - StatefulSet\n")
	require.NoError(t, os.WriteFile(policies, []byte(both), 0o644))
	manifest := filepath.Join(dir, "apps", "chat", "deployment.yaml")
	b, err := os.ReadFile(manifest)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, []byte(strings.Replace(string(b), "spec:\n  replicas: 2\n", "spec:\n  serviceName: chat\n  replicas: 2\n", 1)), 0o644))
	om, err := os.ReadFile(metricsFile)
	require.NoError(t, err)
	// The pods and their kube_pod_owner series, as a StatefulSet's.
	renamed := strings.NewReplacer(`pod="chat-7c9d8b5f6d-p7w9z"`, `pod="chat-0"`, `pod="chat-7c9d8b5f6d-x2k4q"`, `pod="chat-1"`,
		`owner_kind="ReplicaSet",owner_name="chat-7c9d8b5f6d"`, `owner_kind="StatefulSet",owner_name="chat"`).Replace(string(om))
	require.NotEqual(t, string(om), renamed)
	recording := filepath.Join(t.TempDir(), "metrics.om")
	require.NoError(t, os.WriteFile(recording, []byte(renamed), 0o644))
	src, err := openmetrics.OpenRecorded(recording)
	require.NoError(t, err)

	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: src})
	require.NoError(t, err)
	got := decisionOf(t, p, "chat")
	require.Equal(t, "StatefulSet", got.Workload.Ref.Kind)
	require.Equal(t, want.Action, got.Action, got.Reason())
	require.Equal(t, want.Cause, got.Cause)
	require.Equal(t, want.Recommended, got.Recommended)
	names := func(ps []usage.Pod) (out []string) {
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	require.Equal(t, []string{"chat-0", "chat-1"}, names(got.Usage.Pods))
	for i := range want.Usage.Pods {
		w, g := want.Usage.Pods[i], got.Usage.Pods[i]
		w.Name, g.Name = "", ""
		require.Equal(t, w, g, "the same samples, under the StatefulSet's pod names")
	}
}
