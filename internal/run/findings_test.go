package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/run"
)

// TestRunFleetFindings: a run with FleetFindings says the fleet report's
// findings (the rollout room and the noisy neighbours of the fleet pool
// that cmd/recommender's TestReportFleet works by hand) in the pull
// request of the workload concerned, and in no other. The placement comes
// from kube-state-metrics' series: examples/fleet/cluster.om, which
// TestReportFleet holds to the pool it builds on a real API server.
func TestRunFleetFindings(t *testing.T) {
	repo := gitQuickstart(t)
	policy, err := os.ReadFile("../../examples/fleet/consolidation.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "policies", "consolidation.yaml"), policy, 0o644))
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "the fleet's pool")
	base, err := os.ReadFile(quickstartMetrics)
	require.NoError(t, err)
	cluster, err := os.ReadFile("../../examples/fleet/cluster.om")
	require.NoError(t, err)
	metrics := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(metrics, []byte(strings.TrimSuffix(string(base), "# EOF\n")+string(cluster)), 0o644))

	o := options(repo)
	o.Usage = recording(metrics)
	o.FleetFindings = "metrics"
	runOK(t, o, run.ChangesProposed)
	bodies := map[string]string{}
	mds, err := filepath.Glob(filepath.Join(repo, ".git", "gpu-rightsizing", "pulls", "*.md"))
	require.NoError(t, err)
	for _, md := range mds {
		b, err := os.ReadFile(md)
		require.NoError(t, err)
		for _, w := range []string{"chat", "translate", "asr-whisper", "summarize"} {
			if strings.Contains(string(b), "| `inference/Deployment/"+w+"` |") {
				bodies[w] = string(b)
			}
		}
	}
	require.Len(t, bodies, 4)
	// The sentences come from the cluster and the usage source, so
	// publish escapes them: their backticks show as typed.
	require.Contains(t, bodies["chat"], "\n### Fleet findings\n\n"+
		"- `inference/Deployment/chat`: while GPU GPU-d96e6aec-dbd1-146c-c9db-1836fe5d375c on gpu-a was saturated for 42 minutes, chat used 0.61 of it against a share of 0.50, beside ocr; "+
		"without HAMi-core neither its memory nor its compute is limited: a gpu-fraction is what KAI schedules by, not a limit.\n"+
		"- `inference/Deployment/chat`: the rollout of chat to 0.72 stalls after 0 of 2 new pods: no GPU of the pool has 0.72 free while the old pods still hold theirs; maxSurge: 0, maxUnavailable: 1 fits.\n")
	for _, w := range []string{"translate", "asr-whisper", "summarize"} {
		require.NotContains(t, bodies[w], "Fleet findings", w)
	}
}
