package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/policy"
)

// gitopsRepo is a copy of the quickstart whose strategy is in the
// project's API group, with these spec.gitops settings (YAML under it).
func gitopsRepo(t *testing.T, gitops string) string {
	t.Helper()
	const file = "policies/kai-gpu-sharing.yaml"
	dir := quickstartCopy(t, map[string][2]string{file: {
		"apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterAutomationStrategy",
		"apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ClusterAutomationStrategy",
	}})
	path := filepath.Join(dir, file)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	const end = "  podEviction:\n    enabled: true\n"
	require.Contains(t, string(b), end)
	b = []byte(strings.Replace(string(b), end, end+"  gitops:\n"+gitops, 1))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return dir
}

// TestChangeSetsFollowTheStrategysGitops: a strategy's spec.gitops
// grouping groups its workloads when the run does not say how, the run's
// grouping wins when it does, and every change set carries the labels and
// reviewers of the strategies governing its workloads.
func TestChangeSetsFollowTheStrategysGitops(t *testing.T) {
	ctx := context.Background()
	dir := gitopsRepo(t, "    grouping: namespace\n    labels: [team-ml, gpu]\n    reviewers: [bob, alice, bob]\n")
	p, err := plan.Make(ctx, plan.Options{Repo: dir, At: at, Source: recorded(t)})
	require.NoError(t, err)
	require.Empty(t, p.Problems)

	tests := []struct {
		name string
		by   plan.Grouping
		keys []string
		want plan.Grouping
	}{
		{name: "the strategy's grouping when the run sets none", by: "", keys: []string{"inference"}, want: plan.ByNamespace},
		{name: "the run's grouping wins", by: plan.ByWorkload, want: plan.ByWorkload, keys: []string{
			"inference/Deployment/asr-whisper", "inference/Deployment/chat", "inference/Deployment/summarize", "inference/Deployment/translate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sets, err := p.ChangeSets(tt.by)
			require.NoError(t, err)
			var keys []string
			for _, cs := range sets {
				keys = append(keys, cs.Key)
				require.Equal(t, tt.want, cs.Grouping, cs.Key)
				require.Equal(t, []string{"gpu", "team-ml"}, cs.Labels, cs.Key)
				require.Equal(t, []string{"alice", "bob"}, cs.Reviewers, cs.Key)
			}
			require.Equal(t, tt.keys, keys)
		})
	}
}

// TestChangeSetsMixGroupings: workloads of strategies that group
// differently get the change sets each asks for, and a change set's labels
// and reviewers are the union of its workloads' strategies'.
func TestChangeSetsMixGroupings(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	// Two teams' strategies, as Govern would have carried them.
	team := map[string]policy.PullRequest{
		"asr-whisper": {Grouping: "namespace", Labels: []string{"team-a"}, Reviewers: []string{"ana"}},
		"chat":        {Grouping: "namespace", Labels: []string{"shared", "team-b"}, Reviewers: []string{"ben", "ana"}},
		"summarize":   {Labels: []string{"team-c"}},
	}
	for i, d := range p.Decisions {
		p.Decisions[i].PullRequest = team[d.Workload.Ref.Name]
	}
	sets, err := p.ChangeSets("")
	require.NoError(t, err)
	type set struct {
		Key               string
		By                plan.Grouping
		Labels, Reviewers []string
	}
	var got []set
	for _, cs := range sets {
		got = append(got, set{cs.Key, cs.Grouping, cs.Labels, cs.Reviewers})
	}
	require.Equal(t, []set{
		{"inference", plan.ByNamespace, []string{"shared", "team-a", "team-b"}, []string{"ana", "ben"}},
		{"inference/Deployment/summarize", plan.ByWorkload, []string{"team-c"}, nil},
		{"inference/Deployment/translate", plan.ByWorkload, nil, nil},
	}, got)
}

func TestUnion(t *testing.T) {
	tests := []struct {
		name string
		a, b []string
		want []string
	}{
		{name: "none", want: nil},
		{name: "the run's only", a: []string{"gpu"}, want: []string{"gpu"}},
		{name: "the policy's only", b: []string{"team-ml", "gpu"}, want: []string{"gpu", "team-ml"}},
		{name: "both, sorted, each once", a: []string{"zed", "gpu"}, b: []string{"gpu", "alpha", "zed"}, want: []string{"alpha", "gpu", "zed"}},
		{name: "repeats within one", a: []string{"x", "x"}, want: []string{"x"}},
		{name: "empty names dropped", a: []string{""}, b: []string{"", "y"}, want: []string{"y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := append([]string(nil), tt.a...)
			require.Equal(t, tt.want, plan.Union(tt.a, tt.b))
			require.Equal(t, a, tt.a, "its arguments are left as they were")
		})
	}
}
