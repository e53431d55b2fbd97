package metrics_test

import (
	"context"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// podName names a pod as Kubernetes' name generator does: the generate-name
// prefix "<replicaset>-" cut to 58 bytes, then 5 random characters.
func podName(replicaSet, random string) string {
	prefix := replicaSet + "-"
	if len(prefix) > 58 {
		prefix = prefix[:58]
	}
	return prefix + random
}

// ownerChange records a pod that kube-state-metrics moves from chat's
// ReplicaSet to chat-canary's after five minutes.
func ownerChange() *metricstest.Recording {
	const min = time.Minute
	return new(metricstest.Recording).
		Add(metricstest.PodOwner("team-a", "adopted", "ReplicaSet", "chat-7d9f8c6b5d"), 0, min, 1, 1, 1, 1, 1).
		Add(metricstest.PodOwner("team-a", "adopted", "ReplicaSet", "chat-canary-5f6d7b8c9"), 5*min, min, 1, 1, 1, 1, 1).
		Add(metricstest.ReplicaSetOwner("team-a", "chat-7d9f8c6b5d", "Deployment", "chat"), 0, min, 1).
		Add(metricstest.ReplicaSetOwner("team-a", "chat-canary-5f6d7b8c9", "Deployment", "chat-canary"), 0, min, 1).
		Add(metricstest.UsageOf(metricstest.SM, "team-a", "adopted", "server"), 0, min, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
}

func TestRecordedUsage(t *testing.T) {
	const (
		a1 = "chat-7d9f8c6b5d-x2b4z"
		a2 = "chat-7d9f8c6b5d-k8s9q"
		c1 = "chat-canary-6d4b9c-x2b4z"
	)
	min := time.Minute

	// Names long enough for Kubernetes to cut their pods' names.
	long := "triton-llama-3-70b-instruct-serving-eu-west-primary-a"         // 53
	longer := long + "-bcdfghj-canary"                                      // 68: its pods show no hash
	veryLong := "triton-llama-3-70b-instruct-serving-eu-west-primary-green" // 57
	twinA := veryLong + "-a"
	twinB := veryLong + "-b"
	require.Len(t, long, 53)
	require.Len(t, veryLong, 57)
	longPod := podName(long+"-7d9f8c6b5d", "x2b4z")   // shows 4 hash characters
	clashPod := podName(longer+"-5f6d7b8c9", "k8s9q") // long-bcdfghj + random
	twinPod := podName(twinA+"-5f6d7b8c9", "q7v2n")   // veryLong- + random
	require.Equal(t, long+"-7d9fx2b4z", longPod)
	require.Equal(t, long+"-bcdfk8s9q", clashPod)
	require.Equal(t, veryLong+"-q7v2n", twinPod)

	tests := []struct {
		name       string
		rec        *metricstest.Recording
		file       string // instead of rec
		at         time.Duration
		lookback   time.Duration
		metrics    map[usage.Metric]usage.Mapping
		containers []string
		workloads  []usage.Ref
		want       string
	}{
		{
			name:     "recorded cluster: kube-state-metrics owners, liveness and start, the latest time",
			file:     "cluster.om",
			at:       9 * min,
			lookback: time.Hour,
			workloads: []usage.Ref{
				metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-a", "chat-canary"),
				{Namespace: "team-a", Kind: "StatefulSet", Name: "embed"},
				metricstest.Deployment("team-a", "ghost"), metricstest.Deployment("team-b", "chat"),
			},
			want: `team-a/Deployment/chat step=1m0s liveKnown=true
  chat-7d9f8c6b5d-k8s9q live=false start=-3600
    compute: 20@0 22@60 24@120 26@180 28@240
    memory: 50@0 50@60 50@120 50@180 50@240
  chat-7d9f8c6b5d-x2b4z live=true start=-3600
    compute: 11@0 13@60 15@120 31@180 19@240 17@300 16@360 15@420 14@480 13@540
    memory: 40@0 40@60 41@120 41@180 42@240 42@300 43@360 43@420 44@480 44@540
team-a/Deployment/chat-canary step=1m0s liveKnown=true
  chat-canary-5f6d7b8c9-bcdfg live=true start=-3600
    compute: 90@0 91@60 92@120 93@180 94@240 95@300 96@360 97@420 98@480 99@540
team-a/StatefulSet/embed step=1m0s liveKnown=true
  embed-0 live=true start=-3600
team-b/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 70@0 70@60 70@120 70@180 70@240 70@300 70@360 70@420 70@480 70@540
`,
		},
		{
			name:      "recorded cluster: an earlier time sees neither later samples nor later deaths",
			file:      "cluster.om",
			at:        3 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=true
  chat-7d9f8c6b5d-k8s9q live=true start=-3600
    compute: 20@0 22@60 24@120 26@180
    memory: 50@0 50@60 50@120 50@180
  chat-7d9f8c6b5d-x2b4z live=true start=-3600
    compute: 11@0 13@60 15@120 31@180
    memory: 40@0 40@60 41@120 41@180
`,
		},
		{
			name: "name pattern: chat takes neither chat-canary's pods nor another namespace's",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 10, 20).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", c1, "server"), 0, min, 90, 91).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-bcd-5f6d7-x2b4z", "server"), 0, min, 80, 81).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chatbot-5f6d7-x2b4z", "server"), 0, min, 70, 71).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-x2b4z", "server"), 0, min, 60, 61).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9f8c6b5d-x2b4", "server"), 0, min, 50, 51).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9f8c6b5d-X2B4Z", "server"), 0, min, 40, 41).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9a8c6b5d-x2b4z", "server"), 0, min, 30, 31).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9f8c6b5d7-x2b4z", "server"), 0, min, 25, 26).
				Add(metricstest.UsageOf(metricstest.SM, "team-b", a1, "server"), 0, min, 99, 99),
			at:        min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 10@0 20@60
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "name pattern: each deployment its own pods",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 10, 20).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a2, "server"), min, min, 30).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", c1, "server"), 0, min, 90, 91).
				Add(metricstest.UsageOf(metricstest.Mem, "team-a", c1, "server"), 0, min, 5, 6),
			at:        min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat-canary"), metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-k8s9q live=false start=-
    compute: 30@60
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 10@0 20@60
team-a/Deployment/chat-canary step=1m0s liveKnown=false
  chat-canary-6d4b9c-x2b4z live=false start=-
    compute: 90@0 91@60
    memory: 5@0 6@60
`,
		},
		{
			name: "name pattern: long names cut by Kubernetes, the longest match wins",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "ml", longPod, "server"), 0, min, 1).
				Add(metricstest.UsageOf(metricstest.SM, "ml", podName(long+"-5f6d7b8c9", "bcdfg"), "server"), 0, min, 2).
				Add(metricstest.UsageOf(metricstest.SM, "ml", clashPod, "server"), 0, min, 3).
				Add(metricstest.UsageOf(metricstest.SM, "ml", podName(twinA+"-5f6d7b8c9", "x2b4z"), "server"), 0, min, 4).
				Add(metricstest.UsageOf(metricstest.Mem, "ml", podName(twinB+"-5f6d7b8c9", "x2b4z"), "server"), 0, min, 5),
			at:        0,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("ml", long), metricstest.Deployment("ml", longer), metricstest.Deployment("ml", twinA), metricstest.Deployment("ml", twinB)},
			want: `ml/Deployment/` + long + ` step=1m0s liveKnown=false
  ` + long + `-5f6dbcdfg live=false start=-
    compute: 2@0
  ` + longPod + ` live=false start=-
    compute: 1@0
ml/Deployment/` + longer + ` step=1m0s liveKnown=false
  ` + clashPod + ` live=false start=-
    compute: 3@0
warning: pod ml/` + clashPod + ` counts for Deployment ` + longer + `, the longest name it fits, but fits ` + long + ` too (Kubernetes cut it at 58 characters); record kube_pod_owner to be sure
warning: pod ml/` + veryLong + `-x2b4z counts for no workload: its name fits Deployments ` + twinA + `, ` + twinB + ` alike (Kubernetes cut it at 58 characters); record kube_pod_owner to attribute it
`,
		},
		{
			name: "kube-state-metrics: owners beat names, orphans count for nobody, StatefulSets by kind",
			rec: new(metricstest.Recording).
				Add(metricstest.PodOwner("team-a", "renamed-by-hand", "ReplicaSet", "chat-7d9f8c6b5d"), 0, min, 1, 1).
				Add(metricstest.PodOwner("team-a", "chat-7d9f8c6b5d-zzzzz", "<none>", "<none>"), 0, min, 1, 1).
				Add(metricstest.PodOwner("team-a", "chat-7d9f8c6b5d-q7v2n", "ReplicaSet", "chat-canary-5f6d7b8c9"), 0, min, 1, 1).
				Add(metricstest.PodOwner("team-a", "embed-0", "StatefulSet", "embed"), 0, min, 1, 1).
				Add(metricstest.ReplicaSetOwner("team-a", "chat-7d9f8c6b5d", "Deployment", "chat"), 0, min, 1, 1).
				Add(metricstest.ReplicaSetOwner("team-a", "chat-canary-5f6d7b8c9", "Deployment", "chat-canary"), 0, min, 1, 1).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "renamed-by-hand", "server"), 0, min, 10, 11).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9f8c6b5d-zzzzz", "server"), 0, min, 20, 21).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9f8c6b5d-q7v2n", "server"), 0, min, 30, 31).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "embed-0", "server"), 0, min, 40, 41),
			at:       min,
			lookback: time.Hour,
			workloads: []usage.Ref{
				metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-a", "chat-canary"),
				{Namespace: "team-a", Kind: "StatefulSet", Name: "embed"},
			},
			want: `team-a/Deployment/chat step=1m0s liveKnown=true
  renamed-by-hand live=true start=-
    compute: 10@0 11@60
team-a/Deployment/chat-canary step=1m0s liveKnown=true
  chat-7d9f8c6b5d-q7v2n live=true start=-
    compute: 30@0 31@60
team-a/StatefulSet/embed step=1m0s liveKnown=true
  embed-0 live=true start=-
    compute: 40@0 41@60
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "kube-state-metrics: without ReplicaSet owners, the ReplicaSet's name tells",
			rec: new(metricstest.Recording).
				Add(metricstest.PodOwner("team-a", "p1", "ReplicaSet", "chat-7d9f8c6b5d"), 0, min, 1).
				Add(metricstest.PodOwner("team-a", "p2", "ReplicaSet", "chat-canary-5f6d7b8c9"), 0, min, 1).
				Add(metricstest.PodOwner("team-a", "p3", "ReplicaSet", "standalone"), 0, min, 1).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "p1", "server"), 0, min, 1).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "p2", "server"), 0, min, 2).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "p3", "server"), 0, min, 3),
			at:        0,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat"), {Namespace: "team-a", Kind: "ReplicaSet", Name: "standalone"}},
			want: `team-a/Deployment/chat step=1m0s liveKnown=true
  p1 live=true start=-
    compute: 1@0
