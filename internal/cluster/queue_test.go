package cluster_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// The queues of the test: examples/kai-queues/queues.yaml's shapes, a
// quota of 0 and a GPU section left out.
const queues = `apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: inference}
spec:
  resources:
    gpu: {quota: 4, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-docs}
spec:
  parentQueue: inference
  resources:
    gpu: {quota: 1.5, limit: 2, overQuotaWeight: 3}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: none}
spec:
  parentQueue: inference
  resources:
    gpu: {quota: 0, limit: 0}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: cpu-only}
spec:
  resources:
    cpu: {quota: 1000}
`

// TestReadQueue: a queue's parent and GPU numbers as written on a real
// API server with KAI's upstream CRD, 0 told apart from a field left
// out; a missing or forbidden queue is client-go's error, for the
// caller to word.
func TestReadQueue(t *testing.T) {
	s := kubeenv.StartAPIServer(t, kubeenv.User{Name: "nobody"})
	if s == nil {
		return
	}
	s.InstallKAIQueueCRD(t)
	s.Apply(t, []byte(queues))
	isolate(t)
	_, dyn, err := cluster.Connect(cluster.Options{Kubeconfig: s.Kubeconfig(t, kubeenv.Admin)})
	require.NoError(t, err)
	set := func(v float64) cluster.Amount { return cluster.Amount{Value: v, Set: true} }

	tests := []struct {
		name string
		want cluster.Queue
	}{
		{name: "inference", want: cluster.Queue{Name: "inference", GPU: cluster.Resource{Quota: set(4), Limit: set(-1), OverQuotaWeight: set(1)}}},
		{name: "team-docs", want: cluster.Queue{Name: "team-docs", Parent: "inference",
			GPU: cluster.Resource{Quota: set(1.5), Limit: set(2), OverQuotaWeight: set(3)}}},
		{name: "none", want: cluster.Queue{Name: "none", Parent: "inference", GPU: cluster.Resource{Quota: set(0), Limit: set(0)}}},
		{name: "cpu-only", want: cluster.Queue{Name: "cpu-only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := cluster.ReadQueue(t.Context(), dyn, tt.name)
			require.NoError(t, err)
			require.Equal(t, tt.want, q)
		})
	}

	t.Run("missing", func(t *testing.T) {
		_, err := cluster.ReadQueue(t.Context(), dyn, "gone")
		require.True(t, apierrors.IsNotFound(err), "%v", err)
		require.EqualError(t, err, `queues.scheduling.run.ai "gone" not found`)
	})
	t.Run("forbidden", func(t *testing.T) {
		_, nobody, err := cluster.Connect(cluster.Options{Kubeconfig: s.Kubeconfig(t, "nobody")})
		require.NoError(t, err)
		_, err = cluster.ReadQueue(t.Context(), nobody, "inference")
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		var fe *cluster.FieldError
		require.False(t, errors.As(err, &fe))
	})
}

// TestQueueResource: the Queue resource is a value each caller gets
// afresh; changing one copy changes nothing for the next.
func TestQueueResource(t *testing.T) {
	gvr := cluster.QueueResource()
	require.Equal(t, "scheduling.run.ai/v2, Resource=queues", gvr.String())
	gvr.Resource = "elsewhere"
	require.Equal(t, "queues", cluster.QueueResource().Resource)
}

// TestAmountOr: a field left out gives the default, a 0 written does
// not.
func TestAmountOr(t *testing.T) {
	require.Equal(t, -1.0, cluster.Amount{}.Or(-1))
	require.Equal(t, 0.0, cluster.Amount{Set: true}.Or(-1))
	require.Equal(t, 2.5, cluster.Amount{Value: 2.5, Set: true}.Or(-1))
}
