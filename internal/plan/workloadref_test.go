package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// rolloutLLM is an Argo Rollout that runs the pod template of the
// Deployment of the same name (spec.workloadRef), as Argo's migration
// guide has it; both carry the quickstart's opt-in label.
const rolloutLLM = `apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: llm
  namespace: inference
  labels:
    nvidia.com/gpu.present: "true"
spec:
  replicas: 1
  selector:
    matchLabels:
      app: llm
  workloadRef:
    apiVersion: apps/v1
    kind: Deployment
    name: llm
  strategy:
    canary:
      steps:
        - setWeight: 50
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: rank
  namespace: inference
  labels:
    nvidia.com/gpu.present: "true"
spec:
  selector:
    matchLabels:
      app: rank
  workloadRef:
    apiVersion: apps/v1
    kind: ReplicaSet
    name: rank
`

const deploymentLLM = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm
  namespace: inference
  labels:
    nvidia.com/gpu.present: "true"
spec:
  replicas: 1
  selector:
    matchLabels:
      app: llm
  template:
    metadata:
      labels:
        app: llm
        kai.scheduler/queue: team-assistants
      annotations:
        gpu-fraction: "0.5"
    spec:
      schedulerName: kai-scheduler
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          args: [--model, Qwen/Qwen2.5-7B-Instruct-AWQ, --gpu-memory-utilization, "0.45"]
`

// TestPlanWorkloadRef: a Rollout whose spec.workloadRef names a
// Deployment of the repository is one decided row, the Rollout's, on the
// usage of the Rollout's pods (their ReplicaSet owned by the Rollout);
// its edit goes into the Deployment's file, said of the Rollout. The
// Deployment, though Deployment is in the policies' workloadTypes and it
// carries their label, has no row of its own, and its own pods (Argo's
// default scaleDown never leaves them running) never count for the
// Rollout: by their owner, or, with no kube_replicaset_owner to tell
// the two apart by, for neither. A Rollout whose workloadRef names a
// ReplicaSet is a row with cause unsupported, saying so.
func TestPlanWorkloadRef(t *testing.T) {
	const (
		ns         = "inference"
		rolloutPod = "llm-7d9f8c6b5d-x2b4z"
		ownPod     = "llm-5f6d7b8c9-bcdfg"
	)
	tests := []struct {
		name     string
		owners   bool // kube_replicaset_owner recorded
		action   engine.Action
		pods     []string
		notCount int // pods said in the decision as not counted
	}{
		{name: "ReplicaSet owners recorded", owners: true, action: engine.Upsize, pods: []string{rolloutPod}},
		{name: "no ReplicaSet owners: pod names fit both alike", action: engine.NoChange, notCount: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := quickstartCopy(t, nil)
			pol := filepath.Join(dir, "policies", "kai-gpu-sharing.yaml")
			b, err := os.ReadFile(pol)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(pol, bytes.ReplaceAll(b, []byte("      - Deployment\n"), []byte("      - Deployment\n      - Rollout\n")), 0o644))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "apps", "llm"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "apps", "llm", "rollout.yaml"), []byte(rolloutLLM), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "apps", "llm", "deployment.yaml"), []byte(deploymentLLM), 0o644))

			// Half an hour at 30s: the Rollout's pod at 80% of the GPU's SM,
			// above its 0.5 share; the Deployment's own pod at 95%.
			const n = 60
			rec := &metricstest.Recording{}
			for _, p := range []struct {
				pod, rs, owner string
				sm             float64
			}{{rolloutPod, "llm-7d9f8c6b5d", "Rollout", 80}, {ownPod, "llm-5f6d7b8c9", "Deployment", 95}} {
				rec.Add(metricstest.UsageOf(metricstest.SM, ns, p.pod, "vllm"), 0, 30*time.Second, repeat(p.sm, n)...)
				rec.Add(metricstest.UsageOf("kubex_gpu_container_memory_footprint_percent", ns, p.pod, "vllm"), 0, 30*time.Second, repeat(40, n)...)
				rec.Add(metricstest.PodOwner(ns, p.pod, "ReplicaSet", p.rs), 0, 30*time.Second, repeat(1, n)...)
				rec.Add(metricstest.Series("kube_pod_start_time", "namespace", ns, "pod", p.pod), 0, 30*time.Second,
					repeat(float64(metricstest.T0.Add(-time.Hour).Unix()), n)...)
				if tt.owners {
					rec.Add(metricstest.ReplicaSetOwner(ns, p.rs, p.owner, "llm"), 0, 30*time.Second, repeat(1, n)...)
				}
			}
			p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: metricstest.T0.Add(n * 30 * time.Second), Source: rec.Parse(t)})
			require.NoError(t, err)

			var rows []plan.Decision
			for _, d := range p.Decisions {
				if d.Workload.Ref.Name == "llm" {
					rows = append(rows, d)
				}
			}
			require.Len(t, rows, 1, "one row: the Rollout's")
			d := rows[0]
			require.Equal(t, usage.Ref{Namespace: ns, Kind: "Rollout", Name: "llm"}, d.Workload.Ref)
			require.Equal(t, usage.Ref{Namespace: ns, Kind: "Deployment", Name: "llm"}, d.Workload.Template)
			require.Equal(t, "apps/llm/deployment.yaml", d.Workload.File)
			require.Equal(t, tt.action, d.Action, d.Reason())
			var pods []string
			for _, pod := range d.Usage.Pods {
				pods = append(pods, pod.Name)
			}
			require.Equal(t, tt.pods, pods)
			require.Len(t, d.Usage.Unattributed, tt.notCount, "%v", d.Usage.Unattributed)
			for _, u := range d.Usage.Unattributed {
				require.Contains(t, u, "Deployment llm, Rollout llm alike")
			}

			var js struct {
				Decisions []struct {
					Kind, Name, File, Template string
				}
			}
			var out bytes.Buffer
			require.NoError(t, p.WriteJSON(&out))
			require.NoError(t, json.Unmarshal(out.Bytes(), &js))
			var named []string
			for _, jd := range js.Decisions {
				if jd.Name == "llm" {
					named = append(named, jd.Kind+" "+jd.File+" "+jd.Template)
				}
			}
			require.Equal(t, []string{"Rollout apps/llm/deployment.yaml inference/Deployment/llm"}, named)

			// A Rollout whose workloadRef is not followed has a row
			// saying why.
			rank := decisionOf(t, p, "rank")
			require.Equal(t, engine.CauseUnsupported, rank.Cause)
			require.Contains(t, rank.Reason(), "kind Rollout (argoproj.io/v1alpha1) is sized, but spec.workloadRef names ReplicaSet rank (apps/v1): "+
				"only a Deployment's (apps/v1) pod template is followed, so it is not sized; a policy selects it")
			if tt.action != engine.Upsize {
				return
			}
			require.NoError(t, p.Preview(context.Background()))
			var edited []string
			for _, f := range p.Files {
				for _, c := range f.Changes {
					if c.Workload.Name == "llm" {
						edited = append(edited, f.Path+" "+c.Workload.String()+" "+c.Field)
					}
				}
			}
			require.Equal(t, []string{
				"apps/llm/deployment.yaml inference/Rollout/llm spec.template.metadata.annotations.gpu-fraction",
				"apps/llm/deployment.yaml inference/Rollout/llm spec.template.spec.containers[vllm].args",
			}, edited)
			require.Equal(t, engine.Upsize, decisionOf(t, p, "llm").Action, "the edit was written: %s", strings.Join(edited, "; "))
		})
	}
}

func repeat(v float64, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}
