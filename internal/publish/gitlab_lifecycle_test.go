package publish_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// gitlabWorld is the quickstart as a GitLab project: its repository on a
// real git server, its merge requests on the fake GitLab, and a person
// who merges, declines and edits between the tool's runs.
type gitlabWorld struct {
	t     *testing.T
	srv   *testenv.GitServer
	fake  *forge.FakeGitLab
	forge *scm.GitLab
	src   *openmetrics.Recorded
	name  string
}

func newGitLabWorld(t *testing.T) *gitlabWorld {
	t.Helper()
	files := quickstartFiles(t) // github_lifecycle_test.go
	srv := testenv.NewGitServer(t)
	const name = "infra/gitops"
	url := srv.NewRepo(t, name, files)
	fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: name, Dir: srv.Dir(name), CloneURL: url, Token: srv.Token})
	forge, err := scm.NewGitLab(context.Background(), scm.GitLabConfig{BaseURL: fake.URL, Project: name, Token: srv.Token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	src, err := openmetrics.OpenRecorded(filepath.Join(quickstart, "metrics.om"))
	require.NoError(t, err)
	return &gitlabWorld{t: t, srv: srv, fake: fake, forge: forge, src: src, name: name}
}

// run is one run of the tool at evaluation time at: clone, plan on the
// clone, publish.
func (w *gitlabWorld) run(at time.Time) *publish.Report {
	w.t.Helper()
	ctx := context.Background()
	g, err := scm.Clone(ctx, w.forge.CloneURL(), "main", filepath.Join(w.t.TempDir(), "checkout"), w.forge.GitAuth())
	require.NoError(w.t, err)
	p, err := plan.Make(ctx, plan.Options{Repo: g.Dir(), At: at, Source: w.src})
	require.NoError(w.t, err)
	rep, err := publish.Run(ctx, g, w.forge, p, publish.Options{Base: "main", Now: func() time.Time { return at }})
	require.NoError(w.t, err)
	return rep
}

// git runs the git CLI in the bare repository.
func (w *gitlabWorld) git(args ...string) string {
	w.t.Helper()
	return w.srv.Git(w.t, w.name, args...)
}

// heads is every ref of the bare repository and its commit.
func (w *gitlabWorld) heads() string {
	return w.git("for-each-ref", "--format=%(refname) %(objectname)")
}

// open is the open merge request of branch, nil when none is.
func (w *gitlabWorld) open(branch string) *forge.FakeMergeRequest {
	for _, mr := range w.fake.MergeRequests() {
		if mr.SourceBranch == branch && mr.State == "opened" {
			return &mr
		}
	}
	return nil
}

// remove deletes a file on main, as a person retiring a workload.
func (w *gitlabWorld) remove(path string) {
	w.t.Helper()
	work := w.t.TempDir()
	git := func(args ...string) {
		w.t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=A Person", "GIT_AUTHOR_EMAIL=person@example.com",
			"GIT_COMMITTER_NAME=A Person", "GIT_COMMITTER_EMAIL=person@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(w.t, err, "git %v: %s", args, out)
	}
	git("clone", "-q", w.srv.Dir(w.name), ".")
	git("rm", "-q", path)
	git("commit", "-qm", "retire "+path)
	git("push", "-q", "origin", "HEAD:main")
}

// merge merges the open merge request of branch as a person, and checks
// that main then holds exactly what it proposed: every file the merge
// changed is the branch's.
func (w *gitlabWorld) merge(branch string) {
	w.t.Helper()
	mr := w.open(branch)
	require.NotNil(w.t, mr, "no open merge request for %s", branch)
	require.NoError(w.t, w.fake.Merge(mr.IID))
	changed := strings.Fields(w.git("diff", "--name-only", "main^1", "main"))
	require.Equal(w.t, strings.Fields(w.git("diff", "--name-only", "main^1..."+branch)), changed)
	for _, f := range changed {
		require.Equal(w.t, w.git("show", branch+":"+f), w.git("show", "main:"+f), "main holds what !%d proposed", mr.IID)
	}
}

var fractionRE = regexp.MustCompile(`gpu-fraction: ["']([0-9.]+)["']`)

// fraction is the gpu-fraction a manifest asks for.
func fraction(manifest string) string {
	m := fractionRE.FindStringSubmatch(manifest)
	if m == nil {
		return ""
	}
	return m[1]
}

var markerRE = regexp.MustCompile(`<!-- gpu-rightsizing (\{[^\n]*\}) -->`)

// check asserts what holds after every run: no failure, at most one open
// merge request per branch, none without a change or without the tool's
// marker.
func (w *gitlabWorld) check(step int, rep *publish.Report) {
	w.t.Helper()
	for _, r := range rep.Results {
		require.NotEqual(w.t, publish.Failed, r.Outcome, "step %d: %s: %s", step, r.Branch, r.Detail)
	}
	open := map[string]int{}
	for _, mr := range w.fake.MergeRequests() {
		if mr.State != "opened" {
			continue
		}
		open[mr.SourceBranch]++
		require.Equal(w.t, 1, open[mr.SourceBranch], "step %d: two open merge requests for %s", step, mr.SourceBranch)
		require.NotEmpty(w.t, strings.TrimSpace(w.git("diff", "--stat", "main", mr.SourceBranch)), "step %d: !%d changes nothing", step, mr.IID)
		require.Regexp(w.t, markerRE, mr.Description, "step %d: !%d", step, mr.IID)
	}
}

// byBranch is the report as branch → outcome.
func byBranch(rep *publish.Report) map[string]publish.Outcome {
	out := map[string]publish.Outcome{}
	for _, r := range rep.Results {
		out[strings.TrimPrefix(r.Branch, "gpu-rightsizing/")] = r.Outcome
	}
	return out
}

// TestGitLabLifecycle runs the tool 30 times on the quickstart, as a
// GitLab project, moving the evaluation time through the recording while
// a person merges, declines, edits and fixes by hand between runs.
func TestGitLabLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("30 runs against a git server")
	}
	w := newGitLabWorld(t)
	var (
		a = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)  // asr, summarize down; chat, translate up
		b = time.Date(2026, 11, 30, 11, 50, 0, 0, time.UTC) // chat in doubt; embed down; translate less up
		d = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)   // too little history for anything
	)
	const (
		asr       = "gpu-rightsizing/inference/asr-whisper"
		chat      = "gpu-rightsizing/inference/chat"
		embed     = "gpu-rightsizing/inference/embed"
		summarize = "gpu-rightsizing/inference/summarize"
		translate = "gpu-rightsizing/inference/translate"
	)
	type step struct {
		at time.Time
		// person acts before the run.
		person func()
		// quiet: nothing changed since the previous run, so the run must
		// write nothing.
		quiet bool
		want  map[string]publish.Outcome
		// then checks the world after the run.
		then func()
	}
	var translateBody, chatTitle string
	steps := []step{
		{at: a, want: map[string]publish.Outcome{"inference/asr-whisper": publish.Opened, "inference/chat": publish.Opened,
			"inference/summarize": publish.Opened, "inference/translate": publish.Opened}},
		{at: a, quiet: true},
		{at: a, person: func() {
			mr := w.open(chat)
			chatTitle = "Chat needs more GPU (reviewed)"
			require.NoError(t, w.fake.Edit(mr.IID, chatTitle, mr.Description))
		}, quiet: true, then: func() {
			require.Equal(t, chatTitle, w.open(chat).Title, "a person's title is kept while nothing changes")
		}},
		{at: b, want: map[string]publish.Outcome{"inference/embed": publish.Opened, "inference/translate": publish.Updated,
			"inference/asr-whisper": publish.Unchanged, "inference/summarize": publish.Unchanged,
			// Chat's spike has not happened yet at 11:50: its upsize is not
			// needed on the data there is (only a downsize would want more
			// history), so the tool closes its merge request itself.
			"inference/chat": publish.Closed},
			then: func() { translateBody = w.open(translate).Description }},
		{at: b, quiet: true},
		{at: b, person: func() { require.NoError(t, w.fake.Close(w.open(embed).IID)) }, quiet: true,
			want: map[string]publish.Outcome{"inference/embed": publish.Declined}},
		{at: b, quiet: true},
		// Merged at 0.24: the recording's memory, a share of the old
		// allocation, now reads lower, and a further step down is opened
		// on the same branch, over the merged commit.
		{at: b, person: func() { w.merge(asr) },
			want: map[string]publish.Outcome{"inference/asr-whisper": publish.Opened},
			then: func() {
				require.Equal(t, "0.24", fraction(w.git("show", "main:apps/asr/deployment.yaml")))
				require.Equal(t, "0.18", fraction(w.git("show", asr+":apps/asr/deployment.yaml")))
			}},
		{at: b, quiet: true},
		{at: b, person: func() { w.remove("apps/summarize/deployment.yaml") },
			want: map[string]publish.Outcome{"inference/summarize": publish.Closed}, then: func() {
				require.Nil(t, w.open(summarize))
				mrs := w.fake.MergeRequests()
				for _, mr := range mrs {
					if mr.SourceBranch == summarize {
						require.Equal(t, "closed", mr.State)
						require.Len(t, mr.Notes, 1)
						require.Contains(t, mr.Notes[0], "inference/Deployment/summarize is no longer in the repository")
					}
				}
			}},
		{at: b, quiet: true},
		// At 12:00 chat needs its upsize again: the merge request the tool
		// closed itself was not declined, so a new one opens.
		{at: a, want: map[string]publish.Outcome{"inference/translate": publish.Updated, "inference/chat": publish.Opened},
			then: func() { require.NotEqual(t, translateBody, w.open(translate).Description) }},
		{at: a, quiet: true},
		{at: d},
		{at: d, quiet: true},
		{at: a},
		{at: a, quiet: true},
		{at: a, person: func() { w.merge(translate) },
			then: func() {
				require.Equal(t, "0.32", fraction(w.git("show", "main:apps/translate/deployment.yaml")))
			}},
		{at: a, quiet: true},
		{at: b},
		{at: b, quiet: true},
		{at: a},
		{at: a, quiet: true},
		{at: a, person: func() { w.merge(chat) },
			then: func() {
				require.Equal(t, "0.72", fraction(w.git("show", "main:apps/chat/deployment.yaml")))
			}},
		{at: a, quiet: true},
		{at: b},
		{at: b, quiet: true},
		{at: d},
		{at: d, quiet: true},
		{at: a, want: map[string]publish.Outcome{"inference/translate": publish.Updated, "inference/asr-whisper": publish.Unchanged}},
	}
	require.Len(t, steps, 30)
	for i, s := range steps {
		if s.person != nil {
			s.person()
		}
		writes, heads := w.fake.Writes(), w.heads()
		rep := w.run(s.at)
		t.Logf("step %d at %s: %v", i+1, s.at.Format("15:04"), byBranch(rep))
		w.check(i+1, rep)
		if s.quiet {
			require.Equal(t, writes, w.fake.Writes(), "step %d wrote to GitLab", i+1)
			require.Equal(t, heads, w.heads(), "step %d moved a branch", i+1)
		}
		got := byBranch(rep)
		for branch, want := range s.want {
			require.Equal(t, want, got[branch], "step %d: %s", i+1, branch)
		}
		if s.then != nil {
			s.then()
		}
	}
	t.Logf("%d merge requests, %d API writes", len(w.fake.MergeRequests()), w.fake.Writes())
}
