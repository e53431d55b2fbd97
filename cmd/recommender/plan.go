package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

type planOptions struct {
	IO     streams
	Logger *slog.Logger

	// Config is the config file that fills in what flags and the
	// environment leave out (the one run reads: plan takes the keys it
	// shares with run); effective is the outcome.
	Config    string
	effective *config.Effective

	Repo             string
	Usage            source.Options
	Output           string
	PolicyPaths      []string
	DefaultNamespace string
	Filter           filterFlags
	filter           plan.Filter
	// DetailedExitCode: exit 4 when the plan edits a file.
	DetailedExitCode bool
	// Write applies the planned edits to the working tree.
	Write bool
	// GroupBy is run's grouping of changes into pull requests, which the
	// plan shows.
	GroupBy string

	// Now is the clock, for the default evaluation time.
	Now func() time.Time
}

func newCmdPlan(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *planOptions) error) *cobra.Command {
	opts := &planOptions{IO: io, Now: time.Now}
	var parseUsage func() error
	cmd := &cobra.Command{
		Use:   "plan --repo DIR (--metrics-file FILE | --prometheus-url URL)",
		Short: "Print the decisions, reasons and diffs for a repository",
		Long: "Print the decisions, reasons and diffs for a repository. It writes nothing unless --write is\n" +
			"given: then the printed diffs are applied to the files of the working tree (no commit, no push),\n" +
			"unless a file changed on disk since the plan read it: then it is reported and nothing is written (exit 3).\n\n" +
			"Usage comes from a recorded file (--metrics-file) or from a server with Prometheus' HTTP API\n" +
			"(--prometheus-url: Prometheus, Thanos, Mimir, VictoriaMetrics). Secrets are read from files or\n" +
			"the environment, never given on the command line.\n\n" +
			"--config reads the config file run reads (docs/configure.md), with the same precedence: flag,\n" +
			"RECOMMENDER_* variable, file, default. plan takes the keys it shares with run (repo, policies,\n" +
			"metrics, prometheus, output, ...) and leaves the ones only run uses (pullRequests, github, ...).",
		Example: "  recommender plan --repo examples/quickstart --metrics-file examples/quickstart/metrics.om\n" +
			"  recommender plan --repo . --metrics-file usage.om --at 2026-11-30T12:00:00Z --output json\n" +
			"  recommender plan --repo . --metrics-file usage.om --write && git diff\n" +
			"  recommender plan --repo . --prometheus-url http://prometheus.monitoring:9090\n" +
			"  recommender plan --repo . --prometheus-url https://mimir.example/prometheus \\\n" +
			"      --prometheus-header 'X-Scope-OrgID: gpu' --prometheus-token-file /var/run/secrets/token --cluster-label cluster=prod-eu",
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
			log, err := logger()
			if err != nil {
				return err
			}
			pr := terminalProgress(io, cmd)
			opts.Logger = pr.watch(&opts.Usage, log)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPlan(cmd.Context(), opts)
		},
	}
	config.AddFlag(cmd.Flags(), &opts.Config)
	f := cmd.Flags()
	f.StringVar(&opts.Repo, "repo", "", "repository checkout to read policies and manifests from")
	f.StringVarP(&opts.Output, "output", "o", "table", "output `format`: table, json or markdown (for a CI job's summary)")
	f.StringArrayVar(&opts.PolicyPaths, "policies", nil, "read policies only from this `path` in the repository (repeatable)")
	f.StringVar(&opts.DefaultNamespace, "default-namespace", "default", "namespace of manifests that name none")
	opts.Filter.register(f)
	f.BoolVar(&opts.DetailedExitCode, "detailed-exit-code", false, "exit 4 when the plan proposes changes, 0 when there is nothing to do")
	f.BoolVar(&opts.Write, "write", false, "apply the planned edits to the working tree (no commit, no push)")
	f.StringVar(&opts.GroupBy, "group-by", "", "show the pull requests run opens grouped by workload, namespace, policy or cluster (default: each strategy's gitops.grouping, else workload)")
	parseUsage = source.AddFlags(cmd.Flags(), &opts.Usage)
	return cmd
}

