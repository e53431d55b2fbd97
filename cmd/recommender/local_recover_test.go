package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// TestRunLocalRecovers is `run --scm local` after a run was killed while
// it wrote: a pull request's record left half-written, and the
// dashboard's file left empty (what a kill between creating a file and
// writing it left before files were written whole). The next run goes
// on: no "unexpected end of JSON input", the record rebuilt, one
// dashboard, under its number.
func TestRunLocalRecovers(t *testing.T) {
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
	args := []string{"run", "--scm", "local", "--repo", repo, "--metrics-file", "../../examples/quickstart/metrics.om", "--output", "table"}
	run := func() (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		require.Equal(t, exitOK, Main(args, &out, &errOut), errOut.String())
		return out.String(), errOut.String()
	}
	out, _ := run()
	require.Contains(t, out, "4 opened")
	require.Contains(t, out, "dashboard: created #1")

	record := filepath.Join(pulls, "0001.json")
	b, err := os.ReadFile(record)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(record, b[:len(b)/2], 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pulls, "issue-0001.md"), nil, 0o644))

	out, errOut := run()
	require.NotContains(t, out+errOut, "unexpected end of JSON input")
	// #1 is known again: no second pull request for its branch. Its
	// labels were lost with its record: the run puts them back, no push.
	require.Contains(t, out, "0 opened, 1 updated, 3 unchanged", "#1 is known again: no second pull request for its branch")
	require.Contains(t, out, "#1            labels: +gpu-rightsizing +scaleBack\n")
	require.Contains(t, out, "dashboard: created #1")
	entries, err := os.ReadDir(pulls)
	require.NoError(t, err)
	var dashboards []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "issue-") {
			dashboards = append(dashboards, e.Name())
		}
	}
	require.Equal(t, []string{"issue-0001.md"}, dashboards, "no second dashboard")
	out, _ = run()
	require.Contains(t, out, "dashboard: unchanged #1")
}
