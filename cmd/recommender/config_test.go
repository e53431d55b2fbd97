package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// fullConfig sets every key of the config file.
const fullConfig = `scm: github
repo: ./gitops
base: release
github:
  repo: acme/gitops
  url: https://ghe.example.com/api/v3/
  tokenFile: /var/run/secrets/github/token
  tokenEnv: GH_TOKEN
  appID: 0
  installationID: 0
  appKeyFile: ""
gitlab:
  url: https://gitlab.example.com
  project: platform/gitops
  tokenFile: /var/run/secrets/gitlab/token
  tokenEnv: GL_TOKEN
policies: [policies, more]
defaultNamespace: ml
metrics:
  file: ""
  preset: hami
  at: 2026-11-30T12:00:00Z
  clusterLabel: cluster=prod-eu
prometheus:
  url: https://mimir.example/prometheus
  tokenFile: /var/run/secrets/prometheus/token
  tokenEnv: PROM_TOKEN
  user: reader
  passwordFile: /var/run/secrets/prometheus/password
  headers: ["X-Scope-OrgID: gpu"]
  caFile: /ca.pem
  certFile: /cert.pem
  keyFile: /key.pem
  insecureSkipVerify: false
  timeout: 30s
pullRequests:
  groupBy: namespace
  branchPrefix: rightsizing/
  labels: [gpu, team-ml]
  reviewers: [alice]
  assignees: [bob]
  draft: true
  maxOpen: 10
  maxNew: 3
  declinePercent: 20
commits:
  authorName: bot
  authorEmail: bot@example.com
  signingKeyFile: /var/run/secrets/signing/key.asc
dryRun: true
logLevel: info
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "recommender.yaml")
	require.NoError(t, os.WriteFile(name, []byte(text), 0o600))
	return name
}

// runWith parses run's command line, environment and config as Main
// would, and returns the options run would be given.
func runWith(t *testing.T, args []string) (*runOptions, error) {
	t.Helper()
	var got *runOptions
	var out, errOut bytes.Buffer
	io := streams{Out: &out, Err: &errOut}
	root := newCmdRoot(io, nil)
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newCmdRun(io, func() (*slog.Logger, error) { return slog.New(slog.DiscardHandler), nil },
		func(_ context.Context, o *runOptions) error { got = o; return nil }))
	root.SetArgs(append([]string{"run"}, args...))
	_, err := root.ExecuteC()
	return got, err
}

func TestRunConfigFile(t *testing.T) {
	o, err := runWith(t, []string{"--config", writeConfig(t, fullConfig)})
	require.NoError(t, err)
	require.Equal(t, "github", o.SCM)
	require.Equal(t, "release", o.Base)
	require.Equal(t, run.GitHub{Repo: "acme/gitops", URL: "https://ghe.example.com/api/v3/", TokenFile: "/var/run/secrets/github/token", TokenEnv: "GH_TOKEN"}, o.GitHub)
	require.Equal(t, run.GitLab{URL: "https://gitlab.example.com", Project: "platform/gitops", TokenFile: "/var/run/secrets/gitlab/token", TokenEnv: "GL_TOKEN"}, o.GitLab)
	require.Equal(t, []string{"policies", "more"}, o.PolicyPaths)
	require.Equal(t, "ml", o.DefaultNamespace)
	require.Equal(t, preset.HAMi, o.Usage.Preset)
	require.Equal(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), o.Usage.At)
	p := o.Usage.Prometheus
	require.Equal(t, "https://mimir.example/prometheus", p.URL)
	require.Equal(t, "/var/run/secrets/prometheus/token", p.BearerTokenFile)
	require.Equal(t, "PROM_TOKEN", p.BearerTokenEnv)
	require.Equal(t, "reader", p.BasicAuthUser)
	require.Equal(t, "/var/run/secrets/prometheus/password", p.BasicAuthPasswordFile)
	require.Equal(t, []string{"gpu"}, p.Headers.Values("X-Scope-OrgID"))
	require.Equal(t, []string{"/ca.pem", "/cert.pem", "/key.pem"}, []string{p.CAFile, p.CertFile, p.KeyFile})
	require.Equal(t, 30*time.Second, p.Timeout)
	require.Equal(t, plan.ClusterLabel{Name: "cluster", Value: "prod-eu"}, o.Usage.ClusterLabel)
	require.Equal(t, "namespace", o.GroupBy)
	require.Equal(t, "rightsizing/", o.BranchPrefix)
	require.Equal(t, []string{"gpu", "team-ml"}, o.Labels)
	require.Equal(t, []string{"alice"}, o.Reviewers)
	require.Equal(t, []string{"bob"}, o.Assignees)
	require.True(t, o.Draft)
	require.Equal(t, []int{10, 3, 20}, []int{o.MaxOpen, o.MaxNew, o.DeclinePercent})
	require.Equal(t, []string{"bot", "bot@example.com", "/var/run/secrets/signing/key.asc"}, []string{o.AuthorName, o.AuthorEmail, o.SigningKeyFile})
	require.True(t, o.DryRun)
}

// TestRunConfigPrecedence: a flag wins over the environment, the
// environment over the file, the file over the default.
func TestRunConfigPrecedence(t *testing.T) {
	file := writeConfig(t, "scm: local\nrepo: from-file\nbase: file-base\nmetrics: {file: m.om}\n"+
		"pullRequests: {maxNew: 1, maxOpen: 2, labels: [file]}\n")
	t.Setenv("RECOMMENDER_BASE", "env-base")
	t.Setenv("RECOMMENDER_MAX_NEW", "5")
	t.Setenv("RECOMMENDER_LABEL", "env-a, env-b")
	o, err := runWith(t, []string{"--config", file, "--max-new", "7"})
	require.NoError(t, err)
	require.Equal(t, "from-file", o.Repo, "file over default")
	require.Equal(t, "env-base", o.Base, "env over file")
	require.Equal(t, 7, o.MaxNew, "flag over env")
	require.Equal(t, 2, o.MaxOpen, "file")
	require.Equal(t, []string{"env-a", "env-b"}, o.Labels, "a list from the environment replaces the file's")
	require.Empty(t, o.GroupBy, "default: each strategy's gitops.grouping decides")
	require.Equal(t, config.Source{Kind: "flag"}, o.effective.Sources["max-new"])
	require.Equal(t, config.Source{Kind: "env", Where: "RECOMMENDER_BASE"}, o.effective.Sources["base"])
	require.Equal(t, config.Source{Kind: "file", Where: file + ":2:7"}, o.effective.Sources["repo"])
	require.Equal(t, config.Source{Kind: "default"}, o.effective.Sources["group-by"])

	t.Setenv("RECOMMENDER_CONFIG", file)
	o, err = runWith(t, nil)
	require.NoError(t, err)
	require.Equal(t, "from-file", o.Repo, "the config file named by $RECOMMENDER_CONFIG")
}

func TestRunConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		config string
		env    map[string]string
		args   []string
		err    string
	}{
		{
			name:   "unknown key",
			config: "scm: local\nrepo: r\nmetrics:\n  file: m.om\n  presets: hami\n",
			err:    ":5:3: metrics.presets: unknown key (did you mean \"preset\"?)",
		},
		{
			name:   "an unknown key does not hide a bad value",
			config: "scm: local\nrepo: r\nmetrics: {file: m.om}\nprometheus:\n  timeout: 5x\npullRequests:\n  maxOpn: 3\n",
			err: "{file}:5:12: prometheus.timeout: expected a duration such as 30s or 2m, got \"5x\"\n" +
				"{file}:7:3: pullRequests.maxOpn: unknown key (did you mean \"maxOpen\"?)",
		},
		{
			name:   "a bad value from the environment",
			config: "scm: local\nrepo: r\nmetrics: {file: m.om}\n",
			env:    map[string]string{"RECOMMENDER_DRAFT": "maybe"},
			err:    "$RECOMMENDER_DRAFT: expected true or false, got \"maybe\"",
		},
		{
			name:   "a check of run names the key and its line",
			config: "scm: github\ngithub:\n  repo: acme\nmetrics: {file: m.om}\n",
			err:    "`--github-repo` must be owner/name, got \"acme\"\n  (`--github-repo` is github.repo at {file}:3:9)",
		},
		{
			name:   "a mistake in each group of run's checks at once",
			config: "scm: github\ngithub:\n  repo: acme\nmetrics:\n  file: m.om\n  preset: nvidia\npullRequests:\n  groupBy: team\n",
			err: "`--github-repo` must be owner/name, got \"acme\"\n" +
				"invalid `--metrics-preset`: unknown metrics preset \"nvidia\": use kubex, hami, dcgm\n" +
				"invalid `--group-by` \"team\": use workload, namespace, policy or cluster\n" +
				"  (`--github-repo` is github.repo at {file}:3:9;\n   `--metrics-preset` is metrics.preset at {file}:6:11;\n" +
				"   `--group-by` is pullRequests.groupBy at {file}:8:12)",
		},
		{
			name:   "a missing setting names its key",
			config: "scm: gitlab\nmetrics: {file: m.om}\n",
			err:    "`--gitlab-project` is required with `--scm gitlab`\n  (`--gitlab-project` is gitlab.project in {file}, or $RECOMMENDER_GITLAB_PROJECT;\n   `--scm` is scm at {file}:1:6)",
		},
		{
			name:   "settings that exclude each other",
			config: "repo: r\nmetrics: {file: m.om}\nprometheus: {url: http://p}\n",
			err:    "`--metrics-file` and `--prometheus-url` exclude each other: usage comes from one source\n  (`--metrics-file` is metrics.file at {file}:2:17;\n   `--prometheus-url` is prometheus.url at {file}:3:19)",
		},
		{
			name:   "a Prometheus URL that is not one",
			config: "scm: local\nrepo: r\nprometheus: {url: 'http://u:p@127.0.0.1:bad port/'}\n",
			err:    "invalid `--prometheus-url`: prometheus URL: not a valid URL\n  (`--prometheus-url` is prometheus.url at {file}:3:19)",
		},
		{
			name:   "a Prometheus URL of another scheme",
			config: "scm: local\nrepo: r\nprometheus: {url: 'ftp://prometheus.example/'}\n",
			err:    "invalid `--prometheus-url`: prometheus URL ftp://prometheus.example/: want http:// or https:// and a host",
		},
		{name: "a missing file", args: []string{"--config", "/nonexistent/recommender.yaml"}, err: "config: open /nonexistent/recommender.yaml: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := tt.args
			var file string
			if args == nil {
				file = writeConfig(t, tt.config)
				args = []string{"--config", file}
			}
			var out, errOut bytes.Buffer
			code := Main(append([]string{"config", "validate"}, args...), &out, &errOut)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut.String(), strings.ReplaceAll(tt.err, "{file}", file))
			require.NotContains(t, errOut.String(), "Usage:", "a config's mistake is told without the usage")
			require.Empty(t, out.String())
		})
	}
}

func TestConfigValidate(t *testing.T) {
	var out, errOut bytes.Buffer
	file := writeConfig(t, fullConfig)
	require.Equal(t, exitOK, Main([]string{"config", "validate", "--config", file}, &out, &errOut), errOut.String())
	require.Equal(t, file+": valid\n", out.String())

	out.Reset()
	errOut.Reset()
	require.Equal(t, exitUsage, Main([]string{"config", "validate", "--scm", "local", "--repo", "r", "--metrics-file", "m"}, &out, &errOut))
	require.Contains(t, errOut.String(), "`--config` is required")
}

func TestConfigPrint(t *testing.T) {
	file := writeConfig(t, "scm: github\ngithub: {repo: acme/gitops, tokenEnv: GH_TOKEN}\n"+
		"prometheus:\n  url: https://mimir.example/prometheus\n"+
		"  headers: ['X-Scope-OrgID: gpu', 'Authorization: Bearer sekrit']\n")
	t.Setenv("GH_TOKEN", "ghp_verysecret")
	t.Setenv("RECOMMENDER_MAX_NEW", "2")
	var out, errOut bytes.Buffer
	require.Equal(t, exitOK, Main([]string{"config", "print", "--config", file, "--dry-run"}, &out, &errOut), errOut.String())
	got := out.String()
	for _, want := range []string{
		"scm: github # " + file + ":1:6\n",
		"  repo: acme/gitops # " + file + ":2:16\n",
		"  tokenEnv: GH_TOKEN # " + file + ":2:39\n",
		"  url: https://mimir.example/prometheus # " + file + ":4:8\n",
		"  headers: ['X-Scope-OrgID: gpu', 'Authorization: <redacted>'] # " + file + ":5:12\n",
		"  maxNew: 2 # $RECOMMENDER_MAX_NEW\n",
		"dryRun: true # flag\n",
		"base: main # default\n",
	} {
		require.Contains(t, got, want)
	}
	for _, secret := range []string{"ghp_verysecret", "sekrit"} {
		require.NotContains(t, got, secret)
	}
	// What it prints is a config that reads back to the same settings.
	var again bytes.Buffer
	require.Equal(t, exitOK, Main([]string{"config", "print", "--config", writeConfig(t, got)}, &again, &errOut), errOut.String())
}

// TestConfigPrintHidesTokensInURLs: a token in a URL's query, a password
// in it, or a URL that does not parse, never reaches `config print` (nor
// its refusal: such a URL is a mistake the run would refuse).
func TestConfigPrintHidesTokensInURLs(t *testing.T) {
	tests := []struct {
		name, url, secret string
	}{
		{name: "a token in the query", url: "https://prom.example/prometheus?access_token=SECRET1", secret: "SECRET1"},
		{name: "an unparsable URL", url: "https://u:p%zzSECRET3@prom.example/", secret: "SECRET3"},
		{name: "a password", url: "https://reader:hunter2@mimir.example/prometheus", secret: "hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, "scm: local\nrepo: .\nprometheus:\n  url: '"+tt.url+"'\n")
			var out, errOut bytes.Buffer
			Main([]string{"config", "print", "--config", file}, &out, &errOut)
			require.NotContains(t, out.String()+errOut.String(), tt.secret)
		})
	}
}

// TestRunConfigEmptyEnv: a variable that is set but empty empties a
// string or a list the file sets; a boolean or a number has no empty
// value, so an empty one is an error that names the variable.
func TestRunConfigEmptyEnv(t *testing.T) {
	file := writeConfig(t, "scm: local\nrepo: r\nmetrics: {file: m.om}\n"+
		"github: {tokenFile: /file/token}\npullRequests: {labels: [file], maxNew: 3, draft: true}\n")
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, o *runOptions)
		err   string
	}{
		{
			name: "an empty string clears the file's",
			env:  map[string]string{"RECOMMENDER_GITHUB_TOKEN_FILE": ""},
			check: func(t *testing.T, o *runOptions) {
				require.Empty(t, o.GitHub.TokenFile)
				require.Equal(t, config.Source{Kind: "env", Where: "RECOMMENDER_GITHUB_TOKEN_FILE"}, o.effective.Sources["github-token-file"])
			},
		},
		{
			name: "an empty string replaces a default",
			env:  map[string]string{"RECOMMENDER_BRANCH_PREFIX": ""},
			check: func(t *testing.T, o *runOptions) {
				require.Empty(t, o.BranchPrefix)
			},
		},
		{
			name:  "an empty list clears the file's",
			env:   map[string]string{"RECOMMENDER_LABEL": ""},
			check: func(t *testing.T, o *runOptions) { require.Empty(t, o.Labels) },
		},
		{
			name: "unset, the file's values stand",
			check: func(t *testing.T, o *runOptions) {
				require.Equal(t, "/file/token", o.GitHub.TokenFile)
				require.Equal(t, []string{"file"}, o.Labels)
				require.Equal(t, 3, o.MaxNew)
			},
		},
		{
			name: "an empty number",
			env:  map[string]string{"RECOMMENDER_MAX_NEW": ""},
			err:  "$RECOMMENDER_MAX_NEW: expected an integer, got an empty value (unset the variable to use the config file's value or the default)",
		},
		{
			name: "an empty boolean",
			env:  map[string]string{"RECOMMENDER_DRAFT": ""},
			err:  "$RECOMMENDER_DRAFT: expected true or false, got an empty value",
		},
		{
			name: "an empty duration",
			env:  map[string]string{"RECOMMENDER_PROMETHEUS_TIMEOUT": ""},
			err:  "$RECOMMENDER_PROMETHEUS_TIMEOUT: expected a duration such as 30s or 2m, got an empty value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o, err := runWith(t, []string{"--config", file})
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}

// TestRunConfigEnvListWithComma: a header whose value holds a comma comes
// through the environment whole.
func TestRunConfigEnvListWithComma(t *testing.T) {
	t.Setenv("RECOMMENDER_PROMETHEUS_HEADER", `Accept: text/plain\, application/json, X-Scope-OrgID: gpu`)
	o, err := runWith(t, []string{"--scm", "local", "--repo", "r", "--prometheus-url", "http://p"})
	require.NoError(t, err)
	require.Equal(t, []string{"text/plain, application/json"}, o.Usage.Prometheus.Headers.Values("Accept"))
	require.Equal(t, []string{"gpu"}, o.Usage.Prometheus.Headers.Values("X-Scope-OrgID"))
}

// planWith parses plan's command line, environment and config as Main
// would, and returns the options plan would be given.
func planWith(t *testing.T, args []string) (*planOptions, error) {
	t.Helper()
	var got *planOptions
	io := streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	root := newCmdRoot(io, func(_ context.Context, o *planOptions) error { got = o; return nil })
	root.SetArgs(append([]string{"plan"}, args...))
	_, err := root.ExecuteC()
	return got, err
}

// TestPlanConfigFile: plan reads run's config file, takes the keys it
// shares with run and leaves the ones only run uses.
func TestPlanConfigFile(t *testing.T) {
	file := writeConfig(t, fullConfig+"output: markdown\ndetailedExitCode: true\n")
	o, err := planWith(t, []string{"--config", file})
	require.NoError(t, err)
	require.Equal(t, "./gitops", o.Repo)
	require.Equal(t, []string{"policies", "more"}, o.PolicyPaths)
	require.Equal(t, "ml", o.DefaultNamespace)
	require.Equal(t, "markdown", o.Output)
	require.True(t, o.DetailedExitCode)
	require.Equal(t, preset.HAMi, o.Usage.Preset)
	require.Equal(t, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), o.Usage.At)
	p := o.Usage.Prometheus
	require.Equal(t, "https://mimir.example/prometheus", p.URL)
	require.Equal(t, "/var/run/secrets/prometheus/token", p.BearerTokenFile)
	require.Equal(t, []string{"gpu"}, p.Headers.Values("X-Scope-OrgID"))
	require.Equal(t, 30*time.Second, p.Timeout)
	require.Equal(t, plan.ClusterLabel{Name: "cluster", Value: "prod-eu"}, o.Usage.ClusterLabel)
	require.Equal(t, config.Source{Kind: "file", Where: file + ":2:7"}, o.effective.Sources["repo"])
	require.NotContains(t, o.effective.Sources, "max-new", "a key only run uses is left to run")

	// flag > env > file > default, as for run.
	t.Setenv("RECOMMENDER_OUTPUT", "json")
	t.Setenv("RECOMMENDER_DEFAULT_NAMESPACE", "from-env")
	o, err = planWith(t, []string{"--config", file, "-o", "table"})
	require.NoError(t, err)
	require.Equal(t, "table", o.Output, "flag over env")
	require.Equal(t, "from-env", o.DefaultNamespace, "env over file")
	require.Equal(t, "./gitops", o.Repo, "file over default")

	t.Setenv("RECOMMENDER_CONFIG", file)
	o, err = planWith(t, nil)
	require.NoError(t, err)
	require.Equal(t, "./gitops", o.Repo, "the config file named by $RECOMMENDER_CONFIG")
}

func TestPlanConfigErrors(t *testing.T) {
	tests := []struct {
		name, config, err string
	}{
		{name: "an unknown key", config: "repo: r\nmetrics: {file: m.om}\npullRequest: {maxNew: 1}\n",
			err: ":3:1: pullRequest: unknown key (did you mean \"pullRequests\"?)"},
		{name: "a bad value of a key only run uses is left to run", config: "repo: r\nmetrics: {file: m.om}\npullRequests: {maxNew: many}\n"},
		{name: "a bad value", config: "repo: r\nmetrics: {file: m.om}\noutput: 3\n",
			err: ":3:9: output: expected a string, got the integer 3 (quote it)"},
		{name: "a missing repo names its key", config: "metrics: {file: m.om}\n",
			err: "`--repo` is required\n  (`--repo` is repo in {file}, or $RECOMMENDER_REPO)"},
		{name: "a bad output names its line", config: "repo: r\nmetrics: {file: m.om}\noutput: yaml\n",
			err: "invalid `--output` \"yaml\": use table, json or markdown\n  (`--output` is output at {file}:3:9)"},
		{name: "every check's mistake at once", config: "metrics: {file: m.om}\npullRequests: {groupBy: team}\noutput: yaml\n",
			err: "`--repo` is required\ninvalid `--group-by` \"team\": use workload, namespace, policy or cluster\n" +
				"invalid `--output` \"yaml\": use table, json or markdown\n" +
				"  (`--repo` is repo in {file}, or $RECOMMENDER_REPO;\n   `--group-by` is pullRequests.groupBy at {file}:2:25;\n" +
				"   `--output` is output at {file}:3:9)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, tt.config)
			var out, errOut bytes.Buffer
			code := Main([]string{"plan", "--config", file}, &out, &errOut)
			if tt.err == "" {
				// Past the config: the plan fails on the missing checkout.
				require.NotContains(t, errOut.String(), file)
				return
			}
			require.Equal(t, exitUsage, code, errOut.String())
			require.Contains(t, errOut.String(), strings.ReplaceAll(tt.err, "{file}", file))
		})
	}
}

// TestConfigValidatePlanKeys: validate judges the keys only plan reads
// too, so that one file is checked for both commands.
func TestConfigValidatePlanKeys(t *testing.T) {
	tests := []struct {
		name, config, err string
	}{
		{name: "a good output", config: "repo: r\nmetrics: {file: m.om}\noutput: markdown\n"},
		{name: "a bad output", config: "repo: r\nmetrics: {file: m.om}\noutput: yaml\n",
			err: "invalid `--output` \"yaml\": use table, json or markdown\n  (`--output` is output at {file}:3:9)"},
		{name: "an output of the wrong type", config: "repo: r\nmetrics: {file: m.om}\noutput: [json]\n",
			err: ":3:9: output: expected a string, got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, tt.config)
			var out, errOut bytes.Buffer
			code := Main([]string{"config", "validate", "--config", file}, &out, &errOut)
			if tt.err == "" {
				require.Equal(t, exitOK, code, errOut.String())
				return
			}
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut.String(), strings.ReplaceAll(tt.err, "{file}", file))
		})
	}
}

// TestConfigPrintGitURL: an SSH URL is shown as it is, scp-like or not;
// a password in an HTTPS one is not.
func TestConfigPrintGitURL(t *testing.T) {
	tests := []struct{ url, want string }{
		{url: "git@github.com:acme/gitops.git", want: "url: git@github.com:acme/gitops.git"},
		{url: "ssh://git@github.com:22/acme/gitops.git", want: "url: ssh://git@github.com:22/acme/gitops.git"},
		{url: "https://bot:hunter2@git.example/acme/gitops.git", want: "url: https://bot:xxxxx@git.example/acme/gitops.git"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			git := "git: {url: '" + tt.url + "'}\n"
			if scm.IsSSHURL(tt.url) {
				git = "git: {url: '" + tt.url + "', sshKeyFile: /k, knownHostsFile: /kh}\n"
			}
			file := writeConfig(t, "scm: local\nrepo: .\nmetrics: {file: m.om}\n"+git)
			var out, errOut bytes.Buffer
			require.Equal(t, exitOK, Main([]string{"config", "print", "--config", file}, &out, &errOut), errOut.String())
			require.Contains(t, out.String(), tt.want)
		})
	}
}

// TestConfigValidateCheckFiles: with --check-files, validate finds what
// run would find missing only once it ran — a file a setting names that
// is not there, or not a file, and a local repository that is no
// directory — each named with the key and line that set it.
func TestConfigValidateCheckFiles(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("t0ken\n"), 0o600))
	tests := []struct {
		name   string
		config string
		errs   []string
	}{
		{name: "all there", config: "scm: local\nrepo: {dir}\nprometheus: {url: 'http://p:9090', tokenFile: {token}}\n"},
		{name: "a missing token file", config: "scm: local\nrepo: {dir}\nprometheus: {url: 'http://p:9090', tokenFile: {dir}/missing}\n",
			errs: []string{"`--prometheus-token-file` {dir}/missing: no such file or directory", "`--prometheus-token-file` is prometheus.tokenFile at {file}:3:"}},
		{name: "a directory for a file", config: "scm: local\nrepo: {dir}\nmetrics: {file: {dir}}\n",
			errs: []string{"`--metrics-file` {dir}: not a regular file"}},
		{name: "a missing repository and CA", config: "scm: local\nrepo: {dir}/gitops\nprometheus: {url: 'http://p:9090', caFile: /nonexistent/ca.crt}\n",
			errs: []string{"`--repo` {dir}/gitops: not a readable directory", "`--prometheus-ca-file` /nonexistent/ca.crt: no such file or directory"}},
		// The forge's token where no file names it: the variable must
		// hold one here ($GITHUB_TOKEN is blank in these tests).
		{name: "GitHub without a token", config: "scm: github\ngithub: {repo: acme/gitops}\nprometheus: {url: 'http://p:9090'}\n",
			errs: []string{"the GitHub token (`--github-token-file`, or a GitHub App): $GITHUB_TOKEN (`--github-token-env`) is empty or unset here, and no file names it"}},
		{name: "GitHub with its token's variable set", config: "scm: github\ngithub: {repo: acme/gitops, tokenEnv: CHECK_FILES_GH}\nprometheus: {url: 'http://p:9090'}\n"},
		{name: "GitHub with a token file", config: "scm: github\ngithub: {repo: acme/gitops, tokenFile: {token}}\nprometheus: {url: 'http://p:9090'}\n"},
		{name: "GitLab without a token", config: "scm: gitlab\ngitlab: {project: platform/gitops, tokenEnv: CHECK_FILES_NONE}\nprometheus: {url: 'http://p:9090'}\n",
			errs: []string{"the GitLab token (`--gitlab-token-file`): $CHECK_FILES_NONE (`--gitlab-token-env`) is empty or unset here", "`--gitlab-token-env` is gitlab.tokenEnv at {file}:2:"}},
		{name: "a Prometheus token's variable unset", config: "scm: local\nrepo: {dir}\nprometheus: {url: 'http://p:9090', tokenEnv: CHECK_FILES_NONE}\n",
			errs: []string{"the Prometheus bearer token: $CHECK_FILES_NONE (`--prometheus-token-env`) is empty or unset here"}},
	}
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("CHECK_FILES_NONE", "  ")
	t.Setenv("CHECK_FILES_GH", "ghp_x")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, strings.NewReplacer("{dir}", dir, "{token}", token).Replace(tt.config))
			var out, errOut bytes.Buffer
			code := Main([]string{"config", "validate", "--config", file, "--check-files"}, &out, &errOut)
			if tt.errs == nil {
				require.Equal(t, exitOK, code, errOut.String())
				return
			}
			require.Equal(t, exitUsage, code)
			for _, e := range tt.errs {
				require.Contains(t, errOut.String(), strings.NewReplacer("{dir}", dir, "{file}", file).Replace(e))
			}
			// Without the flag, the files are not looked at: the
			// config is judged where it is written, not where it runs.
			out.Reset()
			errOut.Reset()
			require.Equal(t, exitOK, Main([]string{"config", "validate", "--config", file}, &out, &errOut), errOut.String())
		})
	}
}
