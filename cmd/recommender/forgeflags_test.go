package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/run"
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
