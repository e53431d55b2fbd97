package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

// runOptions are run's command line: the run's own options (package
// run), and what only the command reads.
type runOptions struct {
	run.Options
	IO streams

	// Config is the config file that fills in what flags and the
	// environment leave out; effective is the outcome.
	Config    string
	effective *config.Effective

	// Filter narrows the run to some workloads; checked, it becomes
	// Options.Filter.
	Filter filterFlags
	// DetailedExitCode: exit 4 when a pull request is opened or updated.
	DetailedExitCode bool
}

// newCmdRun builds run. runF, when not nil, replaces what run does once
// its settings are read and checked: the seam for tests and for `config`.
func newCmdRun(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *runOptions) error) *cobra.Command {
	return newCmdRunOr(io, logger, runF, func(_ *runOptions, err error) error { return err })
}

// newCmdRunOr is newCmdRun that hands settings run would refuse to
// refused, which may go on: `config print` shows them all the same.
func newCmdRunOr(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *runOptions) error, refused func(*runOptions, error) error) *cobra.Command {
	opts := &runOptions{IO: io}
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
				return refused(opts, explain(eff, err))
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
			if pr != nil {
				opts.Progress = pr
			}
			opts.Out, opts.Err, opts.Terminal = io.Out, io.Err, isTerminal(io.Out)
			opts.Now, opts.Version = time.Now, toolVersion()
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
	registerForges(f, &opts.Options)
	f.StringArrayVar(&opts.PolicyPaths, "policies", nil, "read policies only from this `path` in the repository (repeatable)")
	f.StringVar(&opts.GroupBy, "group-by", "", "one pull request per workload, namespace, policy or cluster, for every workload (default: each strategy's gitops.grouping, else workload)")
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
	registerLive(f, &opts.Live)
	registerObserve(f, &opts.Observe)
	f.BoolVar(&opts.Dashboard, "dashboard", true, "keep one issue (with --scm local, a Markdown file beside the pull requests) that sums the run up, and act on the boxes people tick in it")
	parseUsage = source.AddFlags(cmd.Flags(), &opts.Usage)
	return cmd
}

// check checks the settings once flags, environment and config file are
// read, in the order a person reads them: the forge and git, the usage
// flags (parseUsage parses and checks them), the filter, then the steps.
// The four are independent: a mistake in each is told at once.
func (o *runOptions) check(parseUsage func() error) error {
	return everyCheck(o.CheckForge, parseUsage, func() error {
		var err error
		o.Options.Filter, err = o.Filter.filter()
		return err
	}, o.CheckSteps)
}

// everyCheck runs checks that do not depend on one another and tells all
// their mistakes at once, as one FlagError, so that explain says where
// each flag named got its value. An error of another kind is told alone.
func everyCheck(checks ...func() error) error {
	var errs []error
	for _, check := range checks {
		err := check()
		if err == nil {
			continue
		}
		var fe *config.FlagError
		if !errors.As(err, &fe) {
			return err
		}
		errs = append(errs, fe.Err)
	}
	if len(errs) == 0 {
		return nil
	}
	return &config.FlagError{Err: errors.Join(errs...)}
}

// runRun runs, and maps how the run went to what Main makes an exit
// code of.
func runRun(ctx context.Context, opts *runOptions) error {
	res, err := run.Run(ctx, opts.Options)
	switch {
	case res.Outcome == run.Failed:
		return err
	case res.Outcome == run.Problems:
		return errProblems
	case opts.DetailedExitCode && res.Outcome == run.ChangesProposed:
		return errChanges
	}
	// The run went well; writing its summary may not have.
	return err
}
