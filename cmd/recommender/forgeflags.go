package main

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// githubFlags are run's GitHub settings. Secrets come from files or the
// environment, never from a flag's value, which `ps` shows to everyone.
type githubFlags struct {
	Repo           string
	URL            string
	TokenFile      string
	TokenEnv       string
	AppID          int64
	InstallationID int64
	AppKeyFile     string
}

func (f *githubFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Repo, "github-repo", "", "GitHub repository as `owner/name` (with --scm github)")
	fs.StringVar(&f.URL, "github-url", "", "GitHub Enterprise Server API `URL`, e.g. https://ghe.example.com/api/v3/ (default: github.com)")
	fs.StringVar(&f.TokenFile, "github-token-file", "", "read the GitHub token from this `file`")
	fs.StringVar(&f.TokenEnv, "github-token-env", "GITHUB_TOKEN", "read the GitHub token from this environment `variable` when no file is given")
	fs.Int64Var(&f.AppID, "github-app-id", 0, "authenticate as this GitHub App `id` (with --github-installation-id and --github-app-key-file)")
	fs.Int64Var(&f.InstallationID, "github-installation-id", 0, "the GitHub App's installation `id`")
	fs.StringVar(&f.AppKeyFile, "github-app-key-file", "", "the GitHub App's private key (PEM) `file`")
}

func (f *githubFlags) check() error {
	if f.Repo == "" {
		return config.FlagErrorf("`--github-repo` must be owner/name, got %q", f.Repo)
	}
	app := f.AppID != 0 || f.InstallationID != 0 || f.AppKeyFile != ""
	if app && (f.AppID == 0 || f.InstallationID == 0 || f.AppKeyFile == "") {
		return config.FlagErrorf("a GitHub App needs `--github-app-id`, `--github-installation-id` and `--github-app-key-file` together")
	}
	if app && f.TokenFile != "" {
		return config.FlagErrorf("use a token or a GitHub App, not both")
	}
	return nil
}

// checkValues checks the values that are wrong whatever the forge.
func (f *githubFlags) checkValues() error {
	owner, name, ok := strings.Cut(f.Repo, "/")
	if f.Repo != "" && (!ok || owner == "" || name == "" || strings.Contains(name, "/")) {
		return config.FlagErrorf("`--github-repo` must be owner/name, got %q", f.Repo)
	}
	if f.AppID < 0 || f.InstallationID < 0 {
		return config.FlagErrorf("`--github-app-id` and `--github-installation-id` are positive numbers")
	}
	return checkHTTPURL("github-url", f.URL)
}

// checkHTTPURL checks a forge's URL, when one is given: http:// or
// https:// and a host, as the API clients need.
func checkHTTPURL(flag, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return config.FlagErrorf("invalid `--%s` %q: want http:// or https:// and a host", flag, config.RedactURL(raw))
	}
	if _, ok := u.User.Password(); ok {
		return config.FlagErrorf("invalid `--%s` %s: carries a password; give the token in a file instead", flag, config.RedactURL(raw))
	}
	return nil
}

// config builds the forge's configuration, reading the token.
func (f *githubFlags) config() (scm.GitHubConfig, error) {
	owner, name, _ := strings.Cut(f.Repo, "/")
	cfg := scm.GitHubConfig{Owner: owner, Repo: name, BaseURL: f.URL,
		AppID: f.AppID, InstallationID: f.InstallationID, PrivateKeyFile: f.AppKeyFile}
	if f.AppID != 0 {
		return cfg, nil
	}
	tok, err := secret(f.TokenFile, f.TokenEnv)
	if err != nil {
		return cfg, fmt.Errorf("GitHub token: %w", err)
	}
	cfg.Token = tok
	return cfg, nil
}

// gitlabFlags are run's GitLab settings; the token, like GitHub's, comes
// from a file or the environment.
type gitlabFlags struct {
	URL       string
	Project   string
	TokenFile string
	TokenEnv  string
}

