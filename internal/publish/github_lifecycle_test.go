package publish_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
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
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// quickstartFiles is the quickstart repository's manifests and policies.
func quickstartFiles(t *testing.T) map[string]string {
	return testenv.DirFiles(t, quickstart, ".om")
}

// lifecycle is a GitOps repository on a git server, a fake GitHub over
// it and the GitHub forge, run after run, with everything the runs said
// kept for inspection.
type lifecycle struct {
	git     *testenv.GitServer
	fake    *forge.FakeGitHub
	forge   *scm.GitHub
	src     *openmetrics.Recorded
	logs    *bytes.Buffer
	said    []string // reports, errors, details
	workdir string   // every clone is under it
	runs    int
}

func newLifecycle(t *testing.T, app bool) *lifecycle {
	t.Helper()
	l := &lifecycle{git: testenv.NewGitServer(t), logs: &bytes.Buffer{}, workdir: t.TempDir()}
	l.git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	l.fake = forge.NewFakeGitHub(t, l.git, "acme", "gitops")
	cfg := scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: l.fake.BaseURL(), Token: l.fake.Token,
		Sleep:  func(context.Context, time.Duration) error { return nil },
		Logger: slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if app {
		cfg.Token, cfg.AppID, cfg.InstallationID, cfg.PrivateKeyFile = "", l.fake.AppID, l.fake.InstallationID, l.fake.AppKeyFile
	}
	forge, err := scm.NewGitHub(context.Background(), cfg)
	require.NoError(t, err)
	l.forge = forge
	l.src, err = openmetrics.OpenRecorded(filepath.Join(quickstart, "metrics.om"))
	require.NoError(t, err)
	return l
}

