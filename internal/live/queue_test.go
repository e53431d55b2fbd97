package live_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/live"
)

func queueManifest(name string, quota float64) []byte {
	return limitedQueue(name, "", quota, -1)
}

// limitedQueue is a queue under parent ("" for none) with a GPU quota
// and limit.
func limitedQueue(name, parent string, quota, limit float64) []byte {
	p := ""
	if parent != "" {
		p = "\n  parentQueue: " + parent
	}
	return fmt.Appendf(nil, `apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s}
spec:%s
  resources:
    gpu: {quota: %g, limit: %g, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
`, name, p, quota, limit)
}

// TestQueueQuota: an upsize that would take its KAI queue over its GPU
// quota is warned of, and not applied live; one within quota, or whose
// queue does not exist, is applied.
func TestQueueQuota(t *testing.T) {
	c := startCluster(t, "admin")
	c.s.Apply(t, queueManifest("tight", 1))
	c.s.Apply(t, queueManifest("roomy", 4))
	opts := live.Options{Namespaces: []string{"inference", "staging"}, MaxChanges: 5, Force: true, Now: now}
	// Two replicas of 0.30 elsewhere in the queue, in another namespace.
	c.create(t, workload{ns: "staging", name: "neighbour", fraction: "0.30", queue: "tight", replicas: 2}, "argocd-controller")
	c.create(t, workload{ns: "staging", name: "roomy-neighbour", fraction: "0.30", queue: "roomy", replicas: 2}, "argocd-controller")

	tests := []struct {
		name    string
		w       workload
		want    live.Outcome
		detail  string
		warning string
	}{
		{
			name: "over quota: warned and refused",
			w:    workload{ns: "inference", name: "chat", fraction: "0.30", queue: "tight"},
			want: live.Refused, detail: "not applied live: KAI queue tight",
			warning: "KAI queue tight: the upsize takes its workloads (in inference, staging) from 0.9 to 1.05 GPUs, over its GPU quota of 1: KAI runs pods only within every limit, and non-preemptible ones within every quota, so new pods could stay Pending",
		},
		{
			name: "within quota: applied",
			w:    workload{ns: "inference", name: "roomy", fraction: "0.30", queue: "roomy"},
			want: live.Applied,
		},
		{
			name:    "a queue that does not exist: noted, applied",
			w:       workload{ns: "inference", name: "lost", fraction: "0.30", queue: "missing"},
			want:    live.Applied,
			warning: `KAI queue missing could not be read (queues.scheduling.run.ai "missing" not found): its quota and limit were not checked`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.create(t, tt.w, "argocd-controller")
			tg := target(tt.w)
			tg.VLLM = nil
			res, err := live.NewApplier(c.c, opts).Apply(ctx(t), tg)
			require.NoError(t, err)
			require.Equal(t, tt.want, res.Outcome, res.Detail)
			require.Contains(t, res.Detail, tt.detail)
			if tt.warning == "" {
				require.Empty(t, res.Warnings)
			} else {
				require.Equal(t, []string{tt.warning}, res.Warnings)
			}
		})
	}

	q, err := c.c.CheckQueue(ctx(t), "Deployment", "inference", "chat", 0.45, []string{"inference", "staging"})
	require.NoError(t, err)
	require.Equal(t, live.QueueCheck{Queue: "tight", Requested: 0.9, After: 1.05, Namespaces: []string{"inference", "staging"},
		Over: []kai.Breach{{Queue: "tight", Bound: "quota", Of: 1, After: 1.05}}}, roundQueue(q))
	require.True(t, q.Exceeds())
}

// TestQueueParents: KAI checks a job against its queue and every parent,
// each holding its children's workloads too (KAI v0.17.0,
// capacity_policy); a StatefulSet's pods are preemptible (KAI's default
// grouper gives them the class train), so only limits bind them.
func TestQueueParents(t *testing.T) {
	c := startCluster(t, "admin")
	c.s.Apply(t, limitedQueue("org", "", 10, 1.5))
	c.s.Apply(t, limitedQueue("team-a", "org", -1, -1))
	c.s.Apply(t, limitedQueue("team-b", "org", -1, -1))
	c.create(t, workload{ns: "inference", name: "a", fraction: "0.30", queue: "team-a", replicas: 2}, "argocd-controller")
	c.create(t, workload{ns: "inference", name: "b", fraction: "0.40", queue: "team-b", replicas: 2}, "argocd-controller")
	q, err := c.c.CheckQueue(ctx(t), "Deployment", "inference", "a", 0.45, []string{"inference"})
	require.NoError(t, err)
	require.Equal(t, live.QueueCheck{Queue: "team-a", Requested: 0.6, After: 0.9, Namespaces: []string{"inference"},
		Over: []kai.Breach{{Queue: "org", Bound: "limit", Of: 1.5, After: 1.7}}}, roundQueue(q))
	require.Equal(t, "KAI queue team-a: the upsize takes its workloads (in inference) from 0.6 to 0.9 GPUs, over the GPU limit of 1.5 of its parent queue org (1.7 GPUs with its children): KAI runs pods only within every limit, and non-preemptible ones within every quota, so new pods could stay Pending", q.Warning())
	q, err = c.c.CheckQueue(ctx(t), "Deployment", "inference", "a", 0.35, []string{"inference"})
	require.NoError(t, err)
	require.False(t, q.Exceeds(), "0.7 + 0.8 is the limit: equal fits")
}

