package publish_test

import (
	"context"
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
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// labelled is one forge as TestLabelsFollowTheChange uses it.
type labelled struct {
	forge publish.Forge
	// clone is a checkout of main, for a run.
	clone func() *scm.Repo
	// commit changes a file on main, as a person merging by hand.
	commit func(path, from, to string)
	// pull is the title and labels of the pull request of branch.
	pull func(branch string) (number int, title string, labels []string)
}

// personCommit clones the repository at url, replaces from with to in
// path and pushes the commit to main as a person.
func personCommit(t *testing.T, url, path, from, to string) {
	t.Helper()
	work := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command(testenv.LookPath(t, "git"), args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=A Person", "GIT_AUTHOR_EMAIL=person@example.com",
			"GIT_COMMITTER_NAME=A Person", "GIT_COMMITTER_EMAIL=person@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("clone", "-q", url, ".")
	b, err := os.ReadFile(filepath.Join(work, path))
	require.NoError(t, err)
	require.Contains(t, string(b), from)
	require.NoError(t, os.WriteFile(filepath.Join(work, path), []byte(strings.Replace(string(b), from, to, 1)), 0o644))
	git("commit", "-qam", "by hand: "+path)
	git("push", "-q", "origin", "HEAD:main")
}

func githubLabelled(t *testing.T, files map[string]string) labelled {
	git := testenv.NewGitServer(t)
	git.NewRepo(t, "acme/gitops", files)
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	f, err := scm.NewGitHub(context.Background(), scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: fake.BaseURL(), Token: fake.Token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return labelled{forge: f,
		clone: func() *scm.Repo {
			g, err := scm.Clone(context.Background(), f.CloneURL(), "main", filepath.Join(t.TempDir(), "checkout"), f.GitAuth())
			require.NoError(t, err)
			return g
		},
		commit: func(path, from, to string) { personCommit(t, git.Dir("acme/gitops"), path, from, to) },
		pull: func(branch string) (int, string, []string) {
			for _, p := range fake.Pulls() {
				if p.Head == branch && p.State == "open" {
					return p.Number, p.Title, p.Labels
				}
			}
			t.Fatalf("no open pull request for %s", branch)
			return 0, "", nil
		},
	}
}

func gitlabLabelled(t *testing.T, files map[string]string) labelled {
	srv := testenv.NewGitServer(t)
	const name = "infra/gitops"
	url := srv.NewRepo(t, name, files)
	fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: name, Dir: srv.Dir(name), CloneURL: url, Token: srv.Token})
	f, err := scm.NewGitLab(context.Background(), scm.GitLabConfig{BaseURL: fake.URL, Project: name, Token: srv.Token,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return labelled{forge: f,
		clone: func() *scm.Repo {
			g, err := scm.Clone(context.Background(), f.CloneURL(), "main", filepath.Join(t.TempDir(), "checkout"), f.GitAuth())
			require.NoError(t, err)
			return g
		},
		commit: func(path, from, to string) { personCommit(t, srv.Dir(name), path, from, to) },
		pull: func(branch string) (int, string, []string) {
			for _, mr := range fake.MergeRequests() {
				if mr.SourceBranch == branch && mr.State == "opened" {
					return int(mr.IID), mr.Title, mr.Labels
				}
			}
			t.Fatalf("no open merge request for %s", branch)
			return 0, "", nil
		},
	}
}

func localLabelled(t *testing.T, files map[string]string) labelled {
	dir := t.TempDir()
	for p, s := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644))
	}
	g := &gitops{t: t, git: testenv.LookPath(t, "git"), dir: dir}
	g.run("init", "-q", "-b", "main")
	g.run("add", "-A")
	g.run("commit", "-q", "-m", "initial")
	f, err := scm.NewLocal(filepath.Join(dir, ".git", "gpu-rightsizing", "pulls"))
	require.NoError(t, err)
	return labelled{forge: f,
		clone: func() *scm.Repo {
			r, err := scm.Clone(context.Background(), dir, "main", filepath.Join(t.TempDir(), "checkout"), scm.Auth{})
			require.NoError(t, err)
			return r
		},
		commit: func(path, from, to string) {
			b, err := os.ReadFile(filepath.Join(dir, path))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, path), []byte(strings.Replace(string(b), from, to, 1)), 0o644))
			g.run("commit", "-qam", "by hand")
		},
		pull: func(branch string) (int, string, []string) {
			all, err := f.All()
			require.NoError(t, err)
			for _, pr := range all {
				if pr.Branch == branch && pr.State == scm.Open {
					return pr.Number, pr.Title, pr.Labels
				}
			}
			t.Fatalf("no open local pull request for %s", branch)
			return 0, "", nil
		},
	}
}

// TestLabelsFollowTheChange: an urgent upsize's pull request carries
// upsize and urgent; once the base makes the same workload a scale-back,
// its pull request is labelled scaleBack, on GitHub, GitLab and the local
// stand-in alike, and the label a person added stays.
func TestLabelsFollowTheChange(t *testing.T) {
	const (
		file   = "apps/summarize/deployment.yaml"
		branch = "gpu-rightsizing/inference/summarize"
	)
	files := quickstartFiles(t)
	src, err := openmetrics.OpenRecorded(filepath.Join(quickstart, "metrics.om"))
	require.NoError(t, err)
	at := src.Span().Newest
	for _, tt := range []struct {
		name string
		make func(*testing.T, map[string]string) labelled
	}{
		{name: "GitHub", make: githubLabelled},
		{name: "GitLab", make: gitlabLabelled},
		{name: "local", make: localLabelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := map[string]string{}
			for p, s := range files {
				start[p] = s
			}
			// summarize on a tenth of a GPU: its compute peaks above it.
			require.Contains(t, start[file], `gpu-fraction: "0.6"`)
			start[file] = strings.Replace(start[file], `gpu-fraction: "0.6"`, `gpu-fraction: "0.1"`, 1)
			f := tt.make(t, start)
			run := func() publish.Result {
				t.Helper()
				ctx := context.Background()
				g := f.clone()
				p, err := plan.Make(ctx, plan.Options{Repo: g.Dir(), At: at, Source: src})
				require.NoError(t, err)
				rep, err := publish.Run(ctx, g, f.forge, p, publish.Options{Base: "main", Labels: []string{"gpu"}, Now: func() time.Time { return at }})
				require.NoError(t, err)
				require.False(t, rep.Failed(), "%v", rep.Results)
				return result(rep, branch)
			}

			require.Equal(t, publish.Opened, run().Outcome)
			n, title, labels := f.pull(branch)
			require.True(t, strings.HasPrefix(title, "Urgent: upsize"), title)
			require.ElementsMatch(t, []string{"gpu", "gpu-rightsizing", "upsize", "urgent"}, labels)

			require.NoError(t, f.forge.Relabel(context.Background(), n, []string{"reviewed"}, nil))
			f.commit(file, `gpu-fraction: "0.1"`, `gpu-fraction: "0.6"`)
			res := run()
			require.Equal(t, publish.Updated, res.Outcome, res.Detail)
			_, title, labels = f.pull(branch)
			require.True(t, strings.HasPrefix(title, "Scale back"), title)
			require.ElementsMatch(t, []string{"gpu", "gpu-rightsizing", "reviewed", "scaleBack"}, labels)

			// Labels as they should be: nothing more to write.
			require.Equal(t, publish.Unchanged, run().Outcome)
		})
	}
}
