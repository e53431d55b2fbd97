package publish_test

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const quickstart = "../../examples/quickstart"

var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// gitops is a GitOps repository holding the quickstart on main, with the
// local forge beside it: what a person and the tool share.
type gitops struct {
	t     *testing.T
	git   string
	dir   string
	forge *scm.Local
}

func newGitops(t *testing.T) *gitops {
	t.Helper()
	g := &gitops{t: t, git: testenv.LookPath(t, "git"), dir: t.TempDir()}
	require.NoError(t, os.CopyFS(g.dir, os.DirFS(quickstart)))
	require.NoError(t, os.Remove(filepath.Join(g.dir, "metrics.om")))
	g.run("init", "-q", "-b", "main")
	g.run("add", "-A")
	g.run("commit", "-q", "-m", "initial")
	var err error
	g.forge, err = scm.NewLocal(filepath.Join(g.dir, ".git", "gpu-rightsizing", "pulls"))
	require.NoError(t, err)
	return g
}

// run runs git in the repository as a person would.
func (g *gitops) run(args ...string) string {
	g.t.Helper()
	cmd := exec.Command(g.git, args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=person", "GIT_AUTHOR_EMAIL=p@example.com",
		"GIT_COMMITTER_NAME=person", "GIT_COMMITTER_EMAIL=p@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(g.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func (g *gitops) head(ref string) string { return g.run("rev-parse", ref) }

// publish clones main, plans on the clone at t with src, and publishes.
func (g *gitops) publish(src plan.UsageSource, when time.Time, o publish.Options) *publish.Report {
	g.t.Helper()
	ctx := context.Background()
	repo, err := scm.Clone(ctx, g.dir, "main", filepath.Join(g.t.TempDir(), "checkout"), scm.Auth{})
	require.NoError(g.t, err)
	p, err := plan.Make(ctx, plan.Options{Repo: repo.Dir(), At: when, Source: src})
	require.NoError(g.t, err)
	o.Base = "main"
	o.Now = func() time.Time { return when }
	rep, err := publish.Run(ctx, repo, g.forge, p, o)
	require.NoError(g.t, err)
	return rep
}

func outcomes(rep *publish.Report) map[string]publish.Outcome {
	out := map[string]publish.Outcome{}
	for _, r := range rep.Results {
		out[r.Key] = r.Outcome
	}
	return out
}

func recorded(t *testing.T) *openmetrics.Recorded {
	t.Helper()
	src, err := openmetrics.OpenRecorded(quickstart + "/metrics.om")
	require.NoError(t, err)
	return src
}

const (
	chat      = "inference/Deployment/chat"
	chatBr    = "gpu-rightsizing/inference/chat"
	translate = "inference/Deployment/translate"
)

// TestRunOpensOnceThenWritesNothing: the first run opens a pull request
// per changed workload, each a branch of one commit on main; the second,
// on the same inputs, writes nothing at all.
func TestRunOpensOnceThenWritesNothing(t *testing.T) {
	g := newGitops(t)
	src := recorded(t)
	rep := g.publish(src, at, publish.Options{})
	require.Equal(t, map[string]publish.Outcome{
		"inference/Deployment/asr-whisper": publish.Opened, chat: publish.Opened,
		"inference/Deployment/summarize": publish.Opened, translate: publish.Opened,
	}, outcomes(rep))
	main := g.head("main")
	for _, r := range rep.Results {
		require.Equal(t, main, g.head(r.Branch+"^"), "%s is one commit on main", r.Branch)
		require.NotEmpty(t, g.run("diff", "--name-only", "main", r.Branch), "%s is not empty", r.Branch)
	}
	require.Empty(t, g.run("status", "--porcelain"), "the work tree stays clean")
	prs, err := g.forge.All()
	require.NoError(t, err)
	require.Len(t, prs, 4)
	chatPR := prs[1]
	require.Equal(t, chatBr, chatPR.Branch)
	require.Contains(t, chatPR.Body, "| `inference/Deployment/chat` | 0.50 → **0.72** | reactive upsize (compute) |")
	require.Contains(t, chatPR.Body, "```mermaid\nxychart-beta")
	require.Contains(t, chatPR.Body, "`--gpu-memory-utilization` 0.45 → **0.64**")
	require.Contains(t, chatPR.Body, "HAMi-core is not enforcing memory")
	require.Equal(t, []string{"gpu-rightsizing", "upsize", "urgent"}, chatPR.Labels)

	before := snapshot(t, g)
	rep = g.publish(src, at, publish.Options{})
	for key, o := range outcomes(rep) {
		require.Equal(t, publish.Unchanged, o, key)
	}
	require.Equal(t, before, snapshot(t, g), "an identical run writes nothing")
}

// snapshot is every branch head and every pull request file.
func snapshot(t *testing.T, g *gitops) map[string]string {
	t.Helper()
	s := map[string]string{"refs": g.run("for-each-ref", "--format=%(refname) %(objectname)")}
	entries, err := os.ReadDir(g.forge.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		s["pulls"] = "no directory"
		return s
	}
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(g.forge.Dir(), e.Name()))
		require.NoError(t, err)
		s[e.Name()] = string(b)
	}
	return s
}

