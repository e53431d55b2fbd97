package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// TestQuickstartPlanMarkdown is the plan as a CI job's summary, and the
// exit code that says it proposes changes.
func TestQuickstartPlanMarkdown(t *testing.T) {
	args := []string{"plan", "--repo", quickstartRepo, "--metrics-file", quickstartMetrics, "--output", "markdown"}
	out, errOut, code := cli(t, args...)
	require.Equal(t, exitOK, code, errOut)
	golden(t, "quickstart-plan.md", []byte(out))
	require.Contains(t, out, "| inference/Deployment/chat | 0.50 | 0.72 | upsize (urgent) |")

	_, errOut, code = cli(t, append(args, "--detailed-exit-code")...)
	require.Equal(t, exitChanges, code, errOut)
	require.Empty(t, errOut, "proposing changes is no error")
}

// gitQuickstart is a git repository holding the quickstart, for run.
func gitQuickstart(t *testing.T) string {
	t.Helper()
	gitBin := testenv.LookPath(t, "git")
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	require.NoError(t, os.Remove(filepath.Join(repo, "metrics.om")))
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "quickstart"}} {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	return repo
}

// summary is the line that sums a run up, as JSON; it is the last line
// logged, and only an error message may follow it.
func summary(t *testing.T, stderr string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if strings.HasPrefix(lines[len(lines)-1], "error: ") {
		lines = lines[:len(lines)-1]
	}
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), stderr)
	require.Equal(t, "run finished", got["msg"])
	delete(got, "time")
	delete(got, "duration")
	return got
}

// TestRunExitCodesAndSummary: with --detailed-exit-code, run exits 4 when
// it opens pull requests and 0 when there is nothing to do; either way its
// last log line sums the run up, as JSON when stderr is no terminal.
func TestRunExitCodesAndSummary(t *testing.T) {
	repo := gitQuickstart(t)
	args := []string{"run", "--repo", repo, "--metrics-file", quickstartMetrics, "--detailed-exit-code"}

	_, errOut, code := cli(t, args...)
	require.Equal(t, exitChanges, code, errOut)
	require.Equal(t, map[string]any{"level": "INFO", "msg": "run finished", "outcome": "changes proposed", "dryRun": false,
		"decisions": map[string]any{"upsize": 2.0, "scaleBack": 2.0, "none": 2.0, "skipped": 1.0}, "problems": 0.0,
		"pullRequests": map[string]any{"opened": 4.0, "updated": 0.0, "unchanged": 0.0, "closed": 0.0, "declined": 0.0, "capped": 0.0, "kept": 0.0, "failed": 0.0},
	}, summary(t, errOut))

	_, errOut, code = cli(t, args...)
	require.Equal(t, exitOK, code, errOut)
	got := summary(t, errOut)
	require.Equal(t, "nothing to do", got["outcome"])
	require.Equal(t, 4.0, got["pullRequests"].(map[string]any)["unchanged"])

	_, errOut, code = cli(t, "run", "--repo", filepath.Join(repo, "nope"), "--metrics-file", quickstartMetrics)
	require.Equal(t, exitError, code, errOut)
	got = summary(t, errOut)
	require.Equal(t, "ERROR", got["level"])
	require.Equal(t, "failed", got["outcome"])
	require.Contains(t, got["error"], "not a git repository")

	_, errOut, code = cli(t, "run", "--repo", repo, "--metrics-file", quickstartMetrics, "--log-format", "text", "--log-level", "warn")
	require.Equal(t, exitOK, code, errOut)
	require.Empty(t, errOut, "the summary is an info line")
	_, errOut, code = cli(t, "run", "--repo", repo, "--metrics-file", quickstartMetrics, "--log-format", "text")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, errOut, `level=INFO msg="run finished" outcome="nothing to do" dryRun=false`)

	_, errOut, code = cli(t, "run", "--repo", repo, "--metrics-file", quickstartMetrics, "--log-format", "xml")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "invalid `--log-format` \"xml\": use auto, text or json")
}
