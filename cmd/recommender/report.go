package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/report"
)

type reportOptions struct {
	IO     streams
	Logger *slog.Logger

	Repo             string
	Usage            source.Options
	Output           string
	PolicyPaths      []string
	DefaultNamespace string
	Kubeconfig       string
	Placement        string
	// Filter keeps the recommendations of some workloads only: the others'
	// pods are packed at the share they hold now.
	Filter filterFlags
	filter plan.Filter

	Now func() time.Time
}

func newCmdReport(io streams, logger func() (*slog.Logger, error)) *cobra.Command {
	opts := &reportOptions{IO: io, Now: time.Now}
	var parseUsage func() error
	cmd := &cobra.Command{
		Use:   "report --repo DIR (--metrics-file FILE | --prometheus-url URL) [--kubeconfig FILE]",
		Short: "Print the consolidation report of each GpuConsolidationPolicy",
		Long: "Print the consolidation report of each GpuConsolidationPolicy of a repository (docs/fleet.md): the\n" +
			"pool's nodes and GPU pods, read from the cluster, packed now and at the allocations the plan\n" +
			"recommends, and the under-used nodes that could be drained. It makes the plan as `plan` does,\n" +
			"its filters included (--namespace, --selector, --workload: the other workloads' pods are packed\n" +
			"at the share they hold now, as if only the selected workloads' pull requests merged);\n" +
			"it writes nothing: it gets and lists nodes and pods, and gets replicasets, deployments, statefulsets\n" +
			"and KAI queues (the RBAC in docs/fleet.md). Nothing is evicted or patched.",
		Example: "  recommender report --repo . --metrics-file usage.om --kubeconfig ~/.kube/config\n" +
			"  recommender report --repo . --prometheus-url http://prometheus.monitoring:9090 -o json\n" +
			"  recommender report --repo . --metrics-file usage.om -o markdown >> \"$GITHUB_STEP_SUMMARY\"",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Repo == "" {
				return config.FlagErrorf("`--repo` is required")
			}
			if err := parseUsage(); err != nil {
				return err
			}
			var err error
			if opts.filter, err = opts.Filter.filter(); err != nil {
				return err
			}
			switch opts.Output {
			case "table", "json", "markdown":
			default:
				return config.FlagErrorf("invalid `--output` %q: use table, json or markdown", opts.Output)
			}
			switch {
			case opts.Placement != "cluster" && opts.Placement != "metrics":
				return config.FlagErrorf("invalid `--placement` %q: use cluster or metrics", opts.Placement)
			case opts.Placement == "metrics" && opts.Kubeconfig != "":
				return config.FlagErrorf("`--kubeconfig` reads the cluster: it does not go with `--placement metrics`")
			}
			log, err := logger()
			if err != nil {
				return err
			}
			pr := terminalProgress(io, cmd)
			opts.Logger = pr.watch(&opts.Usage, log)
			return runReport(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Repo, "repo", "", "repository checkout to read policies and manifests from")
	f.StringVarP(&opts.Output, "output", "o", "table", "output `format`: table, json, or markdown (the dashboard's body, as `run` keeps it in an issue)")
	f.StringArrayVar(&opts.PolicyPaths, "policies", nil, "read policies only from this `path` in the repository (repeatable)")
	f.StringVar(&opts.DefaultNamespace, "default-namespace", "default", "namespace of manifests that name none")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig `file` of the cluster to read (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)")
	f.StringVar(&opts.Placement, "placement", "cluster", "where the nodes and pods are read `from`: cluster (the API server) or metrics (kube-state-metrics series of the usage source)")
	opts.Filter.register(f)
	parseUsage = source.AddFlags(cmd.Flags(), &opts.Usage)
	return cmd
}

func runReport(ctx context.Context, opts *reportOptions) error {
	if st, err := os.Stat(opts.Repo); err != nil || !st.IsDir() {
		return fmt.Errorf("repository %s: not a readable directory", opts.Repo)
	}
	ro := report.Options{Repo: opts.Repo, PolicyPaths: opts.PolicyPaths, Clusters: opts.filter.Clusters}
	series, err := opts.Usage.Series(opts.Logger)
	if err != nil {
		return err
	}
	ro.Devices = series
	if opts.Placement == "metrics" {
		ro.Series = series
	} else {
		ro.Cluster.Kubeconfig = opts.Kubeconfig
		if err := ro.Connect(); err != nil {
			return err
		}
	}
	ro.Plan, _, err = opts.Usage.Plan(ctx, plan.Options{Repo: opts.Repo, PolicyPaths: opts.PolicyPaths, DefaultNamespace: opts.DefaultNamespace,
		Filter: opts.filter}, opts.Logger, opts.Now)
	if err != nil {
		return err
	}
	res, err := report.Make(ctx, ro)
	if err != nil {
		return err
	}
	switch opts.Output {
	case "json":
		return res.WriteJSON(opts.IO.Out)
	case "markdown":
		// The dashboard's body, with the consolidation reports and without
		// the pull requests: report does not read the forge.
		return res.WriteMarkdown(opts.IO.Out, ro.Plan)
	}
	return res.WriteText(opts.IO.Out)
}