// TestRunLifecycle: a base that moves under a change regenerates it; a
// pull request closed unmerged stays declined; a merged one leaves the
// base holding the recommended value; a change that fits now is closed;
// data in doubt leaves pull requests alone; a branch a person moved is
// never overwritten.
func TestRunLifecycle(t *testing.T) {
	g := newGitops(t)
	src := recorded(t)
	g.publish(src, at, publish.Options{})

	// The base changes chat's file under the change: regenerate it.
	chatFile := filepath.Join(g.dir, "apps/chat/deployment.yaml")
	b, err := os.ReadFile(chatFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(chatFile, append(b, []byte("# reviewed by the platform team\n")...), 0o644))
	g.run("commit", "-q", "-am", "chat: a comment")
	rep := g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Updated, outcomes(rep)[chat], "%v", rep.Results)
	require.Equal(t, g.head("main"), g.head(chatBr+"^"), "the branch is regenerated on the new base, not rebased")
	require.Contains(t, g.run("show", chatBr+":apps/chat/deployment.yaml"), "# reviewed by the platform team")
	require.Equal(t, publish.Unchanged, outcomes(rep)[translate])

	// A person closes translate's pull request unmerged: declined.
	translatePR := prNumber(t, g, "gpu-rightsizing/inference/translate")
	require.NoError(t, g.forge.SetState(translatePR, scm.Closed, ""))
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Declined, outcomes(rep)[translate])
	open, err := g.forge.ListOpen(context.Background(), "gpu-rightsizing/")
	require.NoError(t, err)
	require.Len(t, open, 3, "no new pull request for a declined change")

	// A person pushes to chat's branch: the tool leaves it and says so,
	// even when the base moves and the change would be regenerated.
	g.run("checkout", "-q", chatBr)
	require.NoError(t, os.WriteFile(filepath.Join(g.dir, "NOTES"), []byte("mine\n"), 0o644))
	g.run("add", "NOTES")
	g.run("commit", "-q", "-m", "a person's commit")
	mine := g.head("HEAD")
	g.run("checkout", "-q", "main")
	require.NoError(t, os.WriteFile(chatFile, append(b, []byte("# moved again\n")...), 0o644))
	g.run("commit", "-q", "-am", "chat: another comment")
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Kept, outcomes(rep)[chat])
	require.Equal(t, mine, g.head(chatBr), "never overwrite a branch someone else moved")
	require.Equal(t, publish.Unchanged, outcomes(rep)["inference/Deployment/summarize"])

	// A person merges summarize's pull request: main holds its value.
	summarizeBr := "gpu-rightsizing/inference/summarize"
	g.run("merge", "-q", "--no-ff", "-m", "merge", summarizeBr)
	require.NoError(t, g.forge.SetState(prNumber(t, g, summarizeBr), scm.Merged, ""))
	require.Contains(t, g.run("show", "main:apps/summarize/deployment.yaml"), `gpu-fraction: "0.33"`)
	merged := prNumber(t, g, summarizeBr)
	rep = g.publish(src, at, publish.Options{})
	for _, r := range rep.Results {
		require.NotEqual(t, merged, r.Number, "a merged pull request is history: %v", r)
	}
	pr, err := g.forge.Get(merged)
	require.NoError(t, err)
	require.Equal(t, scm.Merged, pr.State)

	// Usage that is in doubt (the query fails): open pull requests stay.
	failing := failingSource{}
	rep = g.publish(failing, at, publish.Options{})
	for _, r := range rep.Results {
		require.Equal(t, publish.Kept, r.Outcome, "%s: %s", r.Key, r.Detail)
	}

	// Ten minutes earlier, chat's spike had not happened: its pull
	// request is closed with the reason. (Its branch was moved by a
	// person, so it has been failing to update meanwhile; closing it is
	// still right, and the branch is left as it is.)
	rep = g.publish(src, at.Add(-10*time.Minute), publish.Options{})
	require.Equal(t, publish.Closed, outcomes(rep)[chat], "%v", rep.Results)
	pr, err = g.forge.Get(prNumber(t, g, chatBr))
	require.NoError(t, err)
	require.Equal(t, scm.Closed, pr.State)
	require.Contains(t, pr.Body, "The recommendation is gone")
	require.Equal(t, mine, g.head(chatBr))

	// At 12:00 chat needs its upsize again. The tool closed the pull
	// request itself, so it is not declined; but the branch holds a
	// person's commit, which is never overwritten.
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Kept, outcomes(rep)[chat], "%v", rep.Results)
	require.Equal(t, mine, g.head(chatBr))
	// Once the person deletes their branch, a new pull request opens.
	g.run("branch", "-q", "-D", chatBr)
	rep = g.publish(src, at, publish.Options{})
	require.Equal(t, publish.Opened, outcomes(rep)[chat], "%v", rep.Results)
	require.Equal(t, g.head("main"), g.head(chatBr+"^"))
}

