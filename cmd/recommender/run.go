package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/fastpath"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	runsummary "github.com/gpu-rightsizing/recommender/internal/summary"
)

type runOptions struct {
	IO     streams
	Logger *slog.Logger

	// Config is the config file that fills in what flags and the
	// environment leave out; effective is the outcome.
	Config    string
	effective *config.Effective

	Repo        string
	Base        string
	SCM         string
	GitHub      githubFlags
	GitLab      gitlabFlags
	Git         gitFlags
	Usage       source.Options
	PolicyPaths []string
	GroupBy     string
	DryRun      bool

	DefaultNamespace string
	Filter           filterFlags
	filter           plan.Filter
	AuthorName       string
	AuthorEmail      string
	SigningKeyFile   string
	DeclinePercent   int
	MaxOpen, MaxNew  int
	Labels           []string
	Reviewers        []string
	Assignees        []string
	Draft            bool
	BranchPrefix     string
	// DetailedExitCode: exit 4 when a pull request is opened or updated.
	DetailedExitCode bool
	Live             liveFlags
	Observe          observeFlags
	Dashboard        bool
	// FleetFindings is where the fleet report reads its placement for the
	// findings said in pull requests: off, cluster or metrics.
	FleetFindings string

	Now func() time.Time
	// progress draws the run's stages on a terminal; nil: off.
	progress *progress
}