team-a/ReplicaSet/standalone step=1m0s liveKnown=true
  p3 live=true start=-
    compute: 3@0
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name:      "kube-state-metrics: the owner at the evaluation time, before a change",
			rec:       ownerChange(),
			at:        4 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-a", "chat-canary")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=true
  adopted live=true start=-
    compute: 0@0 1@60 2@120 3@180 4@240
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name:      "kube-state-metrics: the owner at the evaluation time, after a change",
			rec:       ownerChange(),
			at:        9 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-a", "chat-canary")},
			want: `team-a/Deployment/chat-canary step=1m0s liveKnown=true
  adopted live=true start=-
    compute: 0@0 1@60 2@120 3@180 4@240 5@300 6@360 7@420 8@480 9@540
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "kube-state-metrics: a live pod without data is there, a dead one with data too",
			rec: new(metricstest.Recording).
				Add(metricstest.PodOwner("team-a", "chat-7d9f8c6b5d-q7v2n", "ReplicaSet", "chat-7d9f8c6b5d"), 0, min, 1, 1, 1, 1, 1, 1).
				Add(metricstest.PodOwner("team-a", a1, "ReplicaSet", "chat-7d9f8c6b5d"), 0, min, 1, 1, 1).
				Add(metricstest.PodOwner("team-a", a2, "ReplicaSet", "chat-7d9f8c6b5d"), 0, min, 1, 1, 1, 1).
				// Last seen exactly 150 s before the evaluation time.
				Add(metricstest.PodOwner("team-a", "chat-7d9f8c6b5d-b2d4f", "ReplicaSet", "chat-7d9f8c6b5d"), 30*time.Second, min, 1, 1, 1).
				// Last seen 151 s before.
				Add(metricstest.PodOwner("team-a", "chat-7d9f8c6b5d-c2d4f", "ReplicaSet", "chat-7d9f8c6b5d"), 29*time.Second, min, 1).
				Add(metricstest.ReplicaSetOwner("team-a", "chat-7d9f8c6b5d", "Deployment", "chat"), 0, min, 1, 1, 1, 1, 1, 1).
				Add(metricstest.Series("kube_pod_start_time", "namespace", "team-a", "pod", "chat-7d9f8c6b5d-q7v2n"), 0, min, 1700000000.5).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 10, 11, 12).
				Add(metricstest.UsageOf(metricstest.Mem, "team-a", a2, "server"), 0, min, 20, 21, 22, 23),
			// kube_pod_owner is scraped every minute: a pod is live when
			// seen in the last 2.5 minutes, at 150 s or later.
			at:        5 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=true
  chat-7d9f8c6b5d-b2d4f live=true start=-
  chat-7d9f8c6b5d-k8s9q live=true start=-
    memory: 20@0 21@60 22@120 23@180
  chat-7d9f8c6b5d-q7v2n live=true start=0.5
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 10@0 11@60 12@120
`,
		},
		{
			name: "containers: only the selected ones are summed",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 10, 20).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "sidecar"), 0, min, 1, 2).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "init"), 0, min, 1000, 1000).
				Add(metricstest.Series(metricstest.SM, "namespace", "team-a", "pod", a1), 0, min, 100, 100).
				Add(metricstest.UsageOf(metricstest.Mem, "team-a", a1, "sidecar"), 0, min, 7, 7),
			at:         min,
			lookback:   time.Hour,
			containers: []string{"server", "sidecar"},
			workloads:  []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 11@0 22@60
    memory: 7@0 7@60