// roundQueue rounds the sums to the grid, away from binary error.
func roundQueue(q live.QueueCheck) live.QueueCheck {
	r := func(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
	q.Requested, q.After = r(q.Requested), r(q.After)
	for i := range q.Over {
		q.Over[i].After = r(q.Over[i].After)
	}
	return q
}

// TestQueueOfMissingDeployment: a Deployment not in the cluster has no
// queue to check, and that is no warning.
func TestQueueOfMissingDeployment(t *testing.T) {
	c := startCluster(t, "admin")
	q, err := c.c.CheckQueue(ctx(t), "Deployment", "inference", "absent", 0.5, []string{"inference"})
	require.NoError(t, err)
	require.Equal(t, live.QueueCheck{}, q)
	require.Empty(t, q.Warning())
	require.False(t, q.Exceeds())
}

// TestQueueNumDevices: a pod of gpu-fraction 0.30 on two devices asks
// for 0.6 GPU, and at 0.45 for 0.9: both the current and the new request
// count the devices, so a queue of 0.8 GPU is over quota.
func TestQueueNumDevices(t *testing.T) {
	c := startCluster(t, "admin")
	c.s.Apply(t, queueManifest("pair", 0.8))
	w := workload{ns: "inference", name: "two-devices", fraction: "0.30", queue: "pair", devices: 2}
	c.create(t, w, "argocd-controller")
	q, err := c.c.CheckQueue(ctx(t), "Deployment", w.ns, w.name, 0.45, []string{"inference"})
	require.NoError(t, err)
	require.Equal(t, live.QueueCheck{Queue: "pair", Requested: 0.6, After: 0.9, Namespaces: []string{"inference"},
		Over: []kai.Breach{{Queue: "pair", Bound: "quota", Of: 0.8, After: 0.9}}}, roundQueue(q))
	require.True(t, q.Exceeds())

	tg := target(w)
	tg.VLLM = nil
	res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 1, Force: true, Now: now}).Apply(ctx(t), tg)
	require.NoError(t, err)
	require.Equal(t, live.Refused, res.Outcome, res.Detail)
	require.Contains(t, res.Detail, "from 0.6 to 0.9 GPUs, over its GPU quota of 0.8")
}

// TestQueueFound: the quota check finds the real API server's queue and
// reads its quota.
func TestQueueFound(t *testing.T) {
	c := startCluster(t, "admin")
	c.s.Apply(t, queueManifest("found", 2))
	w := workload{ns: "inference", name: "queued", fraction: "0.30", queue: "found"}
	c.create(t, w, "argocd-controller")
	q, err := c.c.CheckQueue(ctx(t), "Deployment", w.ns, w.name, 0.45, []string{"inference"})
	require.NoError(t, err)
	require.Empty(t, q.Note)
	require.Equal(t, 0.45, q.After)
	require.Empty(t, q.Over)
}

