package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/clustermap"
)

// newCmdClusters is `clusters suggest`: a ClusterMap drafted from the
// checkout's Flux and Argo CD objects.
func newCmdClusters(io streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clusters <command>",
		Short: "Help write the map of the clusters a repository deploys",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var repo string
	suggest := &cobra.Command{
		Use:   "suggest [--repo DIR]",
		Short: "Print a ClusterMap drafted from the repository's Flux Kustomizations and Argo CD Applications",
		Long: "Print a ClusterMap for what the checkout says plainly: Flux Kustomizations in clusters/<name>/\n" +
			"with a literal spec.path, and Argo CD Applications by destination and source path.\n" +
			"What it cannot resolve goes to stderr, each at its file and line: ApplicationSets,\n" +
			"${...} substitutions, artifacts built outside the checkout, paths outside it.\n\n" +
			"It is help, not truth: check the label and each cluster's labelValue, then commit the map.\n" +
			"It exits 3 when nothing could be resolved, 0 otherwise.",
		Example: "  recommender clusters suggest --repo examples/clusters > clusters.yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClustersSuggest(cmd.Context(), io, repo)
		},
	}
	// Run at the repository's root, like policy validate.
	suggest.Flags().StringVar(&repo, "repo", ".", "repository checkout to read Flux and Argo CD objects from")
	cmd.AddCommand(suggest)
	return cmd
}

func runClustersSuggest(ctx context.Context, io streams, repo string) error {
	s, err := clustermap.Suggest(ctx, repo)
	if err != nil {
		return err
	}
	for _, e := range s.Unresolved {
		fmt.Fprintf(io.Err, "not resolved: %v\n", e)
	}
	if err := s.WriteYAML(io.Out); err != nil {
		if errors.Is(err, clustermap.ErrNothing) {
			fmt.Fprintf(io.Err, "%v: write the map by hand (docs/clusters.md)\n", err)
			return errProblems
		}
		return err
	}
	return nil
}
