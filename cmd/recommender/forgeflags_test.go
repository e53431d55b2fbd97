package main

import (
	"bytes"
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

func TestRunGitFlags(t *testing.T) {
	base := []string{"--scm", "local", "--repo", "r", "--metrics-file", "m.om"}
	tests := []struct {
		name string
		args []string
		want run.Git
		err  string
	}{
		{name: "none", want: run.Git{}},
		{
			name: "SSH",
			args: []string{"--git-url", "ssh://git@github.com/acme/gitops.git", "--git-ssh-key-file", "/k", "--git-known-hosts-file", "/kh"},
			want: run.Git{URL: "ssh://git@github.com/acme/gitops.git", SSHKeyFile: "/k", KnownHostsFile: "/kh"},
		},
		{
			name: "scp-like SSH",
			args: []string{"--git-url", "git@github.com:acme/gitops.git", "--git-ssh-key-file", "/k", "--git-known-hosts-file", "/kh"},
			want: run.Git{URL: "git@github.com:acme/gitops.git", SSHKeyFile: "/k", KnownHostsFile: "/kh"},
		},
		{name: "another HTTPS URL", args: []string{"--git-url", "https://mirror.example/acme/gitops.git"}, want: run.Git{URL: "https://mirror.example/acme/gitops.git"}},
		{name: "a key without a URL", args: []string{"--git-ssh-key-file", "/k", "--git-known-hosts-file", "/kh"},
			err: "`--git-ssh-key-file` needs `--git-url`, the repository's SSH URL (ssh://git@host/owner/name.git)"},
		{name: "a key with an HTTPS URL", args: []string{"--git-url", "https://u:secret@github.com/acme/gitops.git", "--git-ssh-key-file", "/k", "--git-known-hosts-file", "/kh"},
			err: "`--git-ssh-key-file` needs an SSH `--git-url` (ssh://user@host/path or user@host:path), got \"https://u:xxxxx@github.com/acme/gitops.git\""},
		{name: "an SSH URL without a key", args: []string{"--git-url", "ssh://git@github.com/acme/gitops.git"},
			err: "an SSH `--git-url` needs `--git-ssh-key-file`: the key to authenticate with"},
		{name: "a key without known_hosts", args: []string{"--git-url", "ssh://git@github.com/acme/gitops.git", "--git-ssh-key-file", "/k"},
			err: "`--git-ssh-key-file` needs `--git-known-hosts-file`: the server's host key is always checked"},
		{name: "known_hosts without a key", args: []string{"--git-known-hosts-file", "/kh"},
			err: "`--git-known-hosts-file` needs `--git-ssh-key-file`: it checks SSH servers only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := runWith(t, append(append([]string{}, base...), tt.args...))
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, o.Git)
		})
	}
}

// TestRunGitHubOverSSH is `run --scm github` with the pull requests on the
// fake GitHub and the clone and pushes over SSH to the real sshd, the
// deploy key and known_hosts from the config file.
func TestRunGitHubOverSSH(t *testing.T) {
	git := testenv.NewGitServer(t)
	sshd := testenv.NewSSHServer(t, git)
	git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	t.Setenv("GITHUB_TOKEN", fake.Token)
	config := writeConfig(t, strings.Join([]string{
		"scm: github",
		"github: {repo: acme/gitops, url: '" + fake.BaseURL() + "'}",
		"git:",
		"  url: " + sshd.RepoURL("acme/gitops"),
		"  sshKeyFile: " + sshd.KeyFile,
		"  knownHostsFile: " + sshd.KnownHostsFile,
		"metrics: {file: ../../examples/quickstart/metrics.om}",
		"output: table",
		"",
	}, "\n"))
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, Main([]string{"run", "--config", config}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "4 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")
	require.Len(t, fake.Pulls(), 4)
	branches := git.Git(t, "acme/gitops", "for-each-ref", "--format=%(refname:short)", "refs/heads/gpu-rightsizing/")
	require.Len(t, strings.Fields(branches), 4, "the branches were pushed over SSH")
	all, _ := git.Requests()
	require.Zero(t, all, "nothing went over HTTPS to the git server")

	// A server whose host key is not the known one gets nothing.
	other := filepath.Join(t.TempDir(), "known_hosts")
	pub := testenv.WriteSSHKey(t, filepath.Join(t.TempDir(), "k"))
	require.NoError(t, os.WriteFile(other, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", sshd.Port, ssh.MarshalAuthorizedKey(pub))), 0o600))
	out.Reset()
	errOut.Reset()
	t.Setenv("RECOMMENDER_GIT_KNOWN_HOSTS_FILE", other)
	require.Equal(t, exitError, Main([]string{"run", "--config", config}, &out, &errOut))
	require.Contains(t, errOut.String(), "knownhosts: key mismatch")
}
