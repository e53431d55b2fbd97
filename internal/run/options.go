package run

import (
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// Options are one run's settings. Each is named by the flag (and config
// key) that sets it, and a mistake in one is a *config.FlagError naming
// that flag.
type Options struct {
	// Out takes the run's tables and its summary; Err the problems
	// found in the input. Nil: discarded.
	Out, Err io.Writer
	// Terminal says Out is a terminal: the tables go there unless
	// Observe.Output asks for something else.
	Terminal bool
	Logger   *slog.Logger
	// Now is the clock of the evaluation time and of the live markers.
	Now func() time.Time
	// Version is the tool's, as pull request bodies name it.
	Version string
	// Progress counts the branches pushed for a person at a terminal;
	// nil: none shown. Usage.Progress counts the queries.
	Progress source.Progress

	// SCM is where the pull requests live: local, github or gitlab.
	SCM string
	// Repo is the repository's local path, with SCM local.
	Repo   string
	Base   string
	GitHub GitHub
	GitLab GitLab
	Git    Git
	// CAFile is a PEM bundle of CA certificates trusted besides the
	// system's by the forge's API and by git over HTTPS: one setting, as
	// both reach the same server.
	CAFile string

	Usage            source.Options
	PolicyPaths      []string
	DefaultNamespace string
	Filter           plan.Filter

	// GroupBy is one pull request per workload, namespace or policy;
	// "": each strategy's own.
	GroupBy         string
	DryRun          bool
	AuthorName      string
	AuthorEmail     string
	SigningKeyFile  string
	DeclinePercent  int
	MaxOpen, MaxNew int
	Labels          []string
	Reviewers       []string
	Assignees       []string
	Draft           bool
	BranchPrefix    string

	Live    Live
	Observe Observe
	// Dashboard keeps one issue (a Markdown file with SCM local) that
	// sums the run up, and acts on the boxes ticked in it.
	Dashboard bool
	// FleetFindings is where the fleet report reads its placement for the
	// findings said in pull requests: off, cluster or metrics.
	FleetFindings string
}

// SCMs are the values of SCM.
func SCMs() []string { return []string{"local", "github", "gitlab"} }

// Groupings are the values of GroupBy; "": each strategy's own.
func Groupings() []string {
	return []string{"", string(plan.ByWorkload), string(plan.ByNamespace), string(plan.ByPolicy), string(plan.ByCluster)}
}

// Check checks the settings: the forge's, then the steps'.
func (o *Options) Check() error {
	if err := o.CheckForge(); err != nil {
		return err
	}
	return o.CheckSteps()
}

// CheckForge checks where the pull requests live and how git reaches the
// repository.
func (o *Options) CheckForge() error {
	// Values wrong whatever the forge: a config holding one is wrong
	// before it is used.
	if err := o.GitHub.CheckValues(); err != nil {
		return err
	}
	if err := checkHTTPURL("gitlab-url", o.GitLab.URL); err != nil {
		return err
	}
	switch o.SCM {
	case "local":
		if o.Repo == "" {
			return config.FlagErrorf("`--repo` is required with `--scm local`")
		}
	case "github":
		if err := o.GitHub.Check(); err != nil {
			return err
		}
	case "gitlab":
		if err := o.GitLab.Check(); err != nil {
			return err
		}
	default:
		return config.FlagErrorf("invalid `--scm` %q: use %s", o.SCM, config.OneOf(SCMs()))
	}
	return o.Git.Check()
}

// CheckSteps checks the settings of the steps after the plan: the pull
// requests, what the run tells when it ends, the fleet findings and the
// live stage. It reads the webhook's URL.
func (o *Options) CheckSteps() error {
	if !slices.Contains(Groupings(), o.GroupBy) {
		return config.FlagErrorf("invalid `--group-by` %q: use %s", o.GroupBy, config.OneOf(Groupings()))
	}
	for _, n := range []struct {
		flag  string
		value int
		min   int
	}{{"max-open", o.MaxOpen, 0}, {"max-new", o.MaxNew, 0}, {"decline-percent", o.DeclinePercent, 1}} {
		if n.value < n.min {
			return config.FlagErrorf("`--%s` must be %d or more, got %d", n.flag, n.min, n.value)
		}
	}
	if err := o.Observe.Check(); err != nil {
		return err
	}
	switch o.FleetFindings {
	case "off", "cluster", "metrics":
	default:
		return config.FlagErrorf("invalid `--fleet-findings` %q: use off, cluster or metrics", o.FleetFindings)
	}
	if err := o.Live.Check(); err != nil {
		return err
	}
	return o.Live.checkClusters(o.Filter.Clusters)
}

// GitHub are the GitHub settings. Secrets come from files or the
// environment, never from a flag's value, which `ps` shows to everyone.
type GitHub struct {
	// Repo is owner/name.
	Repo string
	// URL is a GitHub Enterprise Server's API; "": github.com.
	URL       string
	TokenFile string
	// TokenEnv is the variable holding the token when no file is named.
	TokenEnv       string
	AppID          int64
	InstallationID int64
	AppKeyFile     string
}

// Check checks the settings needed with SCM github.
func (f *GitHub) Check() error {
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

// CheckValues checks the values that are wrong whatever the forge.
func (f *GitHub) CheckValues() error {
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

// GitLab are the GitLab settings; the token, like GitHub's, comes from a
// file or the environment.
type GitLab struct {
	// URL is a self-managed GitLab's; "": gitlab.com.
	URL string
	// Project is a path (group/sub/name) or a numeric ID.
	Project   string
	TokenFile string
	TokenEnv  string
}

// Check checks the settings needed with SCM gitlab.
func (f *GitLab) Check() error {
	if f.Project == "" {
		return config.FlagErrorf("`--gitlab-project` is required with `--scm gitlab`")
	}
	return nil
}

// Git says where the run clones from and pushes to, when that is not the
// forge's HTTPS URL with its token: an SSH URL with a deploy key, checked
// against a known_hosts file.
type Git struct {
	URL            string
	SSHKeyFile     string
	KnownHostsFile string
}

// Check checks that an SSH URL, its key and its known_hosts go together.
func (f *Git) Check() error {
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
// the forge's, unless URL says otherwise. An SSH URL replaces the
// forge's token with the SSH key for git; the forge's API keeps its token.
func (f *Git) remote(url string, auth scm.Auth) (string, scm.Auth) {
	if f.URL == "" {
		return url, auth
	}
	if f.SSHKeyFile != "" {
		return f.URL, scm.Auth{SSHKeyFile: f.SSHKeyFile, KnownHostsFile: f.KnownHostsFile}
	}
	return f.URL, auth
}
