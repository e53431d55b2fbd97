package run_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

// TestRunClusterDashboards: one job per cluster of examples/clusters,
// with SCM local, each limited by --cluster, keeps a dashboard of its
// own, its title and marker naming its cluster; a run over every cluster
// keeps a third, with totals and tables per cluster. A rerun of one job
// edits its own dashboard and leaves the other two as they were.
func TestRunClusterDashboards(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS("../../examples/clusters")))
	gitRepo(t, repo)
	recording := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(recording, []byte(metricstest.Fleet().String()), 0o644))
	pulls := filepath.Join(repo, ".git", "gpu-rightsizing", "pulls")
	issue := func(n int) string {
		b, err := os.ReadFile(filepath.Join(pulls, "issue-000"+string(rune('0'+n))+".md"))
		require.NoError(t, err)
		return string(b)
	}
	o := options(repo)
	o.Usage.MetricsFile = recording
	o.Observe.Output = "table"
	job := func(clusters ...string) run.Options {
		j := o
		j.Filter.Clusters = clusters
		return j
	}
	number := regexp.MustCompile(`dashboard: (created|edited|unchanged) #(\d)`)
	dash := func(j run.Options) (outcome, n string) {
		t.Helper()
		out, _, _, err := runOnce(t, j)
		require.NoError(t, err, out)
		m := number.FindStringSubmatch(out)
		require.NotNil(t, m, out)
		return m[1], m[2]
	}

	outcome, eu := dash(job("prod-eu"))
	require.Equal(t, "created", outcome)
	outcome, us := dash(job("prod-us"))
	require.Equal(t, "created", outcome)
	require.NotEqual(t, eu, us, "the second job's dashboard is its own")
	outcome, all := dash(o)
	require.Equal(t, "created", outcome)
	require.NotContains(t, []string{eu, us}, all)

	euBody, usBody, allBody := issue(int(eu[0]-'0')), issue(int(us[0]-'0')), issue(int(all[0]-'0'))
	require.Contains(t, euBody, "# GPU rightsizing dashboard (prod-eu)\n")
	require.Contains(t, euBody, "<!-- gpu-rightsizing-dashboard clusters=prod-eu -->")
	require.NotContains(t, euBody, "prod-us:")
	require.Contains(t, usBody, "# GPU rightsizing dashboard (prod-us)\n")
	require.Contains(t, usBody, "<!-- gpu-rightsizing-dashboard clusters=prod-us -->")
	require.Contains(t, allBody, "# GPU rightsizing dashboard\n")
	require.Contains(t, allBody, "<!-- gpu-rightsizing-dashboard -->")
	// Totals per cluster: summarize (0.6 → 0.22 in prod-eu, → 0.9 in
	// prod-us, one pod each) and llm (0.5, one pod in each cluster).
	require.Contains(t, allBody, "| Cluster | Workloads | Pods | Requested | Recommended | Used (p95) | Once the open pull requests merge |")
	require.Regexp(t, `\n\| prod-eu \| 2 \| 2 \| 1\.10 \| `, allBody)
	require.Regexp(t, `\n\| prod-us \| 2 \| 2 \| 1\.10 \| `, allBody)
	require.Contains(t, allBody, "### Cluster prod-eu\n")
	require.Contains(t, allBody, "### Cluster prod-us\n")

	outcome, again := dash(job("prod-eu"))
	require.Equal(t, eu, again, "the rerun finds its own dashboard")
	require.Contains(t, []string{"edited", "unchanged"}, outcome)
	require.Equal(t, usBody, issue(int(us[0]-'0')), "the rerun leaves prod-us's dashboard alone")
	require.Equal(t, allBody, issue(int(all[0]-'0')), "the rerun leaves the fleet's dashboard alone")
}
