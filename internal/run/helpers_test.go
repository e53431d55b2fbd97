package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const (
	quickstartRepo    = "../../examples/quickstart"
	quickstartMetrics = quickstartRepo + "/metrics.om"
)

// options are a run's options as `recommender run`'s flags default
// them, on the local git repository repo, with usage from the
// quickstart's recording.
func options(repo string) run.Options {
	return run.Options{
		SCM: "local", Repo: repo, Base: "main",
		GitHub: run.GitHub{TokenEnv: "GITHUB_TOKEN"}, GitLab: run.GitLab{TokenEnv: "GITLAB_TOKEN"},
		Usage:            recording(quickstartMetrics),
		DefaultNamespace: "default",
		AuthorName:       "gpu-rightsizing", AuthorEmail: "gpu-rightsizing@users.noreply.github.com",
		DeclinePercent: 10, BranchPrefix: "gpu-rightsizing/",
		Live:          run.Live{MaxChanges: 3},
		Observe:       run.Observe{PushgatewayJob: run.DefaultPushgatewayJob},
		Dashboard:     true,
		FleetFindings: "off",
		Now:           time.Now,
		Version:       "test",
	}
}

// recording is usage read from the recording path, as the usage flags'
// defaults set it.
func recording(path string) source.Options {
	return source.Options{MetricsFile: path, Preset: preset.Kubex, Prometheus: prometheus.Config{Timeout: prometheus.DefaultTimeout}}
}

// server is usage read from the Prometheus server at url, at the
// quickstart's evaluation time.
func server(url string) source.Options {
	return source.Options{Preset: preset.Kubex, At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Prometheus: prometheus.Config{URL: url, Timeout: prometheus.DefaultTimeout}}
}

// runOnce runs with o, its output caught; the log goes to stderr as JSON
// at info, as `recommender run` logs where stderr is no terminal.
func runOnce(t *testing.T, o run.Options) (stdout, stderr string, res *run.Result, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	o.Out, o.Err = &out, &errOut
	o.Logger = slog.New(slog.NewJSONHandler(&errOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	res, err = run.Run(context.Background(), o)
	return out.String(), errOut.String(), res, err
}

// runOK runs with o, which must go well with outcome want, and returns
// its output.
func runOK(t *testing.T, o run.Options, want run.Outcome) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, res, err := runOnce(t, o)
	require.NoError(t, err, "%s\n%s", stdout, stderr)
	require.Equal(t, want, res.Outcome, "%s\n%s", stdout, stderr)
	return stdout, stderr
}

// gitQuickstart is a git repository holding the quickstart, for run.
func gitQuickstart(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	require.NoError(t, os.Remove(filepath.Join(repo, "metrics.om")))
	gitRepo(t, repo)
	return repo
}

// gitRepo makes dir a git repository of one commit on main.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "quickstart"}} {
		gitIn(t, dir, args...)
	}
}

// gitIn runs git in dir and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testenv.LookPath(t, "git"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// quickstartFiles is the quickstart's manifests and policies, for a
// repository on a git server.
func quickstartFiles(t *testing.T) map[string]string {
	return testenv.DirFiles(t, quickstartRepo, ".om")
}

// summary is the line that sums a run up, as JSON: the last line logged.
func summary(t *testing.T, stderr string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), stderr)
	require.Equal(t, "run finished", got["msg"])
	delete(got, "time")
	delete(got, "duration")
	return got
}

// stable replaces what changes from run to run in a summary — when it
// started, how long it took, the temporary repository — so that it
// compares with a golden file.
func stable(s, repo string) string {
	s = strings.ReplaceAll(s, repo, "REPO")
	s = regexp.MustCompile(`"startedAt": "[^"]*"`).ReplaceAllString(s, `"startedAt": "START"`)
	s = regexp.MustCompile(`"durationSeconds": [0-9.e-]+`).ReplaceAllString(s, `"durationSeconds": 1.5`)
	return regexp.MustCompile(`(\*\*|written\)) in [0-9.]+s`).ReplaceAllString(s, "$1 in 1.5s")
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	require.Equal(t, string(want), string(got))
}
