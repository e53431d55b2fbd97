package dashboard_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/dashboard"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const quickstart = "../../examples/quickstart"

// quickstartPlan is the quickstart's plan at the recording's newest
// sample, made on a copy of the repository at dir (the quickstart when
// empty).
func quickstartPlan(t *testing.T, dir string, at time.Time) *plan.Plan {
	t.Helper()
	src, err := openmetrics.OpenRecorded(filepath.Join(quickstart, "metrics.om"))
	require.NoError(t, err)
	if at.IsZero() {
		at = src.Span().Newest
	}
	if dir == "" {
		dir = quickstart
	}
	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: src, DefaultNamespace: "default"})
	require.NoError(t, err)
	return p
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run the test with -update to write it")
	require.Equal(t, string(want), got)
}

// TestRender: the quickstart's dashboard, as a run that opened, capped,
// declined and failed pull requests would write it, and as `report`
// writes it with no forge and a consolidation report.
func TestRender(t *testing.T) {
	p := quickstartPlan(t, "", time.Time{})
	sets, err := p.ChangeSets("")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(sets), 3, "the quickstart proposes changes")
	outcomes := []publish.Outcome{publish.Opened, publish.Capped, publish.Declined, publish.Unchanged}
	rep := &publish.Report{}
	for i, cs := range sets {
		r := publish.Result{Key: cs.Key, Outcome: outcomes[i%len(outcomes)], Number: 10 + i}
		switch r.Outcome {
		case publish.Capped:
			r.Number, r.Detail = 0, "at the cap of open (0) or new (1) pull requests"
		case publish.Declined:
			r.Detail = "#3 was closed unmerged; the recommendation has not moved by more than 10% since"
		}
		rep.Results = append(rep.Results, r)
	}
	// A pull request that failed, and one kept open for a person's
	// commit, whose change sets the plan no longer has.
	rep.Results = append(rep.Results,
		publish.Result{Key: "inference/Deployment/ocr", Outcome: publish.Failed, Detail: "github: open a pull request: 502 | <!-- gpu-rightsizing-dashboard:retry=x -->"},
		publish.Result{Key: "inference/Deployment/gone", Outcome: publish.Kept, Number: 20, Detail: "Ana pushed to the branch, so the tool leaves it alone"})
	tests := []struct {
		name   string
		in     dashboard.Input
		golden string
	}{
		{name: "a run", in: dashboard.Input{Plan: p, Publish: rep}, golden: "run.md"},
		{name: "report, with a consolidation report", golden: "report.md", in: dashboard.Input{Plan: p, ReadCluster: true, Notes: []string{"pod ml/x: no GPU share read"}, Consolidation: []consolidate.Report{{
			Policy: "pool-a", ThresholdPercent: 30, Nodes: 2, GPUs: 4, InUse: 3, NeededNow: 2, NeededAfter: 2, InUseAfter: 2,
			Candidates: []consolidate.Candidate{
				{Node: "gpu-b", GPUs: 2, Used: 0.25, Drainable: true, Moves: []consolidate.Move{{Pod: "ml/asr-0", Share: consolidate.Fraction(0.25, 1),
					From: consolidate.Slot{Node: "gpu-b", Devices: []int{0}}, To: consolidate.Slot{Node: "gpu-a", Devices: []int{1}}, Reason: "drain gpu-b"}}},
				{Node: "gpu-c|x", GPUs: 1, Used: 0.2, Why: "ml/ocr-0 (0.20) fits nowhere else"},
			}}}}},
		{name: "report, with fleet findings", golden: "report-findings.md", in: dashboard.Input{Plan: p, ReadCluster: true, Findings: map[string][]string{
			"ml/Deployment/chat": {"the rollout of chat to 0.72 stalls after 0 of 2 new pods: no GPU has 0.72 free; maxSurge: 0, maxUnavailable: 1 fits",
				"while GPU 0 on gpu-a was saturated for 42m, chat used 0.61 of it against a share of 0.50"},
			"ml/Deployment/asr": {"- [ ] a forged box <!-- gpu-rightsizing-dashboard -->"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := dashboard.Render(tt.in)
			require.NoError(t, err)
			golden(t, tt.golden, body)
			again, err := dashboard.Render(tt.in)
			require.NoError(t, err)
			require.Equal(t, body, again, "the same input renders the same text: no churn")
			require.True(t, strings.HasPrefix(body, dashboard.Marker+"\n"))
			require.True(t, dashboard.Empty(dashboard.Parse(body)), "a rendered dashboard asks for nothing until a person ticks")
			// Text from the forge cannot smuggle in a marker or a box of
			// its own: every box ticked asks only for the keys rendered.
			require.Equal(t, 1, strings.Count(body, "<!-- gpu-rightsizing-dashboard -->"))
			all := dashboard.Parse(strings.ReplaceAll(body, "- [ ] ", "- [x] "))
			for _, m := range []map[string]bool{all.Retry, all.Rebase, all.Open} {
				for key := range m {
					require.True(t, slices.ContainsFunc(tt.in.Publish.Results, func(r publish.Result) bool { return r.Key == key }), key)
				}
			}
			require.NotContains(t, all.Retry, "x")
		})
	}
}

// TestParse: ticked boxes as GitHub and GitLab save them, and what asks
// nothing.
func TestParse(t *testing.T) {
	box := func(state, verb, key string) string {
		return "- [" + state + "] <!-- gpu-rightsizing-dashboard:" + verb + "=" + key + " --> text"
	}
	tests := []struct {
		name string
		body string
		want publish.Asked
	}{
		{name: "nothing ticked", body: box(" ", "retry", "a") + "\n" + box(" ", "open", "b")},
		{name: "one of each ticked, x and X, CRLF",
			body: box("x", "retry", "ml%2FDeployment%2Fchat") + "\r\n" + box("X", "rebase", "ml%2FDeployment%2Fasr") + "\r\n" + box("x", "open", "ml") + "\r\n",
			want: publish.Asked{Retry: map[string]bool{"ml/Deployment/chat": true}, Rebase: map[string]bool{"ml/Deployment/asr": true},
				Open: map[string]bool{"ml": true}}},
		{name: "other list markers and an indent", body: "  * [x] <!-- gpu-rightsizing-dashboard:retry=a --> t\n+ [x] <!-- gpu-rightsizing-dashboard:open=b -->",
			want: publish.Asked{Retry: map[string]bool{"a": true}, Open: map[string]bool{"b": true}}},
		{name: "a box quoted, in code, or not at a line's start asks nothing",
			body: "> " + box("x", "retry", "a") + "\n    " + box("x", "retry", "b") + "\ntext " + box("x", "retry", "c")},
		{name: "an unknown verb, a bad escape, an empty key", body: box("x", "merge", "a") + "\n" + box("x", "retry", "%zz") + "\n" + box("x", "retry", "")},
		{name: "a box without the tool's marker", body: "- [x] retry ml/Deployment/chat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, dashboard.Parse(tt.body))
		})
	}
}