// newCmdRun builds run. runF, when not nil, replaces what run does once
// its settings are read and checked: the seam for tests and for `config`.
func newCmdRun(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *runOptions) error) *cobra.Command {
	opts := &runOptions{IO: io, Now: time.Now}
	var parseUsage func() error
	cmd := &cobra.Command{
		Use:   "run (--scm local --repo DIR | --scm github --github-repo OWNER/NAME | --scm gitlab --gitlab-project PATH) (--metrics-file FILE | --prometheus-url URL)",
		Short: "Plan on the base branch, then open or update a pull request per change set",
		Long: "run clones the base branch, plans on it (policies come from the base branch only), and\n" +
			"publishes each change set as one commit on a branch of its own, with its pull request opened,\n" +
			"updated, closed when the workload fits now, or left declined when a person closed it.",
		Example: "  recommender run --scm local --repo ./gitops --base main --metrics-file usage.om\n" +
			"  recommender run --scm local --repo ./gitops --metrics-file usage.om --dry-run\n" +
			"  GITHUB_TOKEN=... recommender run --scm github --github-repo acme/gitops --prometheus-url http://prometheus:9090\n" +
			"  recommender run --scm gitlab --gitlab-url https://gitlab.example --gitlab-project platform/gitops \\\n" +
			"      --gitlab-token-file /var/run/secrets/gitlab/token --prometheus-url http://prometheus:9090",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eff, err := config.Load(cmd.Flags(), &opts.Config, os.LookupEnv)
			if err != nil {
				return err
			}
			opts.effective = eff
			if err := opts.check(parseUsage); err != nil {
				return explain(eff, err)
			}
			// A run in a cluster logs its summary line: run logs at info
			// unless told otherwise.
			if eff.Sources["log-level"].Kind == "default" {
				if err := cmd.Flags().Set("log-level", "info"); err != nil {
					return err
				}
			}
			log, err := logger()
			if err != nil {
				return err
			}
			pr := terminalProgress(io, cmd)
			opts.Logger = pr.watch(&opts.Usage, log)
			opts.progress = pr
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	config.AddFlag(cmd.Flags(), &opts.Config)
	f.StringVar(&opts.Repo, "repo", "", "the GitOps repository's local path (with --scm local)")
	f.StringVar(&opts.Base, "base", "main", "base `branch` the pull requests go into; policies are read from it")
	f.StringVar(&opts.SCM, "scm", "local", "where pull requests live: local (files beside the repository), github or gitlab")
	opts.GitHub.register(f)
	opts.GitLab.register(f)
	opts.Git.register(f)
	f.StringArrayVar(&opts.PolicyPaths, "policies", nil, "read policies only from this `path` in the repository (repeatable)")
	f.StringVar(&opts.GroupBy, "group-by", "", "one pull request per workload, namespace or policy, for every workload (default: each strategy's gitops.grouping, else workload)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "publish nothing; print what would be done")
	f.StringVar(&opts.DefaultNamespace, "default-namespace", "default", "namespace of manifests that name none")
	opts.Filter.register(f)
	f.StringVar(&opts.AuthorName, "author-name", "gpu-rightsizing", "commit author `name`")
	f.StringVar(&opts.SigningKeyFile, "signing-key-file", "", "sign commits with the armored OpenPGP private key in this `file` (no passphrase)")
	f.StringVar(&opts.AuthorEmail, "author-email", "gpu-rightsizing@users.noreply.github.com", "commit author `email`")
	f.IntVar(&opts.DeclinePercent, "decline-percent", 10, "a declined pull request comes back when its recommendation moves by more than this `percent`")
	f.IntVar(&opts.MaxOpen, "max-open", 0, "open at most this many pull requests in all (0: no cap)")
	f.IntVar(&opts.MaxNew, "max-new", 0, "open at most this many new pull requests per run (0: no cap)")
	f.StringArrayVar(&opts.Labels, "label", nil, "add this `label` to every pull request (repeatable)")
	f.StringArrayVar(&opts.Reviewers, "reviewer", nil, "ask this `user` to review (repeatable)")
	f.StringArrayVar(&opts.Assignees, "assignee", nil, "assign this `user` (repeatable)")
	f.BoolVar(&opts.Draft, "draft", false, "open pull requests as drafts")
	f.StringVar(&opts.FleetFindings, "fleet-findings", "off", "say the fleet report's findings (rollout room, noisy neighbours) in pull requests, reading the placement from this `source`: cluster, metrics (kube-state-metrics) or off")
	f.StringVar(&opts.BranchPrefix, "branch-prefix", "gpu-rightsizing/", "`prefix` of every branch the tool owns")
	f.BoolVar(&opts.DetailedExitCode, "detailed-exit-code", false, "exit 4 when a pull request is opened or updated, 0 when there is nothing to do")
	opts.Live.register(f)
	opts.Observe.register(f)
	f.BoolVar(&opts.Dashboard, "dashboard", true, "keep one issue (with --scm local, a Markdown file beside the pull requests) that sums the run up, and act on the boxes people tick in it")
	parseUsage = source.AddFlags(cmd.Flags(), &opts.Usage)
	return cmd
}

// check checks the settings once flags, environment and config file are
// read; parseUsage parses and checks the usage flags.
func (o *runOptions) check(parseUsage func() error) error {
	// Values wrong whatever the forge: a config holding one is wrong
	// before it is used.
	if err := o.GitHub.checkValues(); err != nil {
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
		if err := o.GitHub.check(); err != nil {
			return err
		}
	case "gitlab":
		if err := o.GitLab.check(); err != nil {
			return err
		}
	default:
		return config.FlagErrorf("invalid `--scm` %q: use %s", o.SCM, oneOf(scmNames()))
	}
	if err := o.Git.check(); err != nil {
		return err
	}
	if err := parseUsage(); err != nil {
		return err
	}
	var err error
	if o.filter, err = o.Filter.filter(); err != nil {
		return err
	}
	if !slices.Contains(groupings(), o.GroupBy) {
		return config.FlagErrorf("invalid `--group-by` %q: use %s", o.GroupBy, oneOf(groupings()))
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
	if err := o.Observe.check(); err != nil {
		return err
	}
	switch o.FleetFindings {
	case "off", "cluster", "metrics":
	default:
		return config.FlagErrorf("invalid `--fleet-findings` %q: use off, cluster or metrics", o.FleetFindings)
	}
	return o.Live.check()
}

func runRun(ctx context.Context, opts *runOptions) (err error) {
	// One line per run says how it went, for whoever reads a CronJob's
	// logs, and the run's summary goes where --output and the observe
	// flags say; p, rep and lr fill them in as far as the run got.
	var p *plan.Plan
	var rep *publish.Report
	var lr *fastpath.Stage
	start := time.Now()
	defer func() { err = opts.ended(ctx, start, p, rep, lr, err) }()
	table := opts.Observe.table(opts.IO)
	forge, url, auth, err := opts.forge(ctx)
	if err != nil {
		return err
	}
	url, auth = opts.Git.remote(url, auth)
	work, err := os.MkdirTemp("", "recommender-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	g, err := scm.Clone(ctx, url, opts.Base, filepath.Join(work, "checkout"), auth)
	if err != nil {
		return err
	}
	var source string
	p, source, err = opts.Usage.Plan(ctx, plan.Options{Repo: g.Dir(), PolicyPaths: opts.PolicyPaths, DefaultNamespace: opts.DefaultNamespace,
		Filter: opts.filter},
		opts.Logger, opts.Now)
	if err != nil {
		return err
	}
	opts.Logger.Info("plan ready", "summary", p.Summary())
	findings := opts.fleetFindings(ctx, g.Dir(), p)
	lr, err = opts.Live.prepare(ctx, p, opts.DryRun, opts.Now)
	if err != nil {
		return err
	}
	author := scm.Signature{Name: opts.AuthorName, Email: opts.AuthorEmail}
	if opts.SigningKeyFile != "" {
		if author.Key, err = scm.ReadSigningKey(opts.SigningKeyFile); err != nil {
			return err
		}
	}
	dash := opts.readDashboard(ctx, forge)
	rep, err = publish.Run(ctx, opts.progress.git(g), forge, p, publish.Options{
		Base: opts.Base, BranchPrefix: opts.BranchPrefix, Grouping: plan.Grouping(opts.GroupBy),
		Author:         author,
		DeclinePercent: opts.DeclinePercent, MaxOpen: opts.MaxOpen, MaxNew: opts.MaxNew,
		Labels: opts.Labels, Reviewers: opts.Reviewers, Assignees: opts.Assignees, Draft: opts.Draft,
		Conventional: publish.Conventional(g.Message()), Source: source, Matcher: opts.Usage.Matcher(), Version: toolVersion(),
		Warnings: lr.Warnings(), Findings: findings, Asked: dash.Asked(),
		DryRun: opts.DryRun, Now: func() time.Time { return p.At }, Logger: opts.Logger,
	})
	opts.progress.Clear()
	if err != nil {
		return err
	}
	if err := rep.WriteTable(table); err != nil {
		return err
	}
	liveFailed, err := lr.Finish(ctx, forge, rep, plan.Grouping(opts.GroupBy), table)
	if err != nil {
		return err
	}
	dashFailed := opts.writeDashboard(ctx, dash, p, rep, findings)
	if rep.Failed() || liveFailed || dashFailed || len(p.Problems) > 0 {
		for _, pr := range p.Problems {
			fmt.Fprintf(opts.IO.Err, "problem: %s\n", plan.Printable(pr.String()))
		}
		return errProblems
	}
	if opts.DetailedExitCode && rep.Count(publish.Opened)+rep.Count(publish.Updated) > 0 {
		return errChanges
	}
	return nil
}

// ended tells how a run that began at start went, once it ended with
// err: the log's summary line, then the run's summary where --output and
// the observe flags say. It returns err, or else a failure to write
// stdout.
func (o *runOptions) ended(ctx context.Context, start time.Time, p *plan.Plan, rep *publish.Report, lr *fastpath.Stage, err error) error {
	end := time.Now()
	outcome := runOutcome(err, rep)
	logSummary(o.Logger, outcome, p, rep, lr.Summary(), o.DryRun, end.Sub(start), err)
	s := runsummary.New(runsummary.Run{Outcome: outcome, Err: err, DryRun: o.DryRun, Started: start, Duration: end.Sub(start),
		Plan: p, Report: rep, LiveOn: lr != nil, Live: lr.Results()})
	if werr := o.Observe.finish(ctx, o.IO.Out, o.Logger, o.Live.Kubeconfig, s, p, end); werr != nil && err == nil {
		return werr
	}
	return err
}

// logSummary logs the one line that sums a run up: its outcome, what the
// plan decided, what happened to the pull requests, how long it took.
func logSummary(log *slog.Logger, o runsummary.Outcome, p *plan.Plan, rep *publish.Report, live []any, dryRun bool, took time.Duration, err error) {
	outcome := map[runsummary.Outcome]string{runsummary.NothingToDo: "nothing to do", runsummary.ChangesProposed: "changes proposed",
		runsummary.Problems: "problems", runsummary.Failed: "failed"}[o]
	attrs := []any{"outcome", outcome, "dryRun", dryRun, "duration", took.Round(time.Millisecond).String()}
	if p != nil {
		attrs = append(attrs, slog.Group("decisions", p.DecisionCounts()...), "problems", len(p.Problems))
	}
	if rep != nil {
		attrs = append(attrs, slog.Group("pullRequests", rep.Summary()...))
	}
	if live != nil {
		attrs = append(attrs, slog.Group("live", live...))
	}
	level := slog.LevelInfo
	if outcome == "failed" || outcome == "problems" {
		level = slog.LevelError
		if outcome == "failed" {
			attrs = append(attrs, "error", err.Error())
		}
	}
	log.Log(context.Background(), level, "run finished", attrs...)
}

// forge opens where the pull requests live, and says where to clone from
// and with which credentials.
func (o *runOptions) forge(ctx context.Context) (publish.Forge, string, scm.Auth, error) {
	switch o.SCM {
	case "gitlab":
		cfg, err := o.GitLab.config()
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		gl, err := scm.NewGitLab(ctx, cfg)
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		return gl, gl.CloneURL(), gl.GitAuth(), nil
	case "github":
		cfg, err := o.GitHub.config()
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		cfg.Logger = o.Logger
		gh, err := scm.NewGitHub(ctx, cfg)
		if err != nil {
			return nil, "", scm.Auth{}, err
		}
		return gh, gh.CloneURL(), gh.GitAuth(), nil
	}
	repo, err := filepath.Abs(o.Repo)
	if err != nil {
		return nil, "", scm.Auth{}, err
	}
	gitDir := filepath.Join(repo, ".git")
	if st, err := os.Stat(gitDir); err != nil || !st.IsDir() {
		gitDir = repo // a bare repository
	}
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return nil, "", scm.Auth{}, fmt.Errorf("repository %s: not a git repository", o.Repo)
	}
	local, err := scm.NewLocal(filepath.Join(gitDir, "gpu-rightsizing", "pulls"))
	if err != nil {
		return nil, "", scm.Auth{}, err
	}
	return local, repo, scm.Auth{}, nil
}
