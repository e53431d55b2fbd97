package run_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// TestRunGitHubOverSSH is a run with SCM github, the pull requests on the
// fake GitHub, the clone and pushes over SSH to the real sshd with a
// deploy key, its host checked against known_hosts.
func TestRunGitHubOverSSH(t *testing.T) {
	git := testenv.NewGitServer(t)
	sshd := testenv.NewSSHServer(t, git)
	git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	t.Setenv("GITHUB_TOKEN", fake.Token)
	o := options("")
	o.SCM, o.GitHub.Repo, o.GitHub.URL = "github", "acme/gitops", fake.BaseURL()
	o.Git = run.Git{URL: sshd.RepoURL("acme/gitops"), SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.KnownHostsFile}
	o.Observe.Output = "table"
	out, _ := runOK(t, o, run.ChangesProposed)
	require.Contains(t, out, "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	require.Len(t, fake.Pulls(), 4)
	branches := git.Git(t, "acme/gitops", "for-each-ref", "--format=%(refname:short)", "refs/heads/gpu-rightsizing/")
	require.Len(t, strings.Fields(branches), 4, "the branches were pushed over SSH")
	all, _ := git.Requests()
	require.Zero(t, all, "nothing went over HTTPS to the git server")

	// A server whose host key is not the known one gets nothing.
	other := filepath.Join(t.TempDir(), "known_hosts")
	pub := testenv.WriteSSHKey(t, filepath.Join(t.TempDir(), "k"))
	require.NoError(t, os.WriteFile(other, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", sshd.Port, ssh.MarshalAuthorizedKey(pub))), 0o600))
	o.Git.KnownHostsFile = other
	_, _, res, err := runOnce(t, o)
	require.ErrorContains(t, err, "knownhosts: key mismatch")
	require.Equal(t, run.Failed, res.Outcome)
}

// TestRunPrivateCA: a forge and its git server with a certificate of a
// private CA are refused, and with --ca-file one setting serves the
// forge's API and git over HTTPS: the run opens its pull requests and
// pushes their branches.
func TestRunPrivateCA(t *testing.T) {
	tests := []struct {
		name string
		// setup starts the forge and returns the options that reach it and
		// the number of pull requests it holds.
		setup func(t *testing.T, git *testenv.GitServer) (run.Options, func() int)
	}{
		{name: "github", setup: func(t *testing.T, git *testenv.GitServer) (run.Options, func() int) {
			fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
			t.Setenv("GITHUB_TOKEN", fake.Token)
			o := options("")
			o.SCM, o.GitHub.Repo, o.GitHub.URL = "github", "acme/gitops", fake.BaseURL()
			return o, func() int { return len(fake.Pulls()) }
		}},
		{name: "gitlab", setup: func(t *testing.T, git *testenv.GitServer) (run.Options, func() int) {
			fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: "acme/gitops", Dir: git.Dir("acme/gitops"),
				CloneURL: git.RepoURL("acme/gitops"), Token: git.Token, TLS: true})
			t.Setenv("GITLAB_TOKEN", git.Token)
			o := options("")
			o.SCM, o.GitLab.URL, o.GitLab.Project = "gitlab", fake.URL, "acme/gitops"
			return o, func() int { return len(fake.MergeRequests()) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git := testenv.NewGitServerTLS(t)
			git.NewRepo(t, "acme/gitops", quickstartFiles(t))
			o, pulls := tt.setup(t, git)
			o.Observe.Output = "table"

			_, _, res, err := runOnce(t, o)
			require.ErrorContains(t, err, "certificate signed by unknown authority")
			require.Equal(t, run.Failed, res.Outcome)
			require.Zero(t, pulls())

			o.CAFile = git.CAFile
			out, _ := runOK(t, o, run.ChangesProposed)
			require.Contains(t, out, "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
			require.Equal(t, 4, pulls())
			branches := git.Git(t, "acme/gitops", "for-each-ref", "--format=%(refname:short)", "refs/heads/gpu-rightsizing/")
			require.Len(t, strings.Fields(branches), 4, "the branches were pushed over HTTPS")
		})
	}
}
