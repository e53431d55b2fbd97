package publish_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// TestPolicyLabelsAndReviewersReachThePullRequest: the labels, reviewers
// and grouping a strategy of the project's API group sets (spec.gitops)
// are those of the pull requests GitHub gets for the workloads it governs,
// joined with the run's own; the run's --group-by wins when set.
func TestPolicyLabelsAndReviewersReachThePullRequest(t *testing.T) {
	files := quickstartFiles(t)
	const file = "policies/kai-gpu-sharing.yaml"
	text := files[file]
	for _, e := range [][2]string{
		{"apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterAutomationStrategy", "apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ClusterAutomationStrategy"},
		{"  podEviction:\n    enabled: true\n", "  podEviction:\n    enabled: true\n  gitops:\n    grouping: namespace\n    labels: [team-ml, gpu]\n    reviewers: [bob, alice]\n"},
	} {
		require.Contains(t, text, e[0])
		text = strings.Replace(text, e[0], e[1], 1)
	}
	files[file] = text
	src, err := openmetrics.OpenRecorded(filepath.Join(quickstart, "metrics.om"))
	require.NoError(t, err)
	at := src.Span().Newest

	tests := []struct {
		name     string
		by       plan.Grouping
		branches []string
	}{
		{name: "the strategy groups by namespace", by: "", branches: []string{"gpu-rightsizing/by_namespace/inference"}},
		{name: "the run's grouping wins", by: plan.ByWorkload, branches: []string{
			"gpu-rightsizing/inference/asr-whisper", "gpu-rightsizing/inference/chat",
			"gpu-rightsizing/inference/summarize", "gpu-rightsizing/inference/translate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			git := testenv.NewGitServer(t)
			git.NewRepo(t, "acme/gitops", files)
			fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
			forge, err := scm.NewGitHub(ctx, scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: fake.BaseURL(), Token: fake.Token,
				Sleep: func(context.Context, time.Duration) error { return nil }})
			require.NoError(t, err)
			g, err := scm.Clone(ctx, forge.CloneURL(), "main", filepath.Join(t.TempDir(), "checkout"), forge.GitAuth())
			require.NoError(t, err)
			p, err := plan.Make(ctx, plan.Options{Repo: g.Dir(), At: at, Source: src})
			require.NoError(t, err)
			require.Empty(t, p.Problems)
			rep, err := publish.Run(ctx, g, forge, p, publish.Options{Base: "main", Grouping: tt.by,
				Labels: []string{"gpu", "finops"}, Reviewers: []string{"alice", "carol"}, Now: func() time.Time { return at }})
			require.NoError(t, err)
			require.False(t, rep.Failed(), "%v", rep.Results)

			var branches []string
			for _, pr := range fake.Pulls() {
				branches = append(branches, pr.Head)
				// The run's and the strategy's, each once, sorted, with the
				// tool's own.
				require.Subset(t, pr.Labels, []string{"finops", "gpu", "gpu-rightsizing", "team-ml"}, pr.Head)
				require.True(t, slices.IsSorted(pr.Labels), "%s: %v", pr.Head, pr.Labels)
				require.Equal(t, len(pr.Labels), len(slices.Compact(slices.Clone(pr.Labels))), "%s: %v", pr.Head, pr.Labels)
				require.Equal(t, []string{"alice", "bob", "carol"}, pr.Reviewers, pr.Head)
			}
			slices.Sort(branches)
			require.Equal(t, tt.branches, branches, fmt.Sprint(rep.Results))
		})
	}
}
