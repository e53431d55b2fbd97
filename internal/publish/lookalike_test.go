package publish_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// forged is one forge as the look-alike tests use it: the tool's runs,
// and what a maintainer and a stranger do there.
type forged struct {
	run func(at time.Time) *publish.Report
	// git runs git in the bare repository.
	git func(args ...string) string
	// pull is a pull request's title, body and state, by number.
	pull func(n int) (title, body, state string)
	// own is the number and body of the tool's open pull request of
	// branch.
	own func(branch string) (int, string)
	// stranger opens a pull request of branch with body as someone else:
	// on GitHub from the repository's own branch onto another base, on
	// GitLab from a fork's branch of the same name; close closes it as
	// them.
	stranger func(branch, body string) int
	close    func(n int)
	// tick ticks the rebase box in the tool's pull request n as login;
	// demote takes push access from login, promote gives it.
	tick            func(login string, n int) error
	demote, promote func(login string)
}

func githubForged(t *testing.T) *forged {
	l := newLifecycle(t, false)
	l.git.Git(t, "acme/gitops", "branch", "release", "main")
	l.fake.SetRole("stranger", "triage")
	l.fake.SetRole("writer", "write")
	return &forged{
		run: func(at time.Time) *publish.Report { return l.run(t, at) },
		git: func(args ...string) string { return l.git.Git(t, "acme/gitops", args...) },
		pull: func(n int) (string, string, string) {
			p, ok := l.fake.Pull(n)
			require.True(t, ok)
			return p.Title, p.Body, p.State
		},
		own: func(branch string) (int, string) {
			for _, p := range l.fake.Pulls() {
				if p.Head == branch && p.State == "open" && p.Author == forge.TokenUser {
					return p.Number, p.Body
				}
			}
			t.Fatalf("no open pull request of the tool for %s", branch)
			return 0, ""
		},
		stranger: func(branch, body string) int {
			n, err := l.fake.OpenPullAs("stranger", forge.OpenPull{Head: branch, Base: "release", Title: "Copied", Body: body})
			require.NoError(t, err)
			return n
		},
		close: func(n int) { require.NoError(t, l.fake.ClosePRAs("stranger", n)) },
		tick: func(login string, n int) error {
			p, _ := l.fake.Pull(n)
			return l.fake.EditAs(login, n, p.Title, tickRebase(p.Body))
		},
		demote:  func(login string) { l.fake.SetRole(login, "triage") },
		promote: func(login string) { l.fake.SetRole(login, "write") },
	}
}

func gitlabForged(t *testing.T) *forged {
	w := newGitLabWorld(t)
	w.fake.AddMember("stranger", forge.AccessReporter)
	w.fake.AddMember("writer", forge.AccessDeveloper)
	return &forged{
		run: w.run,
		git: w.git,
		pull: func(n int) (string, string, string) {
			mr, ok := w.fake.MergeRequest(int64(n))
			require.True(t, ok)
			return mr.Title, mr.Description, mr.State
		},
		own: func(branch string) (int, string) {
			mr := w.open(branch)
			require.NotNil(t, mr, "no open merge request for %s", branch)
			require.Equal(t, forge.GitLabBot, mr.Author)
			return int(mr.IID), mr.Description
		},
		stranger: func(branch, body string) int {
			n, err := w.fake.OpenMRAs("stranger", forge.OpenMR{Fork: "stranger/gitops", Source: branch, Target: "main", Title: "Copied", Description: body})
			require.NoError(t, err)
			return int(n)
		},
		close: func(n int) { require.NoError(t, w.fake.Close(int64(n))) },
		tick: func(login string, n int) error {
			mr, _ := w.fake.MergeRequest(int64(n))
			return w.fake.EditAs(login, int64(n), mr.Title, tickRebase(mr.Description))
		},
		demote:  func(login string) { w.fake.AddMember(login, forge.AccessReporter) },
		promote: func(login string) { w.fake.AddMember(login, forge.AccessDeveloper) },
	}
}

// tickRebase ticks a body's rebase box, as a person clicking it.
func tickRebase(body string) string {
	return strings.Replace(body, "- [ ] <!-- gpu-rightsizing:rebase -->", "- [x] <!-- gpu-rightsizing:rebase -->", 1)
}

func result(rep *publish.Report, branch string) publish.Result {
	for _, r := range rep.Results {
		if r.Branch == branch {
			return r
		}
	}
	return publish.Result{}
}