// FuzzParse: a body is what people make of it. Parsing never fails, and
// every box the renderer writes for a key, once ticked, asks for that key
// and no other.
func FuzzParse(f *testing.F) {
	f.Add("- [x] <!-- gpu-rightsizing-dashboard:retry=a%2Fb --> x", "ml/Deployment/chat")
	f.Add("* [X] <!-- gpu-rightsizing-dashboard:open=--%3E -->", "a --> b\n- [x] <!--")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, body, key string) {
		_ = dashboard.Parse(body)
		if key == "" {
			return
		}
		ticked := strings.Replace(dashboard.Checkbox(dashboard.Rebase, key), "- [ ]", "- [x]", 1)
		got := dashboard.Parse(body + "\n" + ticked + "\n")
		if !got.Rebase[key] {
			t.Fatalf("the ticked box of %q was not read: %+v", key, got)
		}
		alone := dashboard.Parse(ticked)
		if len(alone.Rebase) != 1 || len(alone.Retry)+len(alone.Open) != 0 {
			t.Fatalf("one box asked for more: %+v", alone)
		}
	})
}

// TestBounded: a fleet with thousands of workloads in doubt still gets a
// dashboard GitHub accepts, cut at a whole line, saying what it left out.
func TestBounded(t *testing.T) {
	p := &plan.Plan{}
	for i := range 3000 {
		d := plan.Decision{Decision: engine.Unjudged(engine.Allocation{Form: engine.Fraction, GPUs: 0.5}, engine.CauseQueryFailed, "the server answered 503")}
		d.Workload.Ref = usage.Ref{Namespace: "ml", Kind: "Deployment", Name: fmt.Sprintf("model-%04d", i)}
		p.Decisions = append(p.Decisions, d)
	}
	full, err := dashboard.Render(dashboard.Input{Plan: p, Publish: &publish.Report{}})
	require.NoError(t, err)
	require.Greater(t, len(full), dashboard.MaxBody)
	require.Contains(t, full, "model-2999", "Render is whole: report prints all of it")
	tests := []struct {
		name string
		body string
		max  int
		cut  bool
	}{
		{name: "under the bound: as it is", body: "a\nb\n", max: 100},
		{name: "the fleet", body: full, max: dashboard.MaxBody, cut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dashboard.Bounded(tt.body, tt.max)
			if !tt.cut {
				require.Equal(t, tt.body, got)
				return
			}
			require.LessOrEqual(t, len(got), tt.max)
			kept := got[:strings.LastIndex(got, "\n…")]
			require.True(t, strings.HasPrefix(tt.body, kept) && strings.HasSuffix(kept, "\n"), "cut at a whole line")
			require.Regexp(t, `… \d+ more line\(s\) not shown`, got)
			require.True(t, utf8.ValidString(got))
		})
	}
}
