package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// TestRunDashboard is `run --scm local` with the dashboard: on by
// default, a Markdown file beside the pull requests, created once and left
// alone when nothing changed; a declined pull request's box, ticked in the
// file, proposes it again at the next run and is unticked; `--dashboard=false`
// writes none.
func TestRunDashboard(t *testing.T) {
	gitBin := testenv.LookPath(t, "git")
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS("../../examples/quickstart")))
	require.NoError(t, os.Remove(filepath.Join(repo, "metrics.om")))
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "quickstart"}} {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	pulls := filepath.Join(repo, ".git", "gpu-rightsizing", "pulls")
	file := filepath.Join(pulls, "issue-0001.md")
	args := []string{"run", "--scm", "local", "--repo", repo, "--metrics-file", "../../examples/quickstart/metrics.om"}
	run := func(extra ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		require.Equal(t, exitOK, Main(append(args, extra...), &out, &errOut), errOut.String())
		return out.String()
	}

	require.Contains(t, run("--dashboard=false"), "4 opened")
	require.NoFileExists(t, file, "--dashboard=false writes no dashboard")

	out := run()
	require.Contains(t, out, "dashboard: created #1 file://")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), "## Open pull requests")
	require.Contains(t, run(), "dashboard: unchanged #1")

	// A person declines the first pull request; the next run lists it
	// with a box.
	local, err := scm.NewLocal(pulls)
	require.NoError(t, err)
	require.NoError(t, local.SetState(1, scm.Closed, ""))
	require.Contains(t, run(), "dashboard: edited #1")
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	box := "- [ ] <!-- gpu-rightsizing-dashboard:retry="
	require.Contains(t, string(b), box)

	// They tick it; the next run proposes the change again and unticks.
	ticked := strings.Replace(string(b), box, "- [x] <!-- gpu-rightsizing-dashboard:retry=", 1)
	require.NoError(t, os.WriteFile(file, []byte(ticked), 0o644))
	out = run()
	require.Contains(t, out, "1 opened, 0 updated, 3 unchanged, 0 closed, 0 declined")
	require.Contains(t, out, "dashboard: edited #1")
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	require.NotContains(t, string(b), "[x]")
	require.Contains(t, string(b), "## Declined\n\nNone.\n")
	require.Contains(t, run(), "dashboard: unchanged #1")
}