// run clones the base, plans at at and publishes, as `recommender run`
// does.
func (l *lifecycle) run(t *testing.T, at time.Time) *publish.Report {
	t.Helper()
	ctx := context.Background()
	l.runs++
	logger := slog.New(slog.NewTextHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	g, err := scm.Clone(ctx, l.forge.CloneURL(), "main", filepath.Join(l.workdir, fmt.Sprintf("run-%02d", l.runs)), l.forge.GitAuth())
	require.NoError(t, err)
	p, err := plan.Make(ctx, plan.Options{Repo: g.Dir(), At: at, Source: l.src, DefaultNamespace: "default", Logger: logger})
	require.NoError(t, err)
	rep, err := publish.Run(ctx, g, l.forge, p, publish.Options{Base: "main", Source: "metrics.om",
		Labels: []string{"gpu"}, Reviewers: []string{"alice"}, Now: func() time.Time { return at }, Logger: logger})
	require.NoError(t, err)
	for _, r := range rep.Results {
		l.said = append(l.said, fmt.Sprintf("%s %s %s #%d %s %s", r.Key, r.Branch, r.Outcome, r.Number, r.URL, r.Detail))
	}
	require.False(t, rep.Failed(), "run %d at %s: %v", l.runs, at, l.said)
	return rep
}

// heads is every branch of the bare repository and its commit.
func (l *lifecycle) heads(t *testing.T) string {
	return l.git.Git(t, "acme/gitops", "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
}

// differs reports whether branch holds anything main does not.
func (l *lifecycle) differs(t *testing.T, branch string) bool {
	return strings.TrimSpace(l.git.Git(t, "acme/gitops", "diff", "--name-only", "main", branch)) != ""
}

// checkInvariants holds after every run.
func (l *lifecycle) checkInvariants(t *testing.T, rep *publish.Report) {
	t.Helper()
	open := map[string]int{}
	for _, p := range l.fake.Pulls() {
		if p.State != "open" {
			continue
		}
		open[p.Head]++
		require.Equal(t, 1, open[p.Head], "a second open pull request for %s (#%d)", p.Head, p.Number)
		require.True(t, l.differs(t, p.Head), "#%d is empty: %s holds nothing main does not", p.Number, p.Head)
	}
	for _, r := range rep.Results {
		pr, _ := l.fake.Pull(r.Number)
		switch r.Outcome {
		case publish.Opened, publish.Updated, publish.Unchanged:
			if r.Number > 0 {
				require.Equal(t, "open", pr.State, "%s #%d", r.Outcome, r.Number)
				require.Equal(t, r.Branch, pr.Head)
			}
		case publish.Closed:
			require.Equal(t, "closed", pr.State)
			require.False(t, pr.Merged)
			require.NotEmpty(t, pr.Comments)
			require.Contains(t, pr.Comments[len(pr.Comments)-1], "The recommendation is gone")
		case publish.Declined:
			require.Equal(t, "closed", pr.State)
			require.False(t, pr.Merged)
		}
	}
}

// merged checks that main holds exactly what the merged branch proposed.
func (l *lifecycle) checkMerged(t *testing.T, p forge.FakePull) {
	t.Helper()
	changed := strings.Fields(l.git.Git(t, "acme/gitops", "diff", "--name-only", p.MergeCommit+"^1..."+p.Head))
	require.NotEmpty(t, changed)
	for _, path := range changed {
		require.Equal(t, l.git.Git(t, "acme/gitops", "show", p.Head+":"+path), l.git.Git(t, "acme/gitops", "show", "main:"+path),
			"main holds %s as #%d proposed", path, p.Number)
	}
}

// person acts on the pull requests between runs, as reviewers would.
func (l *lifecycle) person(t *testing.T, step int) string {
	t.Helper()
	var open []forge.FakePull
	for _, p := range l.fake.Pulls() {
		if p.State == "open" {
			open = append(open, p)
		}
	}
	if len(open) == 0 {
		return ""
	}
	first := open[0]
	switch step % 6 {
	case 1:
		require.NoError(t, l.fake.Merge(first.Number))
		p, _ := l.fake.Pull(first.Number)
		l.checkMerged(t, p)
		return fmt.Sprintf("merged #%d", first.Number)
	case 3:
		require.NoError(t, l.fake.ClosePR(first.Number))
		return fmt.Sprintf("declined #%d", first.Number)
	case 4:
		// A title edited by hand; the body and its marker stay.
		require.NoError(t, l.fake.Edit(first.Number, "Reviewed: "+first.Title, first.Body))
		return fmt.Sprintf("edited #%d", first.Number)
	}
	return ""
}

func TestGitHubLifecycle(t *testing.T) {
	l := newLifecycle(t, false)
	newest := l.src.Span().Newest
	seen := map[publish.Outcome]int{}
	merges := 0
	for step := range 30 {
		did := l.person(t, step)
		if strings.HasPrefix(did, "merged") {
			merges++
		}
		// Across the last three hours of the recording, then back and
		// forth, so that recommendations appear, move and vanish.
		at := newest.Add(-time.Duration((step*37)%180) * time.Minute)
		writes, heads := l.fake.Writes(), l.heads(t)
		rep := l.run(t, at)
		l.checkInvariants(t, rep)
		changed := rep.Count(publish.Opened) + rep.Count(publish.Updated) + rep.Count(publish.Closed)
		for _, r := range rep.Results {
			seen[r.Outcome]++
		}
		if changed == 0 {
			require.Equal(t, writes, l.fake.Writes(), "step %d (%s): nothing changed, yet the run wrote to GitHub", step, did)
			require.Equal(t, heads, l.heads(t), "step %d (%s): nothing changed, yet a branch moved", step, did)
		}

		// The same inputs again write nothing (docs/design.md §10.4).
		writes, heads = l.fake.Writes(), l.heads(t)
		again := l.run(t, at)
		l.checkInvariants(t, again)
		require.Zero(t, again.Count(publish.Opened)+again.Count(publish.Updated)+again.Count(publish.Closed),
			"step %d: a second run on the same inputs changed something: %v", step, again.Results)
		require.Equal(t, writes, l.fake.Writes(), "step %d: a second run on the same inputs wrote to GitHub", step)
		require.Equal(t, heads, l.heads(t), "step %d: a second run on the same inputs moved a branch", step)
	}
	t.Logf("outcomes over 60 runs: %v; %d merges; %d requests", seen, merges, len(l.fake.Requests()))
	require.Positive(t, seen[publish.Opened])
	require.Positive(t, merges)
	require.Positive(t, seen[publish.Declined], "a declined pull request stays declined")
}

// TestTokensNeverLeak runs a lifecycle as a GitHub App, through rate
// limits and server errors, and searches everything it produced for the
// installation token and the personal token (docs/design.md §10.6).
func TestTokensNeverLeak(t *testing.T) {
	l := newLifecycle(t, true)
	secrets := []string{l.forge.GitAuth().Token, l.fake.Token}
	require.True(t, strings.HasPrefix(secrets[0], "ghs_fake"))
	newest := l.src.Span().Newest
	for step := range 8 {
		switch step {
		case 2:
			l.fake.Fail(1, forge.SecondaryRateLimit(3*time.Second))
		case 4:
			l.fake.Fail(2, forge.StatusFault(502))
		case 6:
			l.fake.Fail(1, forge.PrimaryRateLimit(time.Now().Add(5*time.Second)))
		}
		l.person(t, step)
		l.run(t, newest.Add(-time.Duration(step*20)*time.Minute))
	}
	// A run whose token GitHub refuses fails with an error that names
	// the cause and not the token.
	l.fake.Fail(1, forge.StatusFault(401))
	ctx := context.Background()
	g, err := scm.Clone(ctx, l.forge.CloneURL(), "main", filepath.Join(l.workdir, "refused"), l.forge.GitAuth())
	require.NoError(t, err)
	p, err := plan.Make(ctx, plan.Options{Repo: g.Dir(), At: newest, Source: l.src, DefaultNamespace: "default"})
	require.NoError(t, err)
	_, err = publish.Run(ctx, g, l.forge, p, publish.Options{Base: "main"})
	require.ErrorIs(t, err, scm.ErrUnauthorized)
	l.said = append(l.said, err.Error())
	// And git with a wrong token.
	_, err = scm.Clone(ctx, l.forge.CloneURL(), "main", filepath.Join(l.workdir, "wrong"), scm.Auth{Token: secrets[0] + "x"})
	require.Error(t, err)
	l.said = append(l.said, err.Error())

	var everything []string
	everything = append(everything, l.said...)
	everything = append(everything, l.logs.String())
	for _, pr := range l.fake.Pulls() {
		everything = append(everything, pr.Title, pr.Body, pr.Head)
		everything = append(everything, pr.Comments...)
	}
	// Every object in the repository: commit messages, trees, files.
	everything = append(everything, l.git.Git(t, "acme/gitops", "cat-file", "--batch-all-objects", "--batch"))
	everything = append(everything, l.git.Git(t, "acme/gitops", "log", "--all", "--format=%an %ae %cn %ce %B"))
	// Every file the runs wrote: clones, their git config and objects.
	err = filepath.WalkDir(l.workdir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		everything = append(everything, path+"\n"+string(b))
		return err
	})
	require.NoError(t, err)
	require.Greater(t, len(everything), 50)

	for _, s := range secrets {
		for _, text := range everything {
			require.NotContains(t, text, s)
		}
	}
	require.NotEmpty(t, l.fake.Pulls(), "the lifecycle published something")
	require.Contains(t, l.logs.String(), "waiting before trying again", "the faults were met")
}
