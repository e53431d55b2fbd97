package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

// TestRunClusters is a run with SCM local over examples/clusters, two
// clusters in one recording: a branch per (cluster, workload) named
// <prefix><cluster>/<namespace>/<name>, the base edit both clusters agree
// on in one branch of both, each cluster's own edit only in its overlay,
// and a second run that writes nothing. --cluster limits a run to one,
// and leaves the base the other cluster builds alone.
func TestRunClusters(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS("../../examples/clusters")))
	gitRepo(t, repo)
	git := func(args ...string) string { return gitIn(t, repo, args...) }
	recording := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(recording, []byte(metricstest.Fleet().String()), 0o644))

	o := options(repo)
	o.Usage.MetricsFile = recording
	o.Observe.Output = "table"
	o.Dashboard = false

	one := o
	one.Filter.Clusters = []string{"prod-us"}
	one.DryRun = true
	out, _ := runOK(t, one, run.ChangesProposed)
	// prod-eu builds the base too, and is not read: llm's edit goes to a
	// patch of prod-us's overlay beside summarize's, and two first patches
	// of one kustomization.yaml share a pull request rather than conflict.
	require.Contains(t, out, "prod-us:inference/Deployment/summarize + prod-us:inference/StatefulSet/llm  gpu-rightsizing/by_file/prod-us-inference-deployment-summarize-")
	require.Contains(t, out, "1 would open, 0 would update")
	require.NotContains(t, out, "prod-eu")

	out, _ = runOK(t, o, run.ChangesProposed)
	require.Contains(t, out, "3 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	branches := strings.Fields(git("branch", "--list", "gpu-rightsizing/*", "--format=%(refname:short)"))
	require.Equal(t, []string{"gpu-rightsizing/prod-eu+prod-us/inference/statefulset_llm",
		"gpu-rightsizing/prod-eu/inference/summarize", "gpu-rightsizing/prod-us/inference/summarize"}, branches)
	changed := func(branch string) []string {
		return strings.Fields(git("diff", "--name-only", "main", branch))
	}
	require.Equal(t, []string{"apps/base/llm.yaml"}, changed(branches[0]))
	require.Equal(t, []string{"apps/prod-eu/gpu-rightsizing-args-deployment-summarize.yaml", "apps/prod-eu/gpu-rightsizing-deployment-summarize.yaml", "apps/prod-eu/kustomization.yaml"}, changed(branches[1]))
	require.Equal(t, []string{"apps/prod-us/gpu-rightsizing-args-deployment-summarize.yaml", "apps/prod-us/gpu-rightsizing-deployment-summarize.yaml", "apps/prod-us/kustomization.yaml"}, changed(branches[2]))
	require.Contains(t, git("log", "-1", "--format=%s", branches[2]), "upsize the GPU of inference/summarize in prod-us: 0.60 → 0.90")
	require.Contains(t, git("log", "-1", "--format=%s", branches[1]), "Scale back the GPU of inference/summarize in prod-eu: 0.60 → 0.22")
	require.Empty(t, git("status", "--porcelain"))
	refs := git("for-each-ref")

	out, _ = runOK(t, o, run.NothingToDo)
	require.Contains(t, out, "0 opened, 0 updated, 3 unchanged, 0 closed, 0 declined, 0 failed")
	require.Equal(t, refs, git("for-each-ref"), "the second run moved no branch")
}
