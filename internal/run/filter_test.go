package run_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

// TestRunFilterLeavesOtherPullRequestsAlone: a run filtered to one
// workload updates nothing and closes nothing of the others' pull
// requests; an unfiltered run then finds them all as they were.
func TestRunFilterLeavesOtherPullRequestsAlone(t *testing.T) {
	repo := gitQuickstart(t)
	o := options(repo)
	o.Observe.Output = "table"
	_, errOut := runOK(t, o, run.ChangesProposed)
	require.Equal(t, 4.0, summary(t, errOut)["pullRequests"].(map[string]any)["opened"])

	sel, err := plan.ParseSelector("app.kubernetes.io/name=chat")
	require.NoError(t, err)
	for _, filter := range []plan.Filter{{Workloads: []string{"chat"}}, {Namespaces: []string{"elsewhere"}}, {Selector: sel}} {
		filtered := o
		filtered.Filter = filter
		out, errOut := runOK(t, filtered, run.NothingToDo)
		prs := summary(t, errOut)["pullRequests"].(map[string]any)
		require.Equal(t, 0.0, prs["closed"], "%v\n%s", filter, out)
		require.Equal(t, 0.0, prs["updated"], "%v\n%s", filter, out)
		require.Contains(t, out, "outside this run's filter", filter)
		// A filter that admits no workload says so; one that admits
		// some does not.
		if len(filter.Namespaces) > 0 {
			require.Contains(t, errOut, "warning: the filter (--namespace elsewhere) admits none of the repository's ")
		} else {
			require.NotContains(t, errOut, "warning: the filter")
		}
	}

	_, errOut = runOK(t, o, run.NothingToDo)
	require.Equal(t, 4.0, summary(t, errOut)["pullRequests"].(map[string]any)["unchanged"])
}
