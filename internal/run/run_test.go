package run_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// TestRunLocal is a run with SCM local on a git copy of the quickstart: a
// branch per changed workload, a clean work tree, and a second identical
// run that writes nothing.
func TestRunLocal(t *testing.T) {
	repo := gitQuickstart(t)
	git := func(args ...string) string { return gitIn(t, repo, args...) }
	o := options(repo)
	o.Observe.Output = "table"

	// A dry run says what it would do, and writes nothing at all.
	before := git("for-each-ref")
	dry := o
	dry.DryRun = true
	out, errOut := runOK(t, dry, run.ChangesProposed)
	require.Contains(t, out, "inference/Deployment/chat         gpu-rightsizing/inference/chat         would open")
	require.Contains(t, out, "dry run, nothing written: 4 would open, 0 would update, 0 unchanged, 0 would close, 0 declined, 0 failed")
	require.NotContains(t, out, " opened ")
	// Nor does its summary line or the dashboard's count anything as
	// done.
	prs := summary(t, errOut)["pullRequests"].(map[string]any)
	require.Equal(t, 4.0, prs["wouldOpen"], errOut)
	require.NotContains(t, prs, "opened")
	require.Contains(t, out, "dashboard: not written (would open the dashboard)")
	require.NotContains(t, out, "dashboard: created")
	require.NoDirExists(t, filepath.Join(repo, ".git", "gpu-rightsizing"))
	require.Equal(t, before, git("for-each-ref"))

	out, _ = runOK(t, o, run.ChangesProposed)
	require.Contains(t, out, "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	branches := strings.Fields(git("branch", "--list", "gpu-rightsizing/*", "--format=%(refname:short)"))
	require.Equal(t, []string{"gpu-rightsizing/inference/asr-whisper", "gpu-rightsizing/inference/chat",
		"gpu-rightsizing/inference/summarize", "gpu-rightsizing/inference/translate"}, branches)
	require.Empty(t, git("status", "--porcelain"))
	refs := git("for-each-ref")

	out, _ = runOK(t, o, run.NothingToDo)
	require.Contains(t, out, "0 opened, 0 updated, 4 unchanged, 0 closed, 0 declined, 0 failed")
	require.Equal(t, refs, git("for-each-ref"), "the second run moved no branch")
}

// TestRunGitLabWithPrometheus is a run with SCM gitlab reading usage from
// a real Prometheus serving the quickstart's recording: merge requests on
// the fake GitLab, branches on a real git server, the token from the
// environment.
func TestRunGitLabWithPrometheus(t *testing.T) {
	prom := testenv.StartPrometheus(t, quickstartMetrics)
	git := testenv.NewGitServer(t)
	url := git.NewRepo(t, "infra/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: "infra/gitops", Dir: git.Dir("infra/gitops"), CloneURL: url, Token: git.Token})
	t.Setenv("GITLAB_TOKEN", git.Token)

	o := options("")
	o.SCM, o.GitLab.URL, o.GitLab.Project = "gitlab", fake.URL, "infra/gitops"
	o.Usage = server(prom.URL)
	o.Observe.Output = "table"
	out, errOut := runOK(t, o, run.ChangesProposed)
	require.Contains(t, out, "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	require.Len(t, fake.MergeRequests(), 4)
	writes := fake.Writes()
	require.NotContains(t, out+errOut, git.Token)

	out, errOut = runOK(t, o, run.NothingToDo)
	require.Contains(t, out, "0 opened, 0 updated, 4 unchanged")
	require.Equal(t, writes, fake.Writes(), "the second run wrote nothing")
	require.NotContains(t, out+errOut, git.Token)
}

// TestRunGitHub is a run with SCM github against the fake GitHub over a
// real git server: the token comes from a file, clone and push go through
// git http-backend, and a second run writes nothing.
func TestRunGitHub(t *testing.T) {
	git := testenv.NewGitServer(t)
	git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(fake.Token+"\n"), 0o600))

	o := options("")
	o.SCM, o.GitHub.Repo, o.GitHub.URL, o.GitHub.TokenFile = "github", "acme/gitops", fake.BaseURL(), tokenFile
	o.Observe.Output = "table"
	out, errOut := runOK(t, o, run.ChangesProposed)
	require.Contains(t, out, "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	require.Len(t, fake.Pulls(), 4)
	writes := fake.Writes()
	require.NotContains(t, out+errOut, fake.Token)

	out, errOut = runOK(t, o, run.NothingToDo)
	require.Contains(t, out, "0 opened, 0 updated, 4 unchanged")
	require.Equal(t, writes, fake.Writes(), "the second run wrote nothing")
	require.NotContains(t, out+errOut, fake.Token)
}

// TestRunChecksItsOptions: a run with a mistake in its options does
// nothing and says which setting is wrong, as the command line does.
func TestRunChecksItsOptions(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*run.Options)
		err  string
	}{
		{name: "an unknown forge", edit: func(o *run.Options) { o.SCM = "gitea" }, err: "invalid `--scm` \"gitea\": use local, github or gitlab"},
		{name: "a repository without its owner", edit: func(o *run.Options) { o.SCM, o.GitHub.Repo = "github", "acme" },
			err: "`--github-repo` must be owner/name, got \"acme\""},
		{name: "no decline", edit: func(o *run.Options) { o.DeclinePercent = 0 }, err: "`--decline-percent` must be 1 or more, got 0"},
		{name: "live without namespaces", edit: func(o *run.Options) { o.Live.Enabled = true }, err: "`--live` needs `--live-namespaces`: the namespaces whose workloads may be changed live"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			o := options(repo)
			tt.edit(&o)
			out, errOut, res, err := runOnce(t, o)
			require.EqualError(t, err, tt.err)
			require.Equal(t, run.Failed, res.Outcome)
			require.Empty(t, out)
			require.Empty(t, errOut, "no run, no summary line")
		})
	}
}