// TestLookAlikesSteerNothing: a maintainer pushed a commit to the tool's
// branch; a stranger then opens a pull request of the same branch — on
// GitHub from the repository's branch onto another base, on GitLab from a
// fork's branch of that name — with the tool's marker copied into it and
// both boxes ticked. The next run leaves the maintainer's commit and the
// stranger's pull request as they are, and names it as a look-alike; left
// closed, it does not make the change declined.
func TestLookAlikesSteerNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		world func(*testing.T) *forged
	}{
		{name: "github", world: githubForged},
		{name: "gitlab", world: gitlabForged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.world(t)
			at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) // chat upsizes, urgently
			const chat = "gpu-rightsizing/inference/chat"
			rep := f.run(at)
			require.Equal(t, publish.Opened, result(rep, chat).Outcome)
			number, body := f.own(chat)

			// A maintainer's commit on the tool's branch.
			tree := strings.TrimSpace(f.git("rev-parse", chat+"^{tree}"))
			fix := strings.TrimSpace(f.git("commit-tree", tree, "-p", chat, "-m", "a maintainer's fix"))
			f.git("update-ref", "refs/heads/"+chat, fix)

			copied := strings.ReplaceAll(body, "- [ ] <!--", "- [x] <!--")
			require.Contains(t, copied, "- [x] <!-- gpu-rightsizing:rebase -->")
			n := f.stranger(chat, copied)
			title, before, _ := f.pull(n)

			rep = f.run(at)
			r := result(rep, chat)
			require.Equal(t, publish.Kept, r.Outcome, "%s", r.Detail)
			require.Equal(t, number, r.Number, "the tool's own pull request is the one it speaks of")
			require.Equal(t, fix, strings.TrimSpace(f.git("rev-parse", chat)), "the maintainer's commit is untouched")
			gotTitle, gotBody, state := f.pull(n)
			require.Equal(t, []string{title, before}, []string{gotTitle, gotBody}, "the stranger's pull request is untouched")
			require.Contains(t, []string{"open", "opened"}, state)
			require.Len(t, rep.LookAlikes, 1)
			require.Equal(t, n, rep.LookAlikes[0].Number)

			// Closed by the stranger, it declines nothing: an urgent
			// upsize counted as declined would stop the live fast path.
			f.close(n)
			rep = f.run(at)
			r = result(rep, chat)
			require.NotEqual(t, publish.Declined, r.Outcome, "%s", r.Detail)
			require.Equal(t, publish.Kept, r.Outcome, "%s", r.Detail)
			require.Equal(t, fix, strings.TrimSpace(f.git("rev-parse", chat)))
			gotTitle, gotBody, _ = f.pull(n)
			require.Equal(t, []string{title, before}, []string{gotTitle, gotBody})
		})
	}
}

// TestBoxTickedByWhoMayPush: a box ticked in the tool's own pull request
// counts when whoever ticked it may push. On GitHub only its author and
// people with write access may edit its body, so a triage user cannot
// tick it; on GitLab a person whose role no longer lets them push is no
// longer trusted with the box they ticked, which the run reads from the
// system notes and the members API.
func TestBoxTickedByWhoMayPush(t *testing.T) {
	for _, tt := range []struct {
		name  string
		world func(*testing.T) *forged
	}{
		{name: "github", world: githubForged},
		{name: "gitlab", world: gitlabForged},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.world(t)
			at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			const chat = "gpu-rightsizing/inference/chat"
			f.run(at)
			number, _ := f.own(chat)
			head := strings.TrimSpace(f.git("rev-parse", chat))

			require.Error(t, f.tick("stranger", number), "the forge refuses a body edit by one who may not push")

			require.NoError(t, f.tick("writer", number))
			f.demote("writer")
			rep := f.run(at)
			r := result(rep, chat)
			if tt.name == "github" {
				// GitHub cannot say who edited a body: it lets only those
				// who may push do it, so the box counts.
				require.Equal(t, publish.Updated, r.Outcome, "%s", r.Detail)
				require.Contains(t, r.Detail, "as asked in the pull request")
				return
			}
			require.Equal(t, publish.Unchanged, r.Outcome, "%s", r.Detail)
			require.Contains(t, r.Detail, "writer changed its body and may not push")
			require.Equal(t, head, strings.TrimSpace(f.git("rev-parse", chat)), "the branch did not move")

			f.promote("writer")
			rep = f.run(at)
			r = result(rep, chat)
			require.Equal(t, publish.Updated, r.Outcome, "%s", r.Detail)
			require.Contains(t, r.Detail, "as asked in the pull request")
		})
	}
}
