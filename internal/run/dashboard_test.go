package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// TestRunDashboard is a run with SCM local and the dashboard: on by
// default, a Markdown file beside the pull requests, created once and left
// alone when nothing changed; a declined pull request's box, ticked in the
// file, proposes it again at the next run and is unticked; with Dashboard
// off, none is written.
func TestRunDashboard(t *testing.T) {
	repo := gitQuickstart(t)
	pulls := filepath.Join(repo, ".git", "gpu-rightsizing", "pulls")
	file := filepath.Join(pulls, "issue-0001.md")
	dashboard := func(o run.Options, want run.Outcome) string {
		t.Helper()
		out, _ := runOK(t, o, want)
		return out
	}
	o := options(repo)
	o.Observe.Output = "table"
	off := o
	off.Dashboard = false

	require.Contains(t, dashboard(off, run.ChangesProposed), "4 opened")
	require.NoFileExists(t, file, "Dashboard off writes no dashboard")

	out := dashboard(o, run.NothingToDo)
	require.Contains(t, out, "dashboard: created #1 file://")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), "## Open pull requests")
	require.Contains(t, dashboard(o, run.NothingToDo), "dashboard: unchanged #1")

	// A person declines the first pull request; the next run lists it
	// with a box.
	local, err := scm.NewLocal(pulls)
	require.NoError(t, err)
	require.NoError(t, local.SetState(1, scm.Closed, ""))
	require.Contains(t, dashboard(o, run.NothingToDo), "dashboard: edited #1")
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	box := "- [ ] <!-- gpu-rightsizing-dashboard:retry="
	require.Contains(t, string(b), box)

	// They tick it; the next run proposes the change again and unticks.
	ticked := strings.Replace(string(b), box, "- [x] <!-- gpu-rightsizing-dashboard:retry=", 1)
	require.NoError(t, os.WriteFile(file, []byte(ticked), 0o644))
	out = dashboard(o, run.ChangesProposed)
	require.Contains(t, out, "1 opened, 0 updated, 3 unchanged, 0 closed, 0 declined")
	require.Contains(t, out, "dashboard: edited #1")
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	require.NotContains(t, string(b), "[x]")
	require.Contains(t, string(b), "## Declined\n\nNone.\n")
	require.Contains(t, dashboard(o, run.NothingToDo), "dashboard: unchanged #1")
}
