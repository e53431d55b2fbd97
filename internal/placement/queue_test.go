package placement_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/placement"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// queueReader may get KAI's queues, and nothing else of them.
const queueReader = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: queue-reader}
rules:
- apiGroups: [scheduling.run.ai]
  resources: [queues]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: queue-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: queue-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reader}
`

func queue(name, quota string) string {
	return fmt.Sprintf(`apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s}
spec:
  resources:
    gpu: {quota: %s, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
`, name, quota)
}

// childQueue is a queue under parent whose GPU spec names only a quota:
// its limit is absent, which KAI reads as 0.
func childQueue(name, parent, quota string) string {
	return fmt.Sprintf(`apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s}
spec:
  parentQueue: %s
  resources:
    gpu: {quota: %s}
---
`, name, parent, quota)
}

// TestReadQueues: the quotas of the queues the pods name, from KAI's
// Queue objects on a real API server (its upstream CRD), each read once.
func TestReadQueues(t *testing.T) {
	s := kubeenv.StartAPIServer(t, kubeenv.User{Name: "reader"})
	if s == nil {
		return
	}
	s.InstallKAIQueueCRD(t)
	s.Apply(t, []byte(queueReader+"---\n"+queue("inference", "1.5")+queue("batch", "2")+queue("free", "-1")+
		queue("org", "4")+childQueue("team", "org", "1")))
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig(t, "reader"))
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)

	pod := func(name, queue string) consolidate.Pod {
		return consolidate.Pod{Namespace: "ml", Name: name, Queue: queue}
	}
	tests := []struct {
		name  string
		pods  []consolidate.Pod
		want  kai.Queues
		notes []string
	}{
		{name: "no queue named, none read", pods: []consolidate.Pod{pod("a", "")}, want: kai.Queues{}},
		{
			name: "each queue once, by name",
			pods: []consolidate.Pod{pod("a", "inference"), pod("b", "inference"), pod("c", "free")},
			want: kai.Queues{"free": {Name: "free", Quota: -1, Limit: -1}, "inference": {Name: "inference", Quota: 1.5, Limit: -1}},
		},
		{
			name: "a queue's parents too; an absent limit is 0, as KAI reads it",
			pods: []consolidate.Pod{pod("a", "team")},
			want: kai.Queues{"team": {Name: "team", Parent: "org", Quota: 1, Limit: 0}, "org": {Name: "org", Quota: 4, Limit: -1}},
		},
		{
			name:  "a queue that does not exist is noted",
			pods:  []consolidate.Pod{pod("a", "batch"), pod("b", "gone")},
			want:  kai.Queues{"batch": {Name: "batch", Quota: 2, Limit: -1}},
			notes: []string{`KAI queue gone could not be read (queues.scheduling.run.ai "gone" not found): its quota and limit are not checked`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes, err := placement.ReadQueues(context.WithoutCancel(t.Context()), dyn, tt.pods)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.notes, notes)
		})
	}
	t.Run("reads only", func(t *testing.T) {
		queues := schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2", Resource: "queues"}
		err := dyn.Resource(queues).Delete(t.Context(), "inference", metav1.DeleteOptions{})
		require.Error(t, err)
		require.True(t, strings.Contains(err.Error(), "forbidden"), err.Error())
	})
}
