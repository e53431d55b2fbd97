package main

import (
	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/run"
)

// registerForges registers the forges' settings, how git reaches the
// repository, and the CA that verifies both.
func registerForges(fs *pflag.FlagSet, o *run.Options) {
	registerGitHub(fs, &o.GitHub)
	registerGitLab(fs, &o.GitLab)
	registerGit(fs, &o.Git)
	fs.StringVar(&o.CAFile, "ca-file", "", "trust the CA certificates in this PEM `file`, besides the system's, for GitHub, GitLab and git over HTTPS")
}

// registerGitHub registers run's GitHub settings. Secrets come from files
// or the environment, never from a flag's value, which `ps` shows to
// everyone.
func registerGitHub(fs *pflag.FlagSet, f *run.GitHub) {
	fs.StringVar(&f.Repo, "github-repo", "", "GitHub repository as `owner/name` (with --scm github)")
	fs.StringVar(&f.URL, "github-url", "", "GitHub Enterprise Server API `URL`, e.g. https://ghe.example.com/api/v3/ (default: github.com)")
	fs.StringVar(&f.TokenFile, "github-token-file", "", "read the GitHub token from this `file`")
	fs.StringVar(&f.TokenEnv, "github-token-env", "GITHUB_TOKEN", "read the GitHub token from this environment `variable` when no file is given")
	fs.Int64Var(&f.AppID, "github-app-id", 0, "authenticate as this GitHub App `id` (with --github-installation-id and --github-app-key-file)")
	fs.Int64Var(&f.InstallationID, "github-installation-id", 0, "the GitHub App's installation `id`")
	fs.StringVar(&f.AppKeyFile, "github-app-key-file", "", "the GitHub App's private key (PEM) `file`")
}

// registerGitLab registers run's GitLab settings; the token, like
// GitHub's, comes from a file or the environment.
func registerGitLab(fs *pflag.FlagSet, f *run.GitLab) {
	fs.StringVar(&f.URL, "gitlab-url", "", "self-managed GitLab's `URL`, e.g. https://gitlab.example.com (default: gitlab.com)")
	fs.StringVar(&f.Project, "gitlab-project", "", "GitLab project as a `path` (group/sub/name) or a numeric ID (with --scm gitlab)")
	fs.StringVar(&f.TokenFile, "gitlab-token-file", "", "read the GitLab access token (scope api) from this `file`")
	fs.StringVar(&f.TokenEnv, "gitlab-token-env", "GITLAB_TOKEN", "read the GitLab token from this environment `variable` when no file is given")
}

// registerGit registers where run clones from and pushes to, when that
// is not the forge's HTTPS URL with its token: an SSH URL with a deploy
// key, checked against a known_hosts file.
func registerGit(fs *pflag.FlagSet, f *run.Git) {
	fs.StringVar(&f.URL, "git-url", "", "clone and push this `URL` instead of the forge's (or --repo's), e.g. ssh://git@github.com/acme/gitops.git")
	fs.StringVar(&f.SSHKeyFile, "git-ssh-key-file", "", "authenticate to an SSH --git-url with the private key in this `file` (OpenSSH or PEM, no passphrase)")
	fs.StringVar(&f.KnownHostsFile, "git-known-hosts-file", "", "check the SSH server's host key against this known_hosts `file` (required with an SSH key)")
}