func (f *gitlabFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.URL, "gitlab-url", "", "self-managed GitLab's `URL`, e.g. https://gitlab.example.com (default: gitlab.com)")
	fs.StringVar(&f.Project, "gitlab-project", "", "GitLab project as a `path` (group/sub/name) or a numeric ID (with --scm gitlab)")
	fs.StringVar(&f.TokenFile, "gitlab-token-file", "", "read the GitLab access token (scope api) from this `file`")
	fs.StringVar(&f.TokenEnv, "gitlab-token-env", "GITLAB_TOKEN", "read the GitLab token from this environment `variable` when no file is given")
}

func (f *gitlabFlags) check() error {
	if f.Project == "" {
		return config.FlagErrorf("`--gitlab-project` is required with `--scm gitlab`")
	}
	return nil
}

func (f *gitlabFlags) config() (scm.GitLabConfig, error) {
	tok, err := secret(f.TokenFile, f.TokenEnv)
	if err != nil {
		return scm.GitLabConfig{}, fmt.Errorf("GitLab token: %w", err)
	}
	return scm.GitLabConfig{BaseURL: f.URL, Project: f.Project, Token: tok}, nil
}

// secret reads a credential from file, or else from the environment
// variable env; it is an error when neither holds one.
func secret(file, env string) (string, error) {
	if file != "" {
		return prometheus.ReadSecret(file)
	}
	if s := strings.TrimSpace(os.Getenv(env)); env != "" && s != "" {
		return s, nil
	}
	return "", fmt.Errorf("no token: give a file, or set $%s", env)
}

// gitFlags say where run clones from and pushes to, when that is not the
// forge's HTTPS URL with its token: an SSH URL with a deploy key, checked
// against a known_hosts file.
type gitFlags struct {
	URL            string
	SSHKeyFile     string
	KnownHostsFile string
}

func (f *gitFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.URL, "git-url", "", "clone and push this `URL` instead of the forge's (or --repo's), e.g. ssh://git@github.com/acme/gitops.git")
	fs.StringVar(&f.SSHKeyFile, "git-ssh-key-file", "", "authenticate to an SSH --git-url with the private key in this `file` (OpenSSH or PEM, no passphrase)")
	fs.StringVar(&f.KnownHostsFile, "git-known-hosts-file", "", "check the SSH server's host key against this known_hosts `file` (required with an SSH key)")
}

func (f *gitFlags) check() error {
	ssh := scm.IsSSHURL(f.URL)
	switch {
	case f.SSHKeyFile != "" && f.URL == "":
		return config.FlagErrorf("`--git-ssh-key-file` needs `--git-url`, the repository's SSH URL (ssh://git@host/owner/name.git)")
	case f.SSHKeyFile != "" && !ssh:
		return config.FlagErrorf("`--git-ssh-key-file` needs an SSH `--git-url` (ssh://user@host/path or user@host:path), got %q", config.RedactURL(f.URL))
	case ssh && f.SSHKeyFile == "":
		return config.FlagErrorf("an SSH `--git-url` needs `--git-ssh-key-file`: the key to authenticate with")
	case f.SSHKeyFile != "" && f.KnownHostsFile == "":
		return config.FlagErrorf("`--git-ssh-key-file` needs `--git-known-hosts-file`: the server's host key is always checked")
	case f.KnownHostsFile != "" && f.SSHKeyFile == "":
		return config.FlagErrorf("`--git-known-hosts-file` needs `--git-ssh-key-file`: it checks SSH servers only")
	}
	return nil
}

// remote is where to clone from and push to, and with which credentials:
// the forge's, unless --git-url says otherwise. An SSH URL replaces the
// forge's token with the SSH key for git; the forge's API keeps its token.
func (f *gitFlags) remote(url string, auth scm.Auth) (string, scm.Auth) {
	if f.URL == "" {
		return url, auth
	}
	if f.SSHKeyFile != "" {
		return f.URL, scm.Auth{SSHKeyFile: f.SSHKeyFile, KnownHostsFile: f.KnownHostsFile}
	}
	return f.URL, auth
}
