package live_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/live"
)

func queueManifest(name string, quota float64) []byte {
	return fmt.Appendf(nil, `apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s}
spec:
  resources:
    gpu: {quota: %g, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
`, name, quota)
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
			warning: "KAI queue tight: the upsize takes its Deployments (in inference, staging) from 0.9 to 1.05 GPUs, over its GPU quota of 1: non-preemptible pods run only within quota, so new pods could stay Pending",
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
			warning: `KAI queue missing could not be read (queues.scheduling.run.ai "missing" not found): its quota was not checked`,
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

	q, err := c.c.CheckQueue(ctx(t), "inference", "chat", 0.45, []string{"inference", "staging"})
	require.NoError(t, err)
	require.Equal(t, live.QueueCheck{Queue: "tight", Quota: 1, Requested: 0.9, After: 1.05, Namespaces: []string{"inference", "staging"}}, roundQueue(q))
	require.True(t, q.Exceeds())
}

// roundQueue rounds the sums to the grid, away from binary error.
func roundQueue(q live.QueueCheck) live.QueueCheck {
	r := func(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
	q.Requested, q.After = r(q.Requested), r(q.After)
	return q
}

// TestQueueOfMissingDeployment: a Deployment not in the cluster has no
// queue to check, and that is no warning.
func TestQueueOfMissingDeployment(t *testing.T) {
	c := startCluster(t, "admin")
	q, err := c.c.CheckQueue(ctx(t), "inference", "absent", 0.5, []string{"inference"})
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
	q, err := c.c.CheckQueue(ctx(t), w.ns, w.name, 0.45, []string{"inference"})
	require.NoError(t, err)
	require.Equal(t, live.QueueCheck{Queue: "pair", Quota: 0.8, Requested: 0.6, After: 0.9, Namespaces: []string{"inference"}}, roundQueue(q))
	require.True(t, q.Exceeds())

	tg := target(w)
	tg.VLLM = nil
	res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 1, Force: true, Now: now}).Apply(ctx(t), tg)
	require.NoError(t, err)
	require.Equal(t, live.Refused, res.Outcome, res.Detail)
	require.Contains(t, res.Detail, "from 0.6 to 0.9 GPUs, over its GPU quota of 0.8")
}

// TestQueueResource: the Queue resource is a value each caller gets
// afresh; changing one copy changes nothing for the quota check, which
// still finds the real API server's queues.
func TestQueueResource(t *testing.T) {
	gvr := live.QueueResource()
	require.Equal(t, "scheduling.run.ai/v2, Resource=queues", gvr.String())
	gvr.Resource = "elsewhere"
	require.Equal(t, "queues", live.QueueResource().Resource)

	c := startCluster(t, "admin")
	c.s.Apply(t, queueManifest("found", 2))
	w := workload{ns: "inference", name: "queued", fraction: "0.30", queue: "found"}
	c.create(t, w, "argocd-controller")
	q, err := c.c.CheckQueue(ctx(t), w.ns, w.name, 0.45, []string{"inference"})
	require.NoError(t, err)
	require.Empty(t, q.Note)
	require.Equal(t, 2.0, q.Quota)
}
