package summary_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/summary"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func fraction(v float64) engine.Allocation { return engine.Allocation{Form: engine.Fraction, GPUs: v} }

func decision(name string, action engine.Action, cur, rec engine.Allocation) plan.Decision {
	return plan.Decision{
		Decision: engine.Decision{Action: action, Current: cur, Recommended: rec},
		Workload: patcher.Workload{Ref: usage.Ref{Namespace: "inference", Kind: "Deployment", Name: name}, File: "apps/" + name + ".yaml"},
	}
}

// aRun is a run with a bit of everything: every action, an opened, an
// updated, a closed and a failed pull request, problems of two causes,
// and live changes. Names carry what must be escaped.
func aRun() summary.Run {
	p := &plan.Plan{
		At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Decisions: []plan.Decision{
			decision("chat", engine.Upsize, fraction(0.3), fraction(0.45)),
			decision("embed", engine.ScaleBack, fraction(0.5), fraction(0.25)),
			decision("ocr", engine.NoChange, engine.Allocation{Form: engine.WholeGPUs, GPUs: 1}, engine.Allocation{Form: engine.WholeGPUs, GPUs: 1}),
			decision("asr|x", engine.Skipped, engine.Allocation{Form: engine.NoGPU}, engine.Allocation{Form: engine.NoGPU}),
		},
		Problems: []plan.Problem{
			{File: "policies/bad.yaml", Line: 3, Column: 5, Field: "spec.window", Message: "bad duration \"7x\"", Cause: engine.CausePolicyInvalid},
			{Message: "usage query for 2 workload(s) failed: 503", Cause: engine.CauseQueryFailed},
		},
	}
	rep := &publish.Report{Results: []publish.Result{
		{Key: "inference/Deployment/chat", Branch: "gpu-rightsizing/inference/chat", Outcome: publish.Opened, Number: 12, URL: "https://github.com/acme/gitops/pull/12"},
		{Key: "inference/Deployment/embed", Branch: "gpu-rightsizing/inference/embed", Outcome: publish.Updated, Number: 9, URL: "https://github.com/acme/gitops/pull/9"},
		{Key: "inference/Deployment/old", Branch: "gpu-rightsizing/inference/old", Outcome: publish.Closed, Number: 3, URL: "https://github.com/acme/gitops/pull/3", Detail: "fits now"},
		{Key: "inference/Deployment/x\x1b[31m", Branch: "gpu-rightsizing/inference/x", Outcome: publish.Failed, Detail: "push: 403 | forbidden"},
	}}
	return summary.Run{
		Outcome: summary.Problems, Started: time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC), Duration: 3250 * time.Millisecond,
		Plan: p, Report: rep, LiveOn: true,
		Live: []live.Result{{Namespace: "inference", Name: "chat", Outcome: live.Applied, Fields: []string{"gpu-fraction 0.30 → 0.45"}}},
	}
}

func TestRender(t *testing.T) {
	failed := summary.Run{Outcome: summary.Failed, Err: errors.New("clone: authentication required"),
		Started: time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC), Duration: 400 * time.Millisecond}
	dry := aRun()
	dry.Outcome, dry.DryRun, dry.LiveOn, dry.Live, dry.Report.DryRun = summary.ChangesProposed, true, false, nil, true
	dry.Plan.Problems = nil
	tests := []struct {
		name string
		run  summary.Run
	}{
		{name: "problems", run: aRun()},
		{name: "failed", run: failed},
		{name: "dry-run", run: dry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := summary.New(tt.run)
			var j, md bytes.Buffer
			require.NoError(t, s.WriteJSON(&j))
			golden(t, tt.name+".json", j.Bytes())
			require.NoError(t, s.WriteMarkdown(&md))
			golden(t, tt.name+".md", md.Bytes())
		})
	}
}

func TestCounts(t *testing.T) {
	s := summary.New(aRun())
	require.Equal(t, map[engine.Action]int{engine.Upsize: 1, engine.ScaleBack: 1, engine.NoChange: 1, engine.Skipped: 1}, s.Decisions)
	require.Equal(t, summary.GPUs{Requested: 1.8, Recommended: 1.7}, s.GPUs, "0.3+0.5+1 now; 0.45+0.25+1 recommended")
	require.Equal(t, 2, s.Proposed())
	require.Equal(t, []engine.Cause{engine.CausePolicyInvalid, engine.CauseQueryFailed}, s.ProblemCauses())
	require.Equal(t, 1, s.PullRequests.Counts[publish.Failed])
	require.Zero(t, s.PullRequests.Counts[publish.Declined], "every outcome is named")
	_, named := s.PullRequests.Counts[publish.Declined]
	require.True(t, named)
}

func TestLines(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		want  []string
	}{
		{name: "all", limit: 10, want: []string{
			"GPU rightsizing run finished with problems: pull requests 1 opened, 1 updated, 1 closed, 1 failed; 1 upsize, 1 scaleBack, 1 none, 1 skipped; 2 problem(s); 1 live change(s); took 3.2s",
			"- opened inference/Deployment/chat https://github.com/acme/gitops/pull/12",
			"- updated inference/Deployment/embed https://github.com/acme/gitops/pull/9",
			"- closed inference/Deployment/old https://github.com/acme/gitops/pull/3",
			"- failed inference/Deployment/x\\x1b[31m: push: 403 | forbidden",
			"- problem: policies/bad.yaml:3:5: spec.window: bad duration \"7x\"",
			"- problem: usage query for 2 workload(s) failed: 503",
		}},
		{name: "capped", limit: 1, want: []string{
			"GPU rightsizing run finished with problems: pull requests 1 opened, 1 updated, 1 closed, 1 failed; 1 upsize, 1 scaleBack, 1 none, 1 skipped; 2 problem(s); 1 live change(s); took 3.2s",
			"- opened inference/Deployment/chat https://github.com/acme/gitops/pull/12",
			"- … and 3 more pull request(s)",
			"- problem: policies/bad.yaml:3:5: spec.window: bad duration \"7x\"",
			"- … and 1 more problem(s)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, summary.New(aRun()).Lines(tt.limit))
		})
	}
}

// TestLiveChangesNameTheirCluster: with a cluster map, each live change
// says which cluster it went to, in the JSON and in the Markdown, so
// that two clusters' changes to one name are told apart.
func TestLiveChangesNameTheirCluster(t *testing.T) {
	r := aRun()
	r.Live = append(r.Live, live.Result{Namespace: "inference", Name: "chat", Outcome: live.Refused, Detail: "no context"})
	r.LiveClusters = []string{"prod-us", "prod-eu"}
	s := summary.New(r)
	require.Equal(t, []string{"prod-us", "prod-eu"}, []string{s.Live.Items[0].Cluster, s.Live.Items[1].Cluster})
	var j, md bytes.Buffer
	require.NoError(t, s.WriteJSON(&j))
	require.Contains(t, j.String(), `"cluster": "prod-us"`)
	require.NoError(t, s.WriteMarkdown(&md))
	require.Contains(t, md.String(), "| prod-us:inference/chat | applied |")
	require.Contains(t, md.String(), "| prod-eu:inference/chat | refused |")

	// Without a map nothing changes: the goldens of TestRender hold.
	require.Empty(t, summary.New(aRun()).Live.Items[0].Cluster)
}
