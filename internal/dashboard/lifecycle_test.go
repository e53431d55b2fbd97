package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/dashboard"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// issue is a forge's issue as the tests look at it.
type issue struct {
	number int
	title  string
	body   string
	open   bool
	edits  int
}

// pull is an open pull request as the tests look at it.
type pull struct {
	number int
	branch string
}

// world is a GitOps repository on a real git server behind a fake forge,
// and what a person does there between runs.
type world struct {
	t     *testing.T
	forge interface {
		publish.Forge
		dashboard.Issues
		CloneURL() string
		GitAuth() scm.Auth
	}
	src     *openmetrics.Recorded
	issues  func() []issue
	pulls   func() []pull
	writes  func() int
	heads   func() string
	edit    func(number int, body string)
	newOne  func(title, body string)
	merge   func(number int)
	decline func(number int)
	// newIssueAs and editAs act as a person of the forge: "triager" may
	// triage issues but not push (GitHub's triage role, GitLab's
	// Reporter), "developer" may push (write, Developer).
	newIssueAs func(login, title, body string) int
	editAs     func(login string, number int, body string) error
	// secret is the forge's token: no dashboard may hold it.
	secret string
	runs   int
}

func quickstartFiles(t *testing.T) map[string]string {
	return testenv.DirFiles(t, quickstart, ".om")
}

func recorded(t *testing.T) *openmetrics.Recorded {
	src, err := openmetrics.OpenRecorded(filepath.Join(quickstart, "metrics.om"))
	require.NoError(t, err)
	return src
}

