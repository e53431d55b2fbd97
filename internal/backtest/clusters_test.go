package backtest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
)

// TestClusterTraces: traces of several clusters replay per (cluster,
// workload). A trace file with a cluster column, and a recording of one
// store holding two clusters under a ClusterMap, keep one workload name
// in two clusters as two traces, named cluster/workload; the results'
// rows carry the cluster.
func TestClusterTraces(t *testing.T) {
	t.Run("a trace file with a cluster column", func(t *testing.T) {
		in := "cluster,workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu\n" +
			"eu,llm,0,10,20\neu,llm,60,11,21\nus,llm,0,70,80\nus,llm,60,71,81\n"
		got, err := backtest.ReadCSV(strings.NewReader(in), "t.csv")
		require.NoError(t, err)
		require.Len(t, got, 2, "llm in two clusters is two workloads")
		require.Equal(t, []string{"eu/llm", "us/llm"}, []string{got[0].Name, got[1].Name})
		require.Equal(t, []string{"eu", "us"}, []string{got[0].Cluster, got[1].Cluster})
		require.Equal(t, 11.0, got[0].Compute[1].V)
		require.Equal(t, 71.0, got[1].Compute[1].V)
		var buf bytes.Buffer
		require.NoError(t, backtest.WriteCSV(&buf, got))
		require.Equal(t, in, buf.String())

		results, err := backtest.Run(context.Background(), got, []backtest.Strategy{backtest.Static{}}, backtest.Config{Cadence: time.Hour})
		require.NoError(t, err)
		require.Equal(t, "us", results[0].Workloads[1].Cluster)
		require.Equal(t, "us/llm", results[0].Workloads[1].Name)
	})
	t.Run("a recording under a ClusterMap", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "fleet.om")
		require.NoError(t, os.WriteFile(file, []byte(metricstest.Fleet().String()), 0o644))
		e, err := backtest.LoadEngine(context.Background(), "../../examples/clusters/policies")
		require.NoError(t, err)
		traces, err := backtest.RecordedTraces(context.Background(), "../../examples/clusters", file, e.Governance)
		require.NoError(t, err)
		peaks := map[string]float64{}
		for _, tr := range traces {
			peaks[tr.Name] = tr.Peak()
			require.True(t, strings.HasPrefix(tr.Name, tr.Cluster+"/"), tr.Name)
		}
		// Compute is in percent of a GPU, memory of the share. summarize
		// is quiet in prod-eu (compute 15, memory 30% of 0.6) and hot in
		// prod-us (compute 75 at the end); llm-0 runs at 30 in each.
		// Read as one, the two clusters' summarize would peak at 75.
		require.Equal(t, map[string]float64{
			"prod-eu/inference-summarize": 30 * 0.6, "prod-us/inference-summarize": 75,
			"prod-eu/inference-llm": 30, "prod-us/inference-llm": 30,
		}, roundPeaks(peaks))
	})
}

func roundPeaks(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = float64(int(v*100+0.5)) / 100
	}
	return out
}
