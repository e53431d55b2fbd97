package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// fleetMetrics is examples/clusters' recording: metricstest.Fleet, the
// store internal/plan's TestFleetOfClusters reads, gzipped.
const fleetMetrics = "../../examples/clusters/metrics.om.gz"

// TestFleetRecording: the committed recording is metricstest.Fleet's;
// -update writes it again.
func TestFleetRecording(t *testing.T) {
	want := metricstest.Fleet().String()
	if *update {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, err := io.WriteString(zw, want)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		require.NoError(t, os.WriteFile(fleetMetrics, b.Bytes(), 0o644))
	}
	f, err := os.Open(fleetMetrics)
	require.NoError(t, err, "run with -update to create %s", fleetMetrics)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Equal(t, want, string(got), "%s is metricstest.Fleet's: run with -update", fleetMetrics)
}

// TestDemoClusters runs what `make demo-clusters` runs, its recipe read
// from the Makefile, with the built binary: the drafted map, a plan row
// per (cluster, workload), and a local run's branch per cluster.
func TestDemoClusters(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^demo-clusters:\n\t(.+)$`).FindSubmatch(mk)
	require.NotNil(t, m, "the Makefile has a demo-clusters target with a one-line recipe")
	cmd := exec.Command("bash", "-c", string(m[1]))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "RECOMMENDER="+testenv.BuildRecommender(t), "DEMO_KEEP=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, want := range []string{
		"    - name: prod-eu\n      paths:\n        - apps/prod-eu # clusters/prod-eu/apps.yaml:12 (Kustomization flux-system/apps)\n",
		"prod-us:inference/Deployment/summarize  0.60     0.90         upsize (urgent)",
		"prod-eu:inference/Deployment/summarize  0.60     0.22         scaleBack",
		"prod-eu:inference/StatefulSet/llm       0.50     0.36         scaleBack",
		"prod-us:inference/StatefulSet/llm       0.50     0.36         scaleBack",
		"3 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed",
		"gpu-rightsizing/prod-eu/inference/summarize\n    apps/prod-eu/gpu-rightsizing-args-deployment-summarize.yaml\n",
		"gpu-rightsizing/prod-us/inference/summarize\n    apps/prod-us/gpu-rightsizing-args-deployment-summarize.yaml\n",
		"gpu-rightsizing/prod-eu+prod-us/inference/statefulset_llm\n    apps/base/llm.yaml\n",
		"# Urgent: upsize the GPU of inference/summarize in prod-us: 0.60 → 0.90",
	} {
		require.Contains(t, string(out), want)
	}
}
