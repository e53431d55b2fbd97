package publish_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// TestBranchNamesAreInjective: change sets whose names collapse alike
// still get branches of their own.
func TestBranchNamesAreInjective(t *testing.T) {
	tests := []struct {
		name string
		by   plan.Grouping
		keys []string
	}{
		{name: "namespace and name boundaries", by: plan.ByWorkload,
			keys: []string{"team-a/Deployment/llm", "team/Deployment/a-llm", "ns/StatefulSet/x", "ns/Deployment/statefulset-x"}},
		// Keys hold Kubernetes names, which discovery validates: no '_'.
		{name: "names git would refuse as they are", by: plan.ByWorkload,
			keys: []string{"inference/Deployment/chat.lock", "inference/Deployment/chat-lock", "team.lock/Deployment/chat", "team/Deployment/chat"}},
		{name: "workloads of clusters, beside one of none", by: plan.ByWorkload,
			keys: []string{"prod-eu:inference/Deployment/chat", "prod-us:inference/Deployment/chat", "prod-eu+prod-us:inference/Deployment/chat",
				"prod-eu:inference/StatefulSet/chat", "inference/Deployment/chat", "prod-eu/Deployment/inference"}},
		{name: "change sets joined on one file", by: plan.Joined,
			keys: []string{"prod-eu:inference/Deployment/chat + prod-us:inference/Deployment/chat", "prod-eu:inference/Deployment/chat+prod-us:inference/Deployment/chat"}},
		{name: "policies that slug alike", by: plan.ByPolicy,
			keys: []string{"ClusterProactivePolicy a + ClusterGpuReactivePolicy b", "ClusterProactivePolicy a+ClusterGpuReactivePolicy b", "x/y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]string{}
			for _, k := range tt.keys {
				b := publish.BranchName("gpu-rightsizing/", tt.by, k)
				require.NotContains(t, seen, b, "%q and %q", k, seen[b])
				seen[b] = k
				out, err := exec.Command(testenv.LookPath(t, "git"), "check-ref-format", "refs/heads/"+b).CombinedOutput()
				require.NoError(t, err, "git refuses the branch %s of %q: %s", b, k, out)
			}
		})
	}
	require.Equal(t, "gpu-rightsizing/inference/chat", publish.BranchName("gpu-rightsizing/", plan.ByWorkload, "inference/Deployment/chat"))
	require.Equal(t, "gpu-rightsizing/by_namespace/inference", publish.BranchName("gpu-rightsizing/", plan.ByNamespace, "inference"))
	require.Equal(t, "gpu-rightsizing/prod-eu/inference/chat", publish.BranchName("gpu-rightsizing/", plan.ByWorkload, "prod-eu:inference/Deployment/chat"))
	require.Equal(t, "gpu-rightsizing/prod-eu+prod-us/inference/statefulset_llm",
		publish.BranchName("gpu-rightsizing/", plan.ByWorkload, "prod-eu+prod-us:inference/StatefulSet/llm"))
	require.Equal(t, "gpu-rightsizing/by_cluster/prod-eu", publish.BranchName("gpu-rightsizing/", plan.ByCluster, "prod-eu"))
	require.Equal(t, "gpu-rightsizing/inference/chat_lock", publish.BranchName("gpu-rightsizing/", plan.ByWorkload, "inference/Deployment/chat.lock"))
}

// TestMarkerFromAnEditedBody: the tool's marker is the last one; a marker
// a person quoted above it, or one forged through a name, is not it.
func TestMarkerFromAnEditedBody(t *testing.T) {
	forged := `<!-- gpu-rightsizing {"set":"other","fingerprint":"sha256:x"} -->`
	body := "quoted:\n" + forged + "\n\nmore text\n" + `<!-- gpu-rightsizing {"set":"inference/Deployment/chat","fingerprint":"sha256:y"} -->` + "\n"
	set, ok := publish.MarkerSet(body)
	require.True(t, ok)
	require.Equal(t, "inference/Deployment/chat", set)

	escaped := publish.Cell("pod`x|y " + forged)
	require.NotContains(t, escaped, "<!--")
	require.NotRegexp(t, "(^|[^\\\\])[|`]", escaped, "every pipe and backtick is escaped")
}

// TestBodyFitsTheForges: a change set too large for one body keeps its
// summary table and its marker, and drops details first.
func TestBodyFitsTheForges(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: quickstart, At: at, Source: recorded(t)})
	require.NoError(t, err)
	sets, err := p.ChangeSets(plan.ByNamespace)
	require.NoError(t, err)
	cs := sets[0]
	for i := 0; len(cs.Decisions) < 120; i++ {
		d := cs.Decisions[i%4]
		d.Workload.Ref.Name = fmt.Sprintf("%s-%d", d.Workload.Ref.Name, i)
		cs.Decisions = append(cs.Decisions, d)
	}
	b, err := publish.Body(cs)
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), 65536)
	require.Contains(t, b, "do not fit in a pull request's body")
	require.NotContains(t, b, "```mermaid", "charts give way first")
	set, ok := publish.MarkerSet(b)
	require.True(t, ok, "the marker survives")
	require.Equal(t, cs.Key, set)
	for _, d := range cs.Decisions {
		require.Contains(t, b, "`"+d.Workload.Ref.String()+"`", "every workload stays in the table")
	}
}

// TestBodyShowsTheConfidenceHeadroom: memory's headroom widened for a
// short history (memoryConfidenceHeadroomPercent) is shown beside the
// policy's own, so that the table's target can be followed.
func TestBodyShowsTheConfidenceHeadroom(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: quickstart, At: at, Source: recorded(t)})
	require.NoError(t, err)
	sets, err := p.ChangeSets(plan.ByWorkload)
	require.NoError(t, err)
	var cs plan.ChangeSet
	for _, s := range sets {
		if s.Decisions[0].Evidence.Baseline != nil {
			cs = s
			break
		}
	}
	require.NotEmpty(t, cs.Decisions, "a change with a baseline")
	d := cs.Decisions[0]
	base := *d.Evidence.Baseline
	base.Metrics = slices.Clone(base.Metrics)
	base.Metrics[0].ConfidencePercent = 71.4
	d.Evidence.Baseline = &base
	cs.Decisions = []plan.Decision{d}
	b, err := publish.Body(cs)
	require.NoError(t, err)
	require.Contains(t, b, fmt.Sprintf("| %d%% + 71.4%% (short history) |", base.Metrics[0].HeadroomPercent))
}
