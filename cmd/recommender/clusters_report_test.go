package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// clustersPool is examples/clusters with a GpuConsolidationPolicy, and
// the fleet recording with what kube-state-metrics would export of each
// cluster: one GPU node (eu-gpu, us-gpu) holding that cluster's llm-0 at
// 0.5, a half-empty GPU each. llm is scaled back to 0.36 in both.
func clustersPool(t *testing.T) (repo, recording string) {
	t.Helper()
	repo = t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS("../../examples/clusters")))
	pool, err := os.ReadFile("testdata/clusters-pool.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "policies", "consolidation.yaml"), pool, 0o644))

	rec := metricstest.Fleet()
	n := int(metricstest.FleetAt.Sub(metricstest.T0)/time.Minute) + 1
	ones := make([]any, n)
	for i := range ones {
		ones[i] = 1
	}
	for _, c := range []struct{ value, node string }{{"eu-west-1", "eu-gpu"}, {"us-east-1", "us-gpu"}} {
		add := func(name string, pairs ...string) {
			rec.Add(metricstest.Series(name, append(pairs, "cluster", c.value)...), 0, time.Minute, ones...)
		}
		add("kube_node_status_capacity", "node", c.node, "resource", "nvidia_com_gpu", "unit", "integer")
		add("kube_node_labels", "node", c.node, "label_pool", "inference")
		add("kube_pod_info", "namespace", "inference", "pod", "llm-0", "node", c.node)
		add("kube_pod_annotations", "namespace", "inference", "pod", "llm-0", "annotation_gpu_fraction", "0.5")
		add("kube_statefulset_replicas", "namespace", "inference", "statefulset", "llm")
	}
	recording = filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(recording, []byte(rec.String()), 0o644))
	return repo, recording
}

// TestReportClusters: `report` over two clusters of one store, with
// kube-state-metrics' series, from the recording and from a real
// Prometheus. Pooled, the two half-empty GPUs would drain one cluster's
// llm-0 onto the other cluster's node; each cluster is its own pool, so
// neither is drainable, and each report names its cluster. A kubeconfig
// reaches one cluster: over two it is refused.
func TestReportClusters(t *testing.T) {
	repo, recording := clustersPool(t)
	check := func(t *testing.T, args ...string) {
		t.Helper()
		out, errOut, code := cli(t, append([]string{"report", "--repo", repo, "--placement", "metrics"}, args...)...)
		require.Equal(t, exitOK, code, errOut)
		for _, c := range []string{"prod-eu", "prod-us"} {
			require.Contains(t, out, "GpuConsolidationPolicy inference-pool in cluster "+c+": 1 nodes, 1 GPUs, candidates used below 75%\n"+
				"GPUs in use now 1; needed now 1, after the open pull requests 1; in use after the drains 1\n", out)
		}
		require.NotContains(t, out, "→ us-gpu", "prod-eu's pod packed onto prod-us's GPU")
		require.NotContains(t, out, "→ eu-gpu", "prod-us's pod packed onto prod-eu's GPU")

		md, errOut, code := cli(t, append([]string{"report", "--repo", repo, "--placement", "metrics", "-o", "markdown"}, args...)...)
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, md, "### inference-pool in cluster prod-eu\n\n1 nodes, 1 GPUs;")
		require.Contains(t, md, "### inference-pool in cluster prod-us\n\n1 nodes, 1 GPUs;")

		one, errOut, code := cli(t, append([]string{"report", "--repo", repo, "--placement", "metrics", "--cluster", "prod-us"}, args...)...)
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, one, "GpuConsolidationPolicy inference-pool in cluster prod-us: 1 nodes")
		require.NotContains(t, one, "prod-eu")
	}
	t.Run("recording", func(t *testing.T) { check(t, "--metrics-file", recording) })
	t.Run("prometheus", func(t *testing.T) {
		srv := testenv.StartPrometheus(t, recording)
		if srv == nil {
			return
		}
		check(t, "--prometheus-url", srv.URL, "--at", strconv.FormatInt(metricstest.FleetAt.Unix(), 10))
	})
	t.Run("a kubeconfig over two clusters", func(t *testing.T) {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		require.NoError(t, os.WriteFile(kubeconfig, []byte(strings.TrimSpace(`
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)), 0o600))
		_, errOut, code := cli(t, "report", "--repo", repo, "--metrics-file", recording, "--kubeconfig", kubeconfig)
		require.NotEqual(t, exitOK, code)
		require.Contains(t, errOut, "the kubeconfig reaches one cluster, and the report is of 2 clusters of the ClusterMap (prod-eu, prod-us)")
	})
}
