package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// owned writes the kube_pod_owner series of pods, each with one sample at
// 0 and usage at 0, in the order OpenMetrics wants.
func owned(ns string, pods ...metricstest.OwnedPod) *metricstest.Recording {
	r := new(metricstest.Recording)
	for _, p := range pods {
		r.Add(metricstest.PodOwner(ns, p.Name, p.OwnerKind, p.Owner), 0, time.Minute, 1)
	}
	for i, p := range pods {
		r.Add(metricstest.UsageOf(metricstest.SM, ns, p.Name, "server"), 0, time.Minute, i+1)
	}
	for i, p := range pods {
		r.Add(metricstest.UsageOf(metricstest.Mem, ns, p.Name, "server"), 0, time.Minute, i+1)
	}
	return r
}

func TestAttribution(t *testing.T) {
	all, refs := metricstest.Attribution()
	llm, llm2 := metricstest.LeaderWorkerSet("ml", "llm"), metricstest.LeaderWorkerSet("ml", "llm-2")
	sts := func(pod, owner string) metricstest.OwnedPod {
		return metricstest.OwnedPod{Name: pod, OwnerKind: "StatefulSet", Owner: owner}
	}
	tests := []struct {
		name      string
		rec       *metricstest.Recording
		at        time.Duration
		workloads []usage.Ref
		want      string
	}{
		{
			name: "every kind, names sharing prefixes, by owner and by name", rec: all, at: 2 * time.Minute, workloads: refs,
			want: metricstest.AttributionPods,
		},
		{
			name: "llm alone: llm-2's leader StatefulSet fits llm's naming, and its pod 0 says it leads", rec: all, at: 2 * time.Minute,
			workloads: []usage.Ref{metricstest.LeaderWorkerSet("owners", "llm")},
			want:      "owners/LeaderWorkerSet/llm: llm-0 llm-0-1 llm-1 llm-1-1\n",
		},
		{
			name: "StatefulSet llm-2 fits both LeaderWorkerSets, and its pod 0 says it leads",
			rec:  owned("ml", sts("llm-2-0", "llm-2"), sts("llm-2-1", "llm-2")), workloads: []usage.Ref{llm, llm2},
			want: "ml/LeaderWorkerSet/llm-2: llm-2-0 llm-2-1\n",
		},
		{
			name: "StatefulSet llm-2 fits both LeaderWorkerSets, and llm's leader pod llm-2 says it works",
			rec:  owned("ml", sts("llm-2", "llm"), sts("llm-2-1", "llm-2")), workloads: []usage.Ref{llm, llm2},
			want: "ml/LeaderWorkerSet/llm: llm-2 llm-2-1\n",
		},
		{
			name: "StatefulSet llm-2 fits both LeaderWorkerSets, and its pods do not tell",
			rec:  owned("ml", sts("llm-2-1", "llm-2")), workloads: []usage.Ref{llm, llm2},
			want: "warning: pod ml/llm-2-1 counts for no workload: its StatefulSet llm-2 fits LeaderWorkerSets llm, llm-2 alike (kube-state-metrics reports no owner of a StatefulSet, and its pods do not tell)\n",
		},
		{
			name: "StatefulSet llm-2 fits both LeaderWorkerSets, and its pods say both",
			rec:  owned("ml", sts("llm-2", "llm"), sts("llm-2-0", "llm-2"), sts("llm-2-1", "llm-2")), workloads: []usage.Ref{llm, llm2},
			want: `ml/LeaderWorkerSet/llm: llm-2
warning: pod ml/llm-2-0 counts for no workload: its StatefulSet llm-2 fits LeaderWorkerSets llm, llm-2 alike (kube-state-metrics reports no owner of a StatefulSet, and its pods do not tell)
warning: pod ml/llm-2-1 counts for no workload: its StatefulSet llm-2 fits LeaderWorkerSets llm, llm-2 alike (kube-state-metrics reports no owner of a StatefulSet, and its pods do not tell)
`,
		},
		{
			name: "a StatefulSet of a LeaderWorkerSet's worker name, both asked for",
			rec:  owned("ml", sts("llm-0", "llm"), sts("llm-0-1", "llm-0")), workloads: []usage.Ref{llm, metricstest.StatefulSet("ml", "llm-0")},
			want: `ml/LeaderWorkerSet/llm: llm-0
warning: pod ml/llm-0-1 counts for no workload: its StatefulSet llm-0 fits LeaderWorkerSet llm, StatefulSet llm-0 alike (kube-state-metrics reports no owner of a StatefulSet, and its pods do not tell)
`,
		},
		{
			name: "without a LeaderWorkerSet asked for, its StatefulSets are StatefulSets",
			rec:  owned("ml", sts("llm-0", "llm"), sts("llm-0-1", "llm-0")), workloads: []usage.Ref{metricstest.StatefulSet("ml", "llm"), metricstest.StatefulSet("ml", "llm-0")},
			want: "ml/StatefulSet/llm: llm-0\nml/StatefulSet/llm-0: llm-0-1\n",
		},
		{
			name: "a StatefulSet no LeaderWorkerSet's naming fits stays a StatefulSet",
			rec:  owned("ml", sts("embed-0", "embed")), workloads: []usage.Ref{llm, metricstest.StatefulSet("ml", "embed")},
			want: "ml/StatefulSet/embed: embed-0\n",
		},
		{
			name: "a Rollout's ReplicaSet without kube_replicaset_owner: its name tells",
			rec: owned("ml", metricstest.OwnedPod{Name: "p1", OwnerKind: "ReplicaSet", Owner: "rank-7d9f8c6b5d"},
				metricstest.OwnedPod{Name: "p2", OwnerKind: "ReplicaSet", Owner: "rank-fast-5f6d7b8c9"}),
			workloads: []usage.Ref{metricstest.Rollout("ml", "rank"), metricstest.Deployment("ml", "rank-fast")},
			want:      "ml/Deployment/rank-fast: p2\nml/Rollout/rank: p1\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := usage.Query{At: metricstest.T0.Add(tt.at), Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: tt.workloads}
			res, err := tt.rec.Parse(t).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Pods(res))
		})
	}
}