// TestQueueEveryKind: the queue's sum counts every kind the editor sizes,
// each as its controller runs pods (the upstream CRDs installed): a
// Deployment's, StatefulSet's and Rollout's replicas, a LeaderWorkerSet's
// groups of a leader and size-1 workers, an InferenceService's
// predictor at its minReplicas, and each service of a
// DynamoGraphDeployment (the frontend asks for no GPU). An upsize of any
// of them raises its own pods' share only; a graph in another queue
// counts for none.
func TestQueueEveryKind(t *testing.T) {
	c := startCluster(t, "admin", testenvUser("counter"))
	c.s.InstallArgoRolloutCRD(t)
	c.s.InstallLeaderWorkerSetCRD(t)
	c.s.InstallDynamoGraphDeploymentCRD(t)
	installInferenceServiceCRD(t, c)
	c.s.Apply(t, queueManifest("inference", 8))
	// 2 × 0.5 + 4 × 0.5 + (2 leaders + 2 workers) × 0.5 + 1 × 0.5 + 2 × 0.5 + 2 × 0.3 = 7.1 GPUs
	for _, f := range []string{"statefulset.yaml", "rollout.yaml", "leaderworkerset.yaml", "inferenceservice.yaml", "dynamographdeployment.yaml"} {
		c.s.Apply(t, fixture(t, f, nil))
	}
	c.create(t, workload{ns: "inference", name: "dep", fraction: "0.30", queue: "inference", replicas: 2}, "argocd-controller")
	c.s.Apply(t, fixture(t, "dynamographdeployment.yaml", func(m map[string]any) {
		m["metadata"].(map[string]any)["name"] = "elsewhere"
		m["metadata"].(map[string]any)["labels"] = map[string]any{"kai.scheduler/queue": "other"}
	}))

	tests := []struct {
		name, kind, workload string
		after                float64
	}{
		{name: "a Deployment", kind: "Deployment", workload: "dep", after: 7.4},
		{name: "a StatefulSet", kind: "StatefulSet", workload: "embed", after: 7.6},
		// Past the quota, but KAI's default grouper gives a Rollout's and
		// a LeaderWorkerSet's pods the class train: preemptible, so only
		// limits bind them.
		{name: "a Rollout past quota, preemptible", kind: "Rollout", workload: "chat", after: 8.1},
		{name: "a LeaderWorkerSet's leaders and workers past quota, preemptible", kind: "LeaderWorkerSet", workload: "llama", after: 8.1},
		{name: "an InferenceService", kind: "InferenceService", workload: "qwen", after: 7.35},
		{name: "a Dynamo service", kind: "DynamoGraphDeployment", workload: "llama-vllmdecodeworker", after: 7.6},
		{name: "a Deployment over quota", kind: "Deployment", workload: "dep", after: 8.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newGPUs := 0.75
			if tt.kind == "Deployment" {
				newGPUs = (tt.after - 6.5) / 2 // the other workloads hold 6.5
			}
			q, err := c.c.CheckQueue(ctx(t), tt.kind, "inference", tt.workload, newGPUs, []string{"inference"})
			require.NoError(t, err)
			over := tt.after > 8 && tt.kind == "Deployment"
			want := live.QueueCheck{Queue: "inference", Requested: 7.1, After: tt.after, Namespaces: []string{"inference"}}
			if over {
				want.Over = []kai.Breach{{Queue: "inference", Bound: "quota", Of: 8, After: tt.after}}
			}
			require.Equal(t, want, roundQueue(q))
			require.Equal(t, over, q.Exceeds())
			if q.Exceeds() {
				require.Equal(t, fmt.Sprintf("KAI queue inference: the upsize takes its workloads (in inference) from 7.1 to %g GPUs, over its GPU quota of 8: KAI runs pods only within every limit, and non-preemptible ones within every quota, so new pods could stay Pending", tt.after), q.Warning())
			}
		})
	}

	// A user who may not list some of the custom kinds: the sum is a
	// lower bound, and the kinds left out are named.
	t.Run("kinds that may not be listed", func(t *testing.T) {
		c.s.Apply(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: counter}
rules:
  - apiGroups: ["apps"]
    resources: ["deployments", "statefulsets"]
    verbs: ["get", "list"]
  - apiGroups: ["argoproj.io"]
    resources: ["rollouts"]
    verbs: ["get", "list"]
  - apiGroups: ["scheduling.run.ai"]
    resources: ["queues"]
    verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: counter}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: counter}
subjects: [{kind: User, name: counter, apiGroup: rbac.authorization.k8s.io}]
`))
		q, err := client(t, c.s, "counter").CheckQueue(ctx(t), "Rollout", "inference", "chat", 0.75, []string{"inference"})
		require.NoError(t, err)
		// 0.6 + 1 + 2 GPUs of the kinds it may list; queues it may only
		// get, one by one.
		require.Equal(t, live.QueueCheck{Queue: "inference", Requested: 3.6, After: 4.6, Namespaces: []string{"inference"},
			Uncounted: []string{"leaderworkersets.leaderworkerset.x-k8s.io", "inferenceservices.serving.kserve.io", "dynamographdeployments.nvidia.com"}}, roundQueue(q))
		q.Over = []kai.Breach{{Queue: "inference", Bound: "quota", Of: 4, After: 4.6}}
		require.Equal(t, "KAI queue inference: the upsize takes its workloads (in inference) from 3.6 to 4.6 GPUs (not counted, as they may not be listed: leaderworkersets.leaderworkerset.x-k8s.io, inferenceservices.serving.kserve.io, dynamographdeployments.nvidia.com), over its GPU quota of 4: KAI runs pods only within every limit, and non-preemptible ones within every quota, so new pods could stay Pending", q.Warning())
	})

	// A Rollout that runs the pod template of Deployment dep (Argo's
	// spec.workloadRef) charges its own replicas of dep's pods: 3 × 0.3.
	t.Run("a Rollout running a Deployment's template", func(t *testing.T) {
		c.s.Apply(t, fixture(t, "rollout.yaml", func(m map[string]any) {
			m["metadata"].(map[string]any)["name"] = "chat-ref"
			spec := m["spec"].(map[string]any)
			delete(spec, "template")
			spec["replicas"] = 3
			spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "dep"}}
			spec["workloadRef"] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "dep"}
		}))
		q, err := c.c.CheckQueue(ctx(t), "StatefulSet", "inference", "embed", 0.75, []string{"inference"})
		require.NoError(t, err)
		require.Equal(t, live.QueueCheck{Queue: "inference", Requested: 8, After: 8.5, Namespaces: []string{"inference"}}, roundQueue(q))
	})
}