// check checks the settings once flags, environment and config file are
// read; parseUsage parses and checks the usage flags.
func (o *planOptions) check(parseUsage func() error) error {
	err := everyCheck(func() error {
		if o.Repo == "" {
			return config.FlagErrorf("`--repo` is required")
		}
		return nil
	}, parseUsage, func() error {
		var err error
		o.filter, err = o.Filter.filter()
		return err
	}, func() error {
		if !slices.Contains(run.Groupings(), o.GroupBy) {
			return config.FlagErrorf("invalid `--group-by` %q: use %s", o.GroupBy, config.OneOf(run.Groupings()))
		}
		return nil
	}, func() error { return checkOutput(o.Output) })
	o.Output = cmp.Or(o.Output, "table")
	return err
}

// checkOutput checks a format of --output. The config key is run's too,
// where "" is its default (the table on a terminal, else nothing), and
// `config print` writes it so: for plan, "" is the table.
func checkOutput(format string) error {
	if format == "" || slices.Contains(outputFormats(), format) {
		return nil
	}
	return config.FlagErrorf("invalid `--output` %q: use %s", format, config.OneOf(outputFormats()))
}

func runPlan(ctx context.Context, opts *planOptions) error {
	if st, err := os.Stat(opts.Repo); err != nil || !st.IsDir() {
		return fmt.Errorf("repository %s: not a readable directory", opts.Repo)
	}
	p, _, err := opts.Usage.Plan(ctx, plan.Options{Repo: opts.Repo, PolicyPaths: opts.PolicyPaths, DefaultNamespace: opts.DefaultNamespace,
		Filter: opts.filter, Grouping: plan.Grouping(opts.GroupBy), DropUsage: true},
		opts.Logger, opts.Now)
	if err != nil {
		return err
	}
	opts.Logger.Info("plan ready", "summary", p.Summary())
	switch opts.Output {
	case "json":
		err = p.WriteJSON(opts.IO.Out)
	case "markdown":
		err = p.WriteMarkdown(opts.IO.Out)
	default:
		err = p.WriteTable(opts.IO.Out, columns(opts.IO.Out))
	}
	if err != nil {
		return err
	}
	// After the plan, so that they are the last thing a person sees.
	for _, w := range p.Unselected() {
		fmt.Fprintf(opts.IO.Err, "warning: %s\n", plan.Printable(w))
	}
	unwritten := 0
	if opts.Write {
		unwritten = writePlan(opts, p)
	}
	if len(p.Problems) > 0 || unwritten > 0 {
		return errProblems
	}
	if opts.DetailedExitCode && len(p.Files) > 0 {
		return errChanges
	}
	return nil
}

// writePlan writes the files of the printed plan, after printing it, so
// that what is written is what was shown. Every file is checked before
// any is replaced (Plan.WriteFiles): if one changed on disk since the
// plan read it, nothing is written. It reports on stderr (stdout holds
// the plan, the same as without --write) and returns how many files were
// not written.
func writePlan(opts *planOptions, p *plan.Plan) int {
	files := p.Files
	errs, written := p.WriteFiles(opts.Repo)
	if !written {
		for _, err := range errs {
			if err != nil {
				fmt.Fprintf(opts.IO.Err, "not written: %s\n", plan.Printable(err.Error()))
			}
		}
		fmt.Fprintf(opts.IO.Err, "0 of %d files written: run the plan again on the files as they are now\n", len(files))
		return len(files)
	}
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			fmt.Fprintf(opts.IO.Err, "not written: %s\n", plan.Printable(err.Error()))
			continue
		}
		opts.Logger.Info("file written", "path", files[i].Path, "changes", len(files[i].Changes))
	}
	fmt.Fprintf(opts.IO.Err, "%d of %d files written\n", len(files)-failed, len(files))
	return failed
}