// TestUnattributedByWorkload: a pod whose owner cannot be established
// counts for no workload, and the result says so for each workload it may
// belong to, so that their decisions say it; a pod counted for the
// longest name of its rivals concerns none of them.
func TestUnattributedByWorkload(t *testing.T) {
	llm, llm2 := metricstest.LeaderWorkerSet("ml", "llm"), metricstest.LeaderWorkerSet("ml", "llm-2")
	sts := func(pod, owner string) metricstest.OwnedPod {
		return metricstest.OwnedPod{Name: pod, OwnerKind: "StatefulSet", Owner: owner}
	}
	rs := func(pod, owner string) metricstest.OwnedPod {
		return metricstest.OwnedPod{Name: pod, OwnerKind: "ReplicaSet", Owner: owner}
	}
	const why = " alike (kube-state-metrics reports no owner of a StatefulSet, and its pods do not tell)"
	tests := []struct {
		name      string
		rec       *metricstest.Recording
		workloads []usage.Ref
		want      map[usage.Ref][]string
	}{
		{
			name: "a StatefulSet both LeaderWorkerSets' names fit: for each of them",
			rec:  owned("ml", sts("llm-2", "llm"), sts("llm-2-0", "llm-2"), sts("llm-2-1", "llm-2")), workloads: []usage.Ref{llm, llm2},
			want: map[usage.Ref][]string{
				llm: {"pod ml/llm-2-0 counts for no workload: its StatefulSet llm-2 fits LeaderWorkerSets llm, llm-2" + why,
					"pod ml/llm-2-1 counts for no workload: its StatefulSet llm-2 fits LeaderWorkerSets llm, llm-2" + why},
				llm2: {"pod ml/llm-2-0 counts for no workload: its StatefulSet llm-2 fits LeaderWorkerSets llm, llm-2" + why,
					"pod ml/llm-2-1 counts for no workload: its StatefulSet llm-2 fits LeaderWorkerSets llm, llm-2" + why},
			},
		},
		{
			name: "every pod attributed: none",
			rec:  owned("ml", sts("llm-0", "llm"), sts("llm-0-1", "llm-0")), workloads: []usage.Ref{metricstest.StatefulSet("ml", "llm"), metricstest.StatefulSet("ml", "llm-0")},
		},
		{
			name: "a ReplicaSet's name that the longer Deployment's shows more of: counted, none",
			rec:  owned("ml", rs("p1", "rank-fast-5f6d7b8c9")), workloads: []usage.Ref{metricstest.Deployment("ml", "rank"), metricstest.Deployment("ml", "rank-fast")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := usage.Query{At: metricstest.T0.Add(2 * time.Minute), Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: tt.workloads}
			res, err := tt.rec.Parse(t).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, res.Unattributed)
			for _, w := range res.Workloads {
				require.Empty(t, w.Unattributed, "the caller's to fill in")
			}
		})
	}
}