`,
		},
		{
			name: "containers: none selected means every series of the pod",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 10, 20).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "sidecar"), 0, min, 1, 2).
				Add(metricstest.Series(metricstest.SM, "namespace", "team-a", "pod", a1), 0, min, 100, 100),
			at:        min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 111@0 122@60
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "containers: a NaN makes the sum NaN; timestamps align exactly",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 10, math.NaN(), 30).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "sidecar"), 0, min, 1, 2, 3).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "proxy"), 30*time.Second, min, 5),
			at:        2 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 11@0 5@30 NaN@60 33@120
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "devices: each device's containers summed, the busiest device deciding, never the devices added up",
			rec: new(metricstest.Recording).
				Add(metricstest.Series(metricstest.SM, "namespace", "team-a", "pod", a1, "container", "server", "gpu_uuid", "GPU-0"), 0, min, 50, 90, 10).
				Add(metricstest.Series(metricstest.SM, "namespace", "team-a", "pod", a1, "container", "sidecar", "gpu_uuid", "GPU-0"), 0, min, 5, 5, 5).
				Add(metricstest.Series(metricstest.SM, "namespace", "team-a", "pod", a1, "container", "server", "gpu_uuid", "GPU-1"), 0, min, 60, 10, 80),
			metrics:   devices(),
			at:        2 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 60@0 95@60 80@120
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "devices: series of one pod that differ in a label the query does not know are not added up",
			rec: new(metricstest.Recording).
				Add(metricstest.Series(metricstest.SM, "cluster", "eu-1", "namespace", "team-a", "pod", a1, "container", "server", "gpu_uuid", "GPU-0"), 0, min, 10, 10, 10, 10).
				Add(metricstest.Series(metricstest.SM, "cluster", "us-1", "namespace", "team-a", "pod", a1, "container", "server", "gpu_uuid", "GPU-0"), 0, min, 70, 70, 70, 70),
			metrics:   devices(),
			at:        3 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  mixed: pod team-a/chat-7d9f8c6b5d-x2b4z has series of kubex_gpu_container_sm_utilization_percent (compute) at the same time that differ in cluster ("eu-1", "us-1"), which the query does not tell apart: they are not added up, and nothing changes on them (narrow the query to one of them, e.g. with --cluster-label)
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 70@0 70@60 70@120 70@180
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
warning: team-a/Deployment/chat: pod team-a/chat-7d9f8c6b5d-x2b4z has series of kubex_gpu_container_sm_utilization_percent (compute) at the same time that differ in cluster ("eu-1", "us-1"), which the query does not tell apart: they are not added up, and nothing changes on them (narrow the query to one of them, e.g. with --cluster-label)
`,
		},
		{
			name: "devices: a restarted container's series follow each other, a scrape of overlap apart",
			rec: new(metricstest.Recording).
				Add(metricstest.Series(metricstest.SM, "namespace", "team-a", "pod", a1, "container", "server", "container_id", "containerd://a", "gpu_uuid", "GPU-0"), 0, min, 40, 40, 0).
				Add(metricstest.Series(metricstest.SM, "namespace", "team-a", "pod", a1, "container", "server", "container_id", "containerd://b", "gpu_uuid", "GPU-0"), 2*min, min, 30, 35, 45, 50),
			metrics:   devices(),
			at:        5 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 40@0 40@60 30@120 35@180 45@240 50@300
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "counters: read as their rate per second, a reset counted from zero",
			rec: new(metricstest.Recording).
				Add(metricstest.Series(metricstest.SM+"_seconds_total", "namespace", "team-a", "pod", a1, "container", "server", "gpu_uuid", "GPU-0"), 0, min,
					600, 3000, 6000, 1200, math.NaN(), 2400, 4800),
			metrics: map[usage.Metric]usage.Mapping{usage.Compute: {Metric: metricstest.SM + "_seconds_total",
				NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container", DeviceLabel: "gpu_uuid"}},
			at:        6 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			// (3000-600)/60 = 40, (6000-3000)/60 = 50, a reset: 1200/60
			// = 20, nothing across the NaN, then (4800-2400)/60 = 40.
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 40@60 50@120 20@180 40@360
`,
		},
		{
			name: "exported labels: a ServiceMonitor without honorLabels",
			rec: new(metricstest.Recording).
				Add(metricstest.Series(metricstest.SM, "container", "exporter", "exported_container", "server", "exported_namespace", "team-a", "exported_pod", a1,
					"namespace", "monitoring", "pod", "kubex-exporter-x2b4z"), 0, min, 10, 20).
				Add(metricstest.Series(metricstest.SM, "container", "exporter", "exported_container", "server", "exported_namespace", "team-a", "exported_pod", a2,
					"namespace", "monitoring", "pod", "kubex-exporter-x2b4z"), 0, min, 30, 40).
				Add(metricstest.Series(metricstest.Mem, "exported_namespace", "team-a", "exported_pod", a1, "container", "server"), 0, min, 5, 6),
			at:         min,
			lookback:   time.Hour,
			containers: []string{"server"},
			workloads:  []usage.Ref{metricstest.Deployment("team-a", "chat"), metricstest.Deployment("monitoring", "kubex-exporter")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-k8s9q live=false start=-
    compute: 30@0 40@60
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 10@0 20@60
    memory: 5@0 6@60
warning: metric kubex_gpu_container_sm_utilization_percent (compute): took exported_namespace, exported_pod, exported_container for namespace, pod, container (the scrape renamed the exporter's labels: a ServiceMonitor without honorLabels: true)
warning: metric kubex_gpu_container_memory_used_percent (memory): took exported_namespace, exported_pod for namespace, pod (the scrape renamed the exporter's labels: a ServiceMonitor without honorLabels: true)
`,
		},
		{
			name: "exported labels: kube-state-metrics behind a ServiceMonitor without honorLabels",
			rec: new(metricstest.Recording).
				Add(metricstest.Series("kube_pod_owner", "exported_namespace", "team-a", "exported_pod", "p1", "namespace", "monitoring", "pod", "kube-state-metrics-x2b4z",
					"owner_kind", "ReplicaSet", "owner_name", "chat-7d9f8c6b5d"), 0, min, 1).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", "p1", "server"), 0, min, 5),
			at:        0,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat"), metricstest.Deployment("monitoring", "kube-state-metrics")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=true
  p1 live=true start=-
    compute: 5@0
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
warning: kube-state-metrics series kube_pod_owner: namespace, pod and owner labels taken from exported_* (the scrape renamed them: a ServiceMonitor without honorLabels: true)
`,
		},
		{
			name: "window: nothing after the evaluation time, nothing at its start",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
			at:        5 * min,
			lookback:  2 * min,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 4@240 5@300
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "window: a workload whose data is all outside is absent",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 10*min, min, 1, 2),
			at:        5 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-a", "ghost")},
			want: `warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
		{
			name: "step: the median interval, over both metrics",
			rec: new(metricstest.Recording).
				// Intervals 30 30 90 30 (a missed scrape) and 30 30.
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, 30*time.Second, 1, 2, 3, nil, nil, 6, 7).
				Add(metricstest.UsageOf(metricstest.Mem, "team-a", a1, "server"), 0, 30*time.Second, 1, 2, 3),
			at:        3 * min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=30s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 1@0 2@30 3@60 6@150 7@180
    memory: 1@0 2@30 3@60
`,
		},
		{
			name: "step: one sample per series tells nothing, so one minute",
			rec: new(metricstest.Recording).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a1, "server"), 0, min, 1).
				Add(metricstest.UsageOf(metricstest.SM, "team-a", a2, "server"), 15*time.Second, min, 2),
			at:        min,
			lookback:  time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
			want: `team-a/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-k8s9q live=false start=-
    compute: 2@15
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute: 1@0
warning: metric kubex_gpu_container_memory_used_percent (memory) is not in test.om
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *openmetrics.Recorded
			if tt.file != "" {
				var err error
				r, err = openmetrics.OpenRecorded(filepath.Join("testdata", tt.file))
				require.NoError(t, err)
			} else {
				r = tt.rec.Parse(t)
			}
			ms := tt.metrics
			if ms == nil {
				ms = metricstest.KubexMetrics()
			}
			q := usage.Query{
				At:         metricstest.T0.Add(tt.at),
				Lookback:   tt.lookback,
				Metrics:    ms,
				Containers: tt.containers,
				Workloads:  tt.workloads,
			}
			res, err := r.Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Render(res))
			// Asking again answers the same from the caches.
			again, err := r.Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Render(again))
		})
	}
}

