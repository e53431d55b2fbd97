package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// TestRunLocal is `run --scm local` on a git copy of the quickstart: a
// branch per changed workload, a clean work tree, and a second identical
// run that writes nothing.
func TestRunLocal(t *testing.T) {
	gitBin := testenv.LookPath(t, "git")
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS("../../examples/quickstart")))
	require.NoError(t, os.Remove(filepath.Join(repo, "metrics.om")))
	git := func(args ...string) string {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "quickstart")

	args := []string{"run", "--scm", "local", "--repo", repo, "--metrics-file", "../../examples/quickstart/metrics.om", "--output", "table"}
	var out, errOut bytes.Buffer

	// A dry run says what it would do, and writes nothing at all.
	before := git("for-each-ref")
	require.Equal(t, exitOK, Main(append(args, "--dry-run"), &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "inference/Deployment/chat         gpu-rightsizing/inference/chat         would open")
	require.Contains(t, out.String(), "dry run, nothing written: 4 would open, 0 would update, 0 unchanged, 0 would close, 0 declined, 0 failed")
	require.NotContains(t, out.String(), " opened ")
	require.NoDirExists(t, filepath.Join(repo, ".git", "gpu-rightsizing"))
	require.Equal(t, before, git("for-each-ref"))

	out.Reset()
	require.Equal(t, exitOK, Main(args, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	branches := strings.Fields(git("branch", "--list", "gpu-rightsizing/*", "--format=%(refname:short)"))
	require.Equal(t, []string{"gpu-rightsizing/inference/asr-whisper", "gpu-rightsizing/inference/chat",
		"gpu-rightsizing/inference/summarize", "gpu-rightsizing/inference/translate"}, branches)
	require.Empty(t, git("status", "--porcelain"))
	refs := git("for-each-ref")

	out.Reset()
	require.Equal(t, exitOK, Main(args, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "0 opened, 0 updated, 4 unchanged, 0 closed, 0 declined, 0 failed")
	require.Equal(t, refs, git("for-each-ref"), "the second run moved no branch")

	out.Reset()
	require.Equal(t, exitUsage, Main([]string{"run", "--scm", "gitea", "--repo", repo, "--metrics-file", "x"}, &out, &errOut))
}

// quickstartFiles is the quickstart's manifests and policies, for a repository on
// a git server.
func quickstartFiles(t *testing.T) map[string]string {
	return testenv.DirFiles(t, quickstartRepo, ".om")
}

// TestRunGitLabWithPrometheus is `run --scm gitlab` reading usage from a
// real Prometheus serving the quickstart's recording: merge requests on
// the fake GitLab, branches on a real git server, the token from the
// environment.
func TestRunGitLabWithPrometheus(t *testing.T) {
	prom := testenv.StartPrometheus(t, "../../examples/quickstart/metrics.om")
	git := testenv.NewGitServer(t)
	url := git.NewRepo(t, "infra/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: "infra/gitops", Dir: git.Dir("infra/gitops"), CloneURL: url, Token: git.Token})
	t.Setenv("GITLAB_TOKEN", git.Token)

	args := []string{"run", "--scm", "gitlab", "--gitlab-url", fake.URL, "--gitlab-project", "infra/gitops",
		"--prometheus-url", prom.URL, "--at", "2026-11-30T12:00:00Z", "--output", "table"}
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, Main(args, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	require.Len(t, fake.MergeRequests(), 4)
	writes := fake.Writes()

	out.Reset()
	require.Equal(t, exitOK, Main(args, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "0 opened, 0 updated, 4 unchanged")
	require.Equal(t, writes, fake.Writes(), "the second run wrote nothing")
	require.NotContains(t, out.String()+errOut.String(), git.Token)
}

// TestRunGitHub is `run --scm github` against the fake GitHub over a real
// git server: the token comes from a file, clone and push go through git
// http-backend, and a second run writes nothing.
func TestRunGitHub(t *testing.T) {
	git := testenv.NewGitServer(t)
	git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(fake.Token+"\n"), 0o600))

	args := []string{"run", "--scm", "github", "--github-repo", "acme/gitops", "--github-url", fake.BaseURL(),
		"--github-token-file", tokenFile, "--metrics-file", "../../examples/quickstart/metrics.om", "--output", "table"}
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, Main(args, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	require.Len(t, fake.Pulls(), 4)
	writes := fake.Writes()

	out.Reset()
	require.Equal(t, exitOK, Main(args, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "0 opened, 0 updated, 4 unchanged")
	require.Equal(t, writes, fake.Writes(), "the second run wrote nothing")
	require.NotContains(t, out.String()+errOut.String(), fake.Token)

	require.Equal(t, exitUsage, Main([]string{"run", "--scm", "github", "--github-repo", "acme", "--metrics-file", "x"}, &out, &errOut))
}

// TestErrorLineEscapesWhatAServerSaid: a forge's error message reaches the
// final error line with its control bytes escaped, so that no server can
// colour or rewrite the terminal.
func TestErrorLineEscapesWhatAServerSaid(t *testing.T) {
	git := testenv.NewGitServer(t)
	git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	fake.Fail(10, forge.GitHubFault{Status: http.StatusBadRequest, Body: `{"message":"Not Found \u001b[2J\u001b[31mrepository gone\u0007"}`})
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(fake.Token+"\n"), 0o600))
	var out, errOut bytes.Buffer
	code := Main([]string{"run", "--scm", "github", "--github-repo", "acme/gitops", "--github-url", fake.BaseURL(),
		"--github-token-file", tokenFile, "--metrics-file", "../../examples/quickstart/metrics.om"}, &out, &errOut)
	require.Equal(t, exitError, code, errOut.String())
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, "error: "), last)
	require.Contains(t, last, `\x1b[2J\x1b[31mrepository gone\a`)
	require.NotContains(t, errOut.String(), "\x1b")
	require.NotContains(t, errOut.String(), "\a")
}
