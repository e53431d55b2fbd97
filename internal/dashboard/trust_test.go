package dashboard_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/dashboard"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

var forges = []struct {
	name  string
	world func(*testing.T) *world
}{
	{name: "github", world: newGitHubWorld},
	{name: "gitlab", world: newGitLabWorld},
}

// TestLookAlikeDashboard: before the tool's first run, a user who may
// triage but not push opens her own labelled issue holding the marker,
// with a ticked box to open every change. It is not the tool's: the run
// opens a dashboard of its own, leaves hers as it is and names it, and
// `--max-open 1` holds.
func TestLookAlikeDashboard(t *testing.T) {
	for _, tt := range forges {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.world(t)
			at := w.src.Span().Newest
			sets, err := quickstartPlan(t, "", at).ChangeSets("")
			require.NoError(t, err)
			require.Greater(t, len(sets), 1)
			body := dashboard.Marker + "\n"
			for _, cs := range sets {
				body += "- [x] <!-- gpu-rightsizing-dashboard:open=" + url.QueryEscape(cs.Key) + " --> open it\n"
			}
			hers := w.newIssueAs("triager", "GPU rightsizing dashboard", body)

			got := w.runCapped(at, 1)
			require.Len(t, w.pulls(), 1, "--max-open 1 holds: %v", got.rep.Results)
			require.Equal(t, dashboard.Created, got.dash.Outcome)
			require.NotEqual(t, hers, got.dash.Number)
			require.Contains(t, got.dash.Detail, "left alone: #")
			for _, is := range w.issues() {
				if is.number == hers {
					require.Equal(t, body, is.body, "her issue is not edited")
				}
			}
			for _, d := range w.dashboards() {
				if d.number == got.dash.Number {
					require.Contains(t, d.body, "## Look-alikes")
					require.Contains(t, d.body, "opened by triager")
				}
			}
		})
	}
}

// TestDashboardBoxByWhoMayPush: a box on the tool's dashboard counts when
// whoever ticked it may push. GitHub lets nobody else edit the body (a
// triage user is refused); GitLab lets a Reporter edit any issue, so the
// run reads who did from the system notes and the members API, and acts
// on nothing a Reporter ticked — the cap holds — while a Developer's tick
// opens the change.
func TestDashboardBoxByWhoMayPush(t *testing.T) {
	for _, tt := range forges {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.world(t)
			at := w.src.Span().Newest
			first := w.runCapped(at, 1)
			require.Len(t, w.pulls(), 1)
			d := w.dashboards()[0]
			const box = "- [ ] <!-- gpu-rightsizing-dashboard:open="
			i := strings.Index(d.body, box)
			require.Positive(t, i, "a change is held back by the cap, with a box")
			ticked := d.body[:i] + "- [x]" + d.body[i+len("- [ ]"):]

			err := w.editAs("triager", first.dash.Number, ticked)
			if tt.name == "github" {
				require.Error(t, err, "GitHub lets no triage user edit the tool's issue")
			} else {
				require.NoError(t, err, "GitLab lets a Reporter edit any issue")
				got := w.runCapped(at, 1)
				require.Len(t, w.pulls(), 1, "a Reporter's box opens nothing: %v", got.rep.Results)
				require.Contains(t, got.dash.Detail, "triager changed the dashboard and may not push")
				require.True(t, dashboard.Empty(dashboard.Parse(w.dashboards()[0].body)), "the run wrote the box afresh, unticked")
			}

			require.NoError(t, w.editAs("developer", first.dash.Number, ticked))
			got := w.runCapped(at, 1)
			require.Len(t, w.pulls(), 2, "a box ticked by one who may push opens the change: %v", got.rep.Results)
			require.Empty(t, got.dash.Detail)
		})
	}
}

// TestOversizedDashboard: a person pastes more into the dashboard than a
// body is kept (GitLab takes a million characters; the tool keeps 256
// KiB). The run knows it still, and writes it afresh: no second one.
func TestOversizedDashboard(t *testing.T) {
	w := newGitLabWorld(t)
	at := w.src.Span().Newest
	first := w.run(at)
	require.Equal(t, dashboard.Created, first.dash.Outcome)
	big := w.dashboards()[0].body + "\n" + strings.Repeat("a pasted log line\n", 300<<10/18)
	require.Greater(t, len(big), 256<<10)
	w.edit(first.dash.Number, big)

	got := w.run(at)
	require.Equal(t, dashboard.Edited, got.dash.Outcome)
	require.Equal(t, first.dash.Number, got.dash.Number)
	require.Len(t, w.issues(), 1, "no second dashboard")
	require.Less(t, len(w.dashboards()[0].body), dashboard.MaxBody+1)
}

// TestLocalDashboardRecovers: on the local stand-in, a dashboard file a
// killed run left empty is no dashboard and is written again under its
// number; one a person made too long is written afresh. Never a second.
func TestLocalDashboardRecovers(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "pulls")
	local, err := scm.NewLocal(dir)
	require.NoError(t, err)
	p := quickstartPlan(t, "", time.Time{})
	write := func() dashboard.Result {
		d, err := dashboard.Read(ctx, local, dashboard.Options{})
		require.NoError(t, err)
		res, err := d.Write(ctx, dashboard.Input{Plan: p, Publish: &publish.Report{}})
		require.NoError(t, err)
		return res
	}
	file := filepath.Join(dir, "issue-0001.md")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(file, nil, 0o644)) // killed between creating and writing it
	res := write()
	require.Equal(t, dashboard.Created, res.Outcome)
	require.Equal(t, 1, res.Number)

	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, append(b, strings.Repeat("x", 300<<10)...), 0o644))
	res = write()
	require.Equal(t, dashboard.Edited, res.Outcome)
	require.Equal(t, 1, res.Number)
	require.Equal(t, dashboard.Unchanged, write().Outcome)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one dashboard, no temporary file: %v", entries)
}

// TestRenderMentionsNoOne: a name from a commit, a finding or a
// look-alike's author that holds "@name" reads the same on the dashboard
// but mentions no one.
func TestRenderMentionsNoOne(t *testing.T) {
	p := quickstartPlan(t, "", time.Time{})
	sets, err := p.ChangeSets("")
	require.NoError(t, err)
	ref := sets[0].Decisions[0].Workload.Ref.String()
	rep := &publish.Report{
		Results:    []publish.Result{{Key: sets[0].Key, Outcome: publish.Kept, Number: 3, Detail: "@acme/everyone pushed to the branch"}},
		LookAlikes: []publish.LookAlike{{Number: 9, Branch: "gpu-rightsizing/x", Author: "@mallory", Why: "opened by @mallory, not by recommender-bot"}},
	}
	body, err := dashboard.Render(dashboard.Input{Plan: p, Publish: rep, Findings: map[string][]string{ref: {"crowded by @alice"}}})
	require.NoError(t, err)
	for _, name := range []string{"acme/everyone", "mallory", "alice"} {
		require.NotContains(t, body, "@"+name)
		require.Contains(t, body, "@&#8203;"+name)
	}
}
