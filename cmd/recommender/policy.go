package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

type policyValidateOptions struct {
	IO     streams
	Logger *slog.Logger

	Repo             string
	PolicyPaths      []string
	DefaultNamespace string
	Output           string
}

// newCmdPolicy is `policy validate`. runF, when not nil, replaces what
// validate runs once its flags are parsed: the seam for command-line tests.
func newCmdPolicy(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *policyValidateOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy <command>",
		Short: "Check the policies of a repository",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	opts := &policyValidateOptions{IO: io}
	validate := &cobra.Command{
		Use:   "validate [--repo DIR]",
		Short: "Check the policies of a repository and say which workloads each one selects",
		Long: "Check the policies of a repository, with no usage and no cluster: every problem plan would\n" +
			"report before reading a metric (a policy's file:line:column and field, an unreadable or doubtful\n" +
			"manifest, two policies claiming one workload), then each policy with the workloads its scope\n" +
			"selects, and each workload with the policies that govern it or why none does.\n\n" +
			"It exits 3 when there is a problem, 0 otherwise: the check for a GitOps repository's pull requests\n" +
			"(a pre-commit hook, a CI job; see examples/ci).",
		Example: "  recommender policy validate --repo examples/quickstart\n" +
			"  recommender policy validate --policies policies --output json",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkValidateOutput(opts.Output); err != nil {
				return err
			}
			log, err := logger()
			if err != nil {
				return err
			}
			opts.Logger = log
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPolicyValidate(cmd.Context(), opts)
		},
	}
	f := validate.Flags()
	// A pre-commit hook runs at the repository's root, so the root is the
	// default, unlike plan's, which a CronJob names.
	f.StringVar(&opts.Repo, "repo", ".", "repository checkout to read policies and manifests from")
	f.StringArrayVar(&opts.PolicyPaths, "policies", nil, "read policies only from this `path` in the repository (repeatable)")
	f.StringVar(&opts.DefaultNamespace, "default-namespace", "default", "namespace of manifests that name none")
	f.StringVarP(&opts.Output, "output", "o", "table", "output `format`: table or json")
	cmd.AddCommand(validate)
	return cmd
}

func checkValidateOutput(format string) error {
	switch format {
	case "table", "json":
		return nil
	}
	return config.FlagErrorf("invalid `--output` %q: use table or json", format)
}

func runPolicyValidate(ctx context.Context, opts *policyValidateOptions) error {
	if st, err := os.Stat(opts.Repo); err != nil || !st.IsDir() {
		return fmt.Errorf("repository %s: not a readable directory", opts.Repo)
	}
	v, err := plan.Validate(ctx, plan.Options{Repo: opts.Repo, PolicyPaths: opts.PolicyPaths,
		DefaultNamespace: opts.DefaultNamespace, Logger: opts.Logger})
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		err = v.WriteJSON(opts.IO.Out)
	} else {
		err = v.WriteTable(opts.IO.Out)
	}
	if err != nil {
		return err
	}
	if len(v.Problems) > 0 {
		return errProblems
	}
	return nil
}