func newGitHubWorld(t *testing.T) *world {
	git := testenv.NewGitServer(t)
	git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	fake.SetRole("triager", "triage")
	fake.SetRole("developer", "write")
	gh, err := scm.NewGitHub(context.Background(), scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: fake.BaseURL(), Token: fake.Token,
		PerPage: 2, Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return &world{t: t, forge: gh, src: recorded(t),
		issues: func() []issue {
			var out []issue
			for _, is := range fake.Issues() {
				out = append(out, issue{number: is.Number, title: is.Title, body: is.Body, open: is.State == "open", edits: is.Edits})
			}
			return out
		},
		pulls: func() []pull {
			var out []pull
			for _, p := range fake.Pulls() {
				if p.State == "open" {
					out = append(out, pull{p.Number, p.Head})
				}
			}
			return out
		},
		writes: fake.Writes,
		heads: func() string {
			return git.Git(t, "acme/gitops", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
		},
		edit:    func(n int, body string) { require.NoError(t, fake.EditIssueBody(n, body)) },
		newOne:  func(title, body string) { fake.NewIssue(title, body, []string{"gpu-rightsizing-dashboard"}) },
		merge:   func(n int) { require.NoError(t, fake.Merge(n)) },
		decline: func(n int) { require.NoError(t, fake.ClosePR(n)) },
		newIssueAs: func(login, title, body string) int {
			return fake.NewIssueAs(login, title, body, []string{"gpu-rightsizing-dashboard"})
		},
		editAs: fake.EditIssueBodyAs,
		secret: fake.Token,
	}
}

func newGitLabWorld(t *testing.T) *world {
	srv := testenv.NewGitServer(t)
	const name = "infra/gitops"
	url := srv.NewRepo(t, name, quickstartFiles(t))
	fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: name, Dir: srv.Dir(name), CloneURL: url, Token: srv.Token})
	fake.AddMember("triager", forge.AccessReporter)
	fake.AddMember("developer", forge.AccessDeveloper)
	gl, err := scm.NewGitLab(context.Background(), scm.GitLabConfig{BaseURL: fake.URL, Project: name, Token: srv.Token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return &world{t: t, forge: gl, src: recorded(t),
		issues: func() []issue {
			var out []issue
			for _, is := range fake.Issues() {
				out = append(out, issue{number: int(is.IID), title: is.Title, body: is.Description, open: is.State == "opened", edits: is.Edits})
			}
			return out
		},
		pulls: func() []pull {
			var out []pull
			for _, mr := range fake.MergeRequests() {
				if mr.State == "opened" {
					out = append(out, pull{int(mr.IID), mr.SourceBranch})
				}
			}
			return out
		},
		writes: fake.Writes,
		heads: func() string {
			return srv.Git(t, name, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
		},
		edit:    func(n int, body string) { require.NoError(t, fake.EditIssueDescription(int64(n), body)) },
		newOne:  func(title, body string) { fake.NewIssue(title, body, []string{"gpu-rightsizing-dashboard"}) },
		merge:   func(n int) { require.NoError(t, fake.Merge(int64(n))) },
		decline: func(n int) { require.NoError(t, fake.Close(int64(n))) },
		newIssueAs: func(login, title, body string) int {
			return int(fake.NewIssueAs(login, title, body, []string{"gpu-rightsizing-dashboard"}))
		},
		editAs: func(login string, n int, body string) error {
			return fake.EditIssueDescriptionAs(login, int64(n), body)
		},
		secret: srv.Token,
	}
}

// outcome is one run's: the pull requests' and the dashboard's.
type outcome struct {
	rep  *publish.Report
	dash dashboard.Result
}

// run is `recommender run` with the dashboard on: clone, plan, read the
// dashboard, publish what it asks, write it. At most two pull requests
// open, so that the cap holds some back.
func (w *world) run(at time.Time) outcome { return w.runCapped(at, 2) }

// runCapped is run with at most maxOpen pull requests open.
func (w *world) runCapped(at time.Time, maxOpen int) outcome {
	t := w.t
	t.Helper()
	ctx := context.Background()
	w.runs++
	g, err := scm.Clone(ctx, w.forge.CloneURL(), "main", filepath.Join(t.TempDir(), "checkout"), w.forge.GitAuth())
	require.NoError(t, err)
	p, err := plan.Make(ctx, plan.Options{Repo: g.Dir(), At: at, Source: w.src, DefaultNamespace: "default"})
	require.NoError(t, err)
	d, err := dashboard.Read(ctx, w.forge, dashboard.Options{})
	require.NoError(t, err)
	rep, err := publish.Run(ctx, g, w.forge, p, publish.Options{Base: "main", MaxOpen: maxOpen, Asked: d.Asked(), Now: func() time.Time { return at }})
	require.NoError(t, err)
	for _, r := range rep.Results {
		require.NotEqual(t, publish.Failed, r.Outcome, "run %d: %s: %s", w.runs, r.Key, r.Detail)
	}
	res, err := d.Write(ctx, dashboard.Input{Plan: p, Publish: rep})
	require.NoError(t, err)
	return outcome{rep, res}
}

// dashboards are the open issues holding the marker.
func (w *world) dashboards() []issue {
	var out []issue
	for _, is := range w.issues() {
		if is.open && strings.Contains(is.body, dashboard.Marker) {
			out = append(out, is)
		}
	}
	return out
}

// tick ticks the first box of verb in the dashboard, as a person would;
// the key it asks for, "" when there is no such box.
func (w *world) tick(v dashboard.Verb) string {
	w.t.Helper()
	d := w.dashboards()[0]
	prefix := "- [ ] <!-- gpu-rightsizing-dashboard:" + string(v) + "="
	i := strings.Index(d.body, prefix)
	if i < 0 {
		return ""
	}
	w.edit(d.number, d.body[:i]+"- [x]"+d.body[i+len("- [ ]"):])
	got := dashboard.Parse(w.dashboards()[0].body)
	for _, m := range []map[string]bool{got.Retry, got.Rebase, got.Open} {
		for k := range m {
			return k
		}
	}
	w.t.Fatal("a ticked box was not read back")
	return ""
}

func result(rep *publish.Report, key string) publish.Result {
	for _, r := range rep.Results {
		if r.Key == key {
			return r
		}
	}
	return publish.Result{}
}

// TestLifecycle: thirty runs on each fake forge, usage moving across the
// recording, a person merging, declining and ticking boxes between them.
// The dashboard is created once, edited in place, never duplicated, not
// edited when nothing changed; a ticked box acts at the next run and is
// unticked by it.
func TestLifecycle(t *testing.T) {
	for _, tt := range []struct {
		name  string
		world func(*testing.T) *world
	}{
		{name: "github", world: newGitHubWorld},
		{name: "gitlab", world: newGitLabWorld},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.world(t)
			newest := w.src.Span().Newest
			acted := map[dashboard.Verb]int{}
			created := 0
			var at time.Time
			for step := range 30 {
				// A person acts between runs: merges, declines, ticks.
				var verb dashboard.Verb
				var key string
				if prs := w.pulls(); len(prs) > 0 {
					switch step % 6 {
					case 1:
						w.merge(prs[0].number)
					case 3:
						w.decline(prs[0].number)
					}
				}
				if step > 0 && step%2 == 0 {
					for _, v := range []dashboard.Verb{dashboard.Retry, dashboard.Open, dashboard.Rebase}[step/2%3:] {
						if key = w.tick(v); key != "" {
							verb = v
							break
						}
					}
				}
				// Usage moves from run to run, but not when a box was
				// ticked: the run after a tick sees what the person saw.
				if verb == "" {
					at = newest.Add(-time.Duration((step*37)%180) * time.Minute)
				}
				got := w.run(at)
				if got.dash.Outcome == dashboard.Created {
					created++
				}
				ds := w.dashboards()
				require.Len(t, ds, 1, "step %d: one dashboard", step)
				require.Equal(t, got.dash.Number, ds[0].number)
				require.True(t, dashboard.Empty(dashboard.Parse(ds[0].body)), "step %d: the run unticked every box", step)
				require.NotContains(t, ds[0].body, w.secret, "no token in the dashboard (docs/design.md §10.6)")
				if key != "" {
					r := result(got.rep, key)
					switch verb {
					case dashboard.Retry:
						require.Equal(t, publish.Opened, r.Outcome, "step %d: retry %s: %s", step, key, r.Detail)
					case dashboard.Open:
						require.Equal(t, publish.Opened, r.Outcome, "step %d: open %s: %s", step, key, r.Detail)
					case dashboard.Rebase:
						require.Equal(t, publish.Updated, r.Outcome, "step %d: rebase %s: %s", step, key, r.Detail)
						require.Contains(t, r.Detail, "as asked on the dashboard")
					}
					acted[verb]++
					require.Equal(t, dashboard.Edited, got.dash.Outcome, "step %d: the ticked box is unticked", step)
				}

				// The same inputs again: the dashboard is not edited, and
				// nothing else is written (docs/design.md §10.4).
				writes, heads, edits := w.writes(), w.heads(), ds[0].edits
				again := w.run(at)
				if again.dash.Outcome != dashboard.Unchanged {
					t.Logf("before:\n%s\nafter:\n%s\nresults %v then %v", ds[0].body, w.dashboards()[0].body, got.rep.Results, again.rep.Results)
				}
				require.Equal(t, dashboard.Unchanged, again.dash.Outcome, "step %d", step)
				require.Equal(t, edits, w.dashboards()[0].edits, "step %d: the dashboard was edited with nothing new", step)
				require.Equal(t, writes, w.writes(), "step %d: a second run on the same inputs wrote", step)
				require.Equal(t, heads, w.heads(), "step %d: a second run on the same inputs moved a branch", step)
			}
			require.Equal(t, 1, created, "the dashboard is created once")
			require.Len(t, w.issues(), 1, "no other issue was ever opened")
			t.Logf("%s: boxes acted on: %v; the dashboard edited %d times over %d runs", tt.name, acted, w.issues()[0].edits, w.runs)
			for _, v := range []dashboard.Verb{dashboard.Retry, dashboard.Open, dashboard.Rebase} {
				require.Positive(t, acted[v], "a ticked %s box acted", v)
			}
		})
	}
}

// TestDuplicates: a second open dashboard of the tool's own (two runs
// raced) is left alone, and its boxes ask nothing; so is a copy a person
// made, which the tool did not open. The oldest of its own is kept up to
// date, and the run says so of both.
func TestDuplicates(t *testing.T) {
	w := newGitHubWorld(t)
	at := w.src.Span().Newest
	first := w.run(at)
	require.Equal(t, dashboard.Created, first.dash.Outcome)
	body := w.dashboards()[0].body
	ticked := strings.Replace(body, "- [ ]", "- [x]", -1)
	w.newOne("copy", ticked)
	raced, err := w.forge.OpenIssue(context.Background(), "GPU rightsizing dashboard", ticked, []string{"gpu-rightsizing-dashboard"})
	require.NoError(t, err)
	next := w.run(at.Add(-20 * time.Minute))
	require.Equal(t, first.dash.Number, next.dash.Number, "the oldest is kept")
	require.Contains(t, next.dash.Detail, fmt.Sprintf("also open: #%d", raced.Number))
	require.Contains(t, next.dash.Detail, "left alone: #")
	for _, r := range next.rep.Results {
		require.NotContains(t, r.Detail, "as asked on the dashboard", "a box ticked on a copy asks nothing")
	}
	ds := w.dashboards()
	require.Len(t, ds, 3)
	require.Zero(t, ds[1].edits, "the person's copy is not edited")
	require.Zero(t, ds[2].edits, "the tool's duplicate is not edited")
	require.Contains(t, ds[0].body, "## Look-alikes", "the dashboard names the copy")
}

// TestLocal: the local provider keeps the dashboard as a Markdown file
// beside its pull requests; a person ticks a box by editing it.
func TestLocal(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "pulls")
	local, err := scm.NewLocal(dir)
	require.NoError(t, err)
	p := quickstartPlan(t, "", time.Time{})
	sets, err := p.ChangeSets("")
	require.NoError(t, err)
	rep := &publish.Report{Results: []publish.Result{{Key: sets[0].Key, Outcome: publish.Declined, Number: 1, Detail: "closed unmerged"}}}
	write := func() dashboard.Result {
		d, err := dashboard.Read(ctx, local, dashboard.Options{})
		require.NoError(t, err)
		res, err := d.Write(ctx, dashboard.Input{Plan: p, Publish: rep})
		require.NoError(t, err)
		return res
	}
	require.Equal(t, dashboard.Created, write().Outcome)
	require.Equal(t, dashboard.Unchanged, write().Outcome)
	file := filepath.Join(dir, "issue-0001.md")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), "# GPU rightsizing dashboard\n\n"+dashboard.Marker+"\n"))
	// A person ticks the retry box in an editor that writes CRLF.
	ticked := strings.ReplaceAll(strings.Replace(string(b), "- [ ]", "- [x]", 1), "\n", "\r\n")
	require.NoError(t, os.WriteFile(file, []byte(ticked), 0o644))
	d, err := dashboard.Read(ctx, local, dashboard.Options{})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{sets[0].Key: true}, d.Asked().Retry)
	dry, err := dashboard.Read(ctx, local, dashboard.Options{DryRun: true})
	require.NoError(t, err)
	require.True(t, dashboard.Empty(dry.Asked()), "a dry run acts on nothing")
	res, err := dry.Write(ctx, dashboard.Input{Plan: p, Publish: rep})
	require.NoError(t, err)
	require.Equal(t, "would edit the dashboard", res.Detail)
	require.Equal(t, dashboard.Edited, write().Outcome, "the box is unticked")
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	require.NotContains(t, string(b), "[x]")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "one file, no temporary left: %v", entries)
}