// devices maps compute and memory as KubexMetrics does, telling a pod's
// GPUs apart by gpu_uuid as Kubex's exporter does.
func devices() map[usage.Metric]usage.Mapping {
	ms := metricstest.KubexMetrics()
	for m, mp := range ms {
		mp.DeviceLabel = "gpu_uuid"
		ms[m] = mp
	}
	return ms
}

func TestRecordedUsageBadQuery(t *testing.T) {
	r := new(metricstest.Recording).Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9f8c6b5d-x2b4z", "server"), 0, time.Minute, 1).Parse(t)
	good := func() usage.Query {
		return usage.Query{At: metricstest.T0, Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")}}
	}
	tests := []struct {
		name    string
		change  func(*usage.Query)
		wantErr string
	}{
		{name: "no evaluation time", change: func(q *usage.Query) { q.At = time.Time{} }, wantErr: "bad usage query: no evaluation time"},
		{name: "zero lookback", change: func(q *usage.Query) { q.Lookback = 0 }, wantErr: "bad usage query: lookback 0s is not positive"},
		{name: "no metrics", change: func(q *usage.Query) { q.Metrics = nil }, wantErr: "bad usage query: no metric asked for"},
		{
			name: "no pod label",
			change: func(q *usage.Query) {
				q.Metrics[usage.Memory] = usage.Mapping{Metric: metricstest.Mem, NamespaceLabel: "namespace"}
			},
			wantErr: "bad usage query: metric memory: the mapping needs a series name, a namespace label and a pod label",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := good()
			tt.change(&q)
			_, err := r.Usage(context.Background(), q)
			require.ErrorIs(t, err, metrics.ErrBadQuery)
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestRecordedUsageCanceled(t *testing.T) {
	r := new(metricstest.Recording).Add(metricstest.UsageOf(metricstest.SM, "team-a", "chat-7d9f8c6b5d-x2b4z", "server"), 0, time.Minute, 1).Parse(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Usage(ctx, usage.Query{At: metricstest.T0, Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")}})
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "usage from test.om: context canceled")
}

// Backtests may ask from several goroutines; the caches must hold (run
// with -race).
func TestRecordedUsageConcurrent(t *testing.T) {
	r, err := openmetrics.OpenRecorded(filepath.Join("testdata", "cluster.om"))
	require.NoError(t, err)
	q := usage.Query{At: metricstest.T0.Add(9 * time.Minute), Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")}}
	want, err := r.Usage(context.Background(), q)
	require.NoError(t, err)

	r, err = openmetrics.OpenRecorded(filepath.Join("testdata", "cluster.om"))
	require.NoError(t, err)
	results := make([]string, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			res, err := r.Usage(context.Background(), q)
			if err != nil {
				results[i] = err.Error()
				return
			}
			results[i] = metricstest.Render(res)
		})
	}
	wg.Wait()
	for _, got := range results {
		require.Equal(t, metricstest.Render(want), got)
	}
}