// TestRunDryRunWritesNothing: a dry run says what it would do and writes
// nothing.
func TestRunDryRunWritesNothing(t *testing.T) {
	g := newGitops(t)
	before := snapshot(t, g)
	rep := g.publish(recorded(t), at, publish.Options{DryRun: true})
	require.Equal(t, 4, rep.Count(publish.Opened))
	require.Equal(t, before, snapshot(t, g))
}

// TestRunCaps: at most MaxNew new pull requests a run.
func TestRunCaps(t *testing.T) {
	g := newGitops(t)
	rep := g.publish(recorded(t), at, publish.Options{MaxNew: 1})
	require.Equal(t, 1, rep.Count(publish.Opened))
	require.Equal(t, 3, rep.Count(publish.Capped))
	rep = g.publish(recorded(t), at, publish.Options{MaxOpen: 2})
	require.Equal(t, 1, rep.Count(publish.Opened))
	require.Equal(t, 1, rep.Count(publish.Unchanged))
}

func prNumber(t *testing.T, g *gitops, branch string) int {
	t.Helper()
	prs, err := g.forge.Find(context.Background(), branch)
	require.NoError(t, err)
	require.NotEmpty(t, prs, branch)
	return prs[0].Number
}

type failingSource struct{}

func (failingSource) Usage(context.Context, usage.Query) (usage.Result, error) {
	return usage.Result{}, errors.New("prometheus: 503 Service Unavailable")
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestBodyGolden pins the body of chat's pull request, the example the
// README shows: regenerate with -update and read the diff.
func TestBodyGolden(t *testing.T) {
	g := newGitops(t)
	g.publish(recorded(t), at, publish.Options{Source: "the recording metrics.om"})
	pr, err := g.forge.Get(prNumber(t, g, chatBr))
	require.NoError(t, err)
	got := "# " + pr.Title + "\n\n" + pr.Body
	golden := filepath.Join("testdata", "chat-pull-request.md")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}

// TestBodyWarnings: a warning about a workload (a KAI queue over quota)
// is said in its pull request's body, under the table, and in no other.
func TestBodyWarnings(t *testing.T) {
	g := newGitops(t)
	warning := "KAI queue inference: the upsize takes its workloads (in inference) from 0.9 to 1.05 GPUs, over its GPU quota of 1"
	g.publish(recorded(t), at, publish.Options{Source: "the recording metrics.om", Warnings: map[string][]string{chat: {warning}}})
	pr, err := g.forge.Get(prNumber(t, g, chatBr))
	require.NoError(t, err)
	require.Contains(t, pr.Body, "\n**Warning** (`inference/Deployment/chat`): "+warning+".\n")
	other, err := g.forge.Get(prNumber(t, g, "gpu-rightsizing/inference/translate"))
	require.NoError(t, err)
	require.NotContains(t, other.Body, "**Warning**")
}

// TestBodyFleetFindings: what the fleet report found of a workload (its
// rollout would stall) is said in its pull request's body, in a section
// of its own, and in no other.
func TestBodyFleetFindings(t *testing.T) {
	g := newGitops(t)
	finding := "the rollout of chat to 0.72 stalls after 0 of 1 new pods: no GPU of the pool has 0.72 free while the old pods still hold theirs; maxSurge: 0, maxUnavailable: 1 fits"
	g.publish(recorded(t), at, publish.Options{Source: "the recording metrics.om", Findings: map[string][]string{chat: {finding}}})
	pr, err := g.forge.Get(prNumber(t, g, chatBr))
	require.NoError(t, err)
	require.Contains(t, pr.Body, "\n### Fleet findings\n\n- `inference/Deployment/chat`: "+finding+".\n")
	other, err := g.forge.Get(prNumber(t, g, "gpu-rightsizing/inference/translate"))
	require.NoError(t, err)
	require.NotContains(t, other.Body, "Fleet findings")
}

// racingGit is a checkout whose one push a person races: before it goes,
// race runs. It counts the pushes and the branches in each.
type racingGit struct {
	*scm.Repo
	race   func()
	pushes [][]string
}

func (g *racingGit) PushAll(ctx context.Context, updates []scm.Update) []error {
	var branches []string
	for _, u := range updates {
		branches = append(branches, u.Branch)
	}
	g.pushes = append(g.pushes, branches)
	if g.race != nil {
		g.race()
	}
	return g.Repo.PushAll(ctx, updates)
}

// TestRunPushesOnceAndALeaseFailsAlone: a run commits every change set,
// pushes all their branches in one push, then opens the pull requests. A
// branch a person created after the run read the branches is not
// overwritten: that change set fails, alone, and opens nothing; the
// others open. The next run leaves the person's branch alone.
func TestRunPushesOnceAndALeaseFailsAlone(t *testing.T) {
	ctx := context.Background()
	g := newGitops(t)
	repo, err := scm.Clone(ctx, g.dir, "main", filepath.Join(t.TempDir(), "checkout"), scm.Auth{})
	require.NoError(t, err)
	p, err := plan.Make(ctx, plan.Options{Repo: repo.Dir(), At: at, Source: recorded(t)})
	require.NoError(t, err)
	racing := &racingGit{Repo: repo, race: func() { g.run("branch", chatBr, "main") }}
	rep, err := publish.Run(ctx, racing, g.forge, p, publish.Options{Base: "main", Now: func() time.Time { return at }})
	require.NoError(t, err)

	require.Len(t, racing.pushes, 1, "one push for the run")
	require.Len(t, racing.pushes[0], 4)
	require.Equal(t, 3, rep.Count(publish.Opened))
	require.Equal(t, 1, rep.Count(publish.Failed))
	for _, r := range rep.Results {
		if r.Key == chat {
			require.Equal(t, publish.Failed, r.Outcome)
			require.Contains(t, r.Detail, scm.ErrLeaseBroken.Error())
			continue
		}
		require.Equal(t, publish.Opened, r.Outcome, r.Key)
		require.NotZero(t, r.Number, r.Key)
		require.Equal(t, g.head(r.Branch+"~1"), g.head("main"), "%s: one commit on main", r.Branch)
	}
	require.Equal(t, g.head("main"), g.head(chatBr), "the person's branch is not overwritten")
	prs, err := g.forge.Find(ctx, chatBr)
	require.NoError(t, err)
	require.Empty(t, prs, "no pull request for a branch the tool could not push")

	rep = g.publish(recorded(t), at, publish.Options{})
	require.Equal(t, publish.Kept, outcomes(rep)[chat])
	require.Equal(t, 3, rep.Count(publish.Unchanged))
	require.Equal(t, g.head("main"), g.head(chatBr))
}
