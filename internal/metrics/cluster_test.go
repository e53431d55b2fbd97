package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// twoClusters is one store holding two clusters under the label
// cluster: in each, a StatefulSet pod llm-0 (the same name in both) at
// 30 % of a GPU, and a Deployment summarize whose ReplicaSet has the same
// name in both (its template's hash), quiet in prod-eu and hot in
// prod-us. Each pod's uid differs between the clusters, as it would.
func twoClusters() *metricstest.Recording {
	const min = time.Minute
	r := new(metricstest.Recording)
	for _, c := range []struct {
		cluster, summarize string
		busy               int
	}{{"prod-eu", "summarize-6b8f9c7d5-t4hxm", 20}, {"prod-us", "summarize-6b8f9c7d5-q9zrw", 90}} {
		in := func(name string, pairs ...string) string {
			return metricstest.Series(name, append(pairs, "cluster", c.cluster)...)
		}
		r.Add(in("kube_pod_owner", "namespace", "inference", "pod", "llm-0", "uid", c.cluster+"-llm-0", "owner_kind", "StatefulSet", "owner_name", "llm", "owner_is_controller", "true"), 0, min, 1, 1, 1, 1, 1)
		r.Add(in("kube_pod_owner", "namespace", "inference", "pod", c.summarize, "uid", c.cluster+"-s", "owner_kind", "ReplicaSet", "owner_name", "summarize-6b8f9c7d5", "owner_is_controller", "true"), 0, min, 1, 1, 1, 1, 1)
		r.Add(in("kube_replicaset_owner", "namespace", "inference", "replicaset", "summarize-6b8f9c7d5", "owner_kind", "Deployment", "owner_name", "summarize", "owner_is_controller", "true"), 0, min, 1, 1, 1, 1, 1)
		r.Add(in(metricstest.SM, "namespace", "inference", "pod", "llm-0", "container", "vllm"), 0, min, 30, 30, 30, 30, 30)
		r.Add(in(metricstest.SM, "namespace", "inference", "pod", c.summarize, "container", "server"), 0, min, c.busy, c.busy, c.busy, c.busy, c.busy)
	}
	return r
}

func TestUsageByCluster(t *testing.T) {
	rec := twoClusters().Parse(t)
	llm, summarize := metricstest.StatefulSet("inference", "llm"), metricstest.Deployment("inference", "summarize")
	in := func(cluster string, r usage.Ref) usage.Ref { r.Cluster = cluster; return r }
	query := func(q usage.Query) usage.Query {
		q.At, q.Lookback = metricstest.T0.Add(4*time.Minute), time.Hour
		q.Metrics = map[usage.Metric]usage.Mapping{usage.Compute: metricstest.KubexMetrics()[usage.Compute]}
		return q
	}
	peak := func(w usage.Workload) (pods []string, peak float64) {
		for _, p := range w.Pods {
			pods = append(pods, p.Name)
			for _, s := range p.Series[usage.Compute] {
				peak = max(peak, s.V)
			}
		}
		return pods, peak
	}

	t.Run("each cluster's workloads from its own series", func(t *testing.T) {
		res, err := rec.Usage(context.Background(), query(usage.Query{
			Workloads:    []usage.Ref{in("eu", llm), in("us", llm), in("eu", summarize), in("us", summarize)},
			ClusterLabel: "cluster", ClusterValues: map[string]string{"eu": "prod-eu", "us": "prod-us"},
		}))
		require.NoError(t, err)
		require.Empty(t, res.Failed)
		require.Len(t, res.Workloads, 4)
		for _, c := range []string{"eu", "us"} {
			w := res.Workloads[in(c, llm)]
			require.Empty(t, w.Mixed, "one pod llm-0 per cluster: nothing mixed")
			pods, p := peak(w)
			require.Equal(t, []string{"llm-0"}, pods)
			require.InDelta(t, 30, p, 1e-9, "30 %% in each cluster, never summed to 60")
		}
		_, eu := peak(res.Workloads[in("eu", summarize)])
		_, us := peak(res.Workloads[in("us", summarize)])
		require.InDelta(t, 20, eu, 1e-9, "the quiet cluster's summarize reads only its own pod")
		require.InDelta(t, 90, us, 1e-9)
	})

	t.Run("a cluster's value with no series names the values held", func(t *testing.T) {
		res, err := rec.Usage(context.Background(), query(usage.Query{
			Workloads:    []usage.Ref{in("eu", llm), in("ap", llm)},
			ClusterLabel: "cluster", ClusterValues: map[string]string{"eu": "prod-eu", "ap": "prod-ap"},
		}))
		require.NoError(t, err)
		require.Contains(t, res.Workloads, in("eu", llm))
		require.Equal(t, map[usage.Ref]string{in("ap", llm): `cluster ap: no series of test.om has cluster="prod-ap"; the values of cluster it holds are "prod-eu", "prod-us"`}, res.Failed)
	})

	t.Run("the map of one cluster, as --cluster-label makes it", func(t *testing.T) {
		res, err := rec.Usage(context.Background(), query(usage.Query{
			Workloads:    []usage.Ref{llm, summarize},
			ClusterLabel: "cluster", ClusterValues: map[string]string{"": "prod-us"},
		}))
		require.NoError(t, err)
		_, us := peak(res.Workloads[summarize])
		require.InDelta(t, 90, us, 1e-9)
		require.Empty(t, res.Workloads[summarize].Mixed)
	})

	t.Run("without a map, mixed clusters change nothing and say why", func(t *testing.T) {
		res, err := rec.Usage(context.Background(), query(usage.Query{Workloads: []usage.Ref{llm, summarize}}))
		require.NoError(t, err)
		require.Contains(t, res.Workloads[llm].Mixed, `cluster ("prod-eu", "prod-us")`, "llm-0's usage series of two clusters")
		mixed := res.Workloads[summarize].Mixed
		require.Contains(t, mixed, `kube_replicaset_owner of inference/summarize-6b8f9c7d5 has series at the same time that differ in cluster ("prod-eu", "prod-us")`,
			"two pods of distinct names, but one ReplicaSet name in two clusters")
		require.Contains(t, res.Warnings, "inference/Deployment/summarize: "+mixed)
	})
}
