package scm_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// ghEnv is a git server with a repository, a fake GitHub over it, and a
// forge connected to the fake whose clock never waits for real.
type ghEnv struct {
	git   *testenv.GitServer
	fake  *forge.FakeGitHub
	forge *scm.GitHub
	now   time.Time
	logs  *bytes.Buffer

	mu    sync.Mutex
	slept []time.Duration
}

func (e *ghEnv) sleeps() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.slept
}

func newGHEnv(t *testing.T, configure func(*scm.GitHubConfig, *forge.FakeGitHub)) *ghEnv {
	t.Helper()
	e := &ghEnv{git: testenv.NewGitServer(t), now: time.Now().Truncate(time.Second), logs: &bytes.Buffer{}}
	e.git.NewRepo(t, "acme/gitops", map[string]string{"app/a.yaml": "gpu: 0.5\n"})
	e.fake = forge.NewFakeGitHub(t, e.git, "acme", "gitops")
	cfg := scm.GitHubConfig{
		Owner: "acme", Repo: "gitops", BaseURL: e.fake.BaseURL(), Token: e.fake.Token,
		Now: func() time.Time { return e.now },
		Sleep: func(_ context.Context, d time.Duration) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.slept = append(e.slept, d)
			return nil
		},
		Logger: slog.New(slog.NewTextHandler(e.logs, nil)),
	}
	if configure != nil {
		configure(&cfg, e.fake)
	}
	forge, err := scm.NewGitHub(context.Background(), cfg)
	require.NoError(t, err)
	e.forge = forge
	return e
}

// pushBranch clones through the forge's URL and credentials and pushes a
// commit changing app/a.yaml to branch.
func (e *ghEnv) pushBranch(t *testing.T, branch, content string) plumbing.Hash {
	t.Helper()
	ctx := context.Background()
	r, err := scm.Clone(ctx, e.forge.CloneURL(), "main", filepath.Join(t.TempDir(), "c"), e.forge.GitAuth())
	require.NoError(t, err)
	h := commit(t, r, content)
	branches, err := r.Branches(ctx, branch)
	require.NoError(t, err)
	require.NoError(t, r.Push(ctx, branch, h, branches[branch]))
	return h
}

func TestGitHubPullRequests(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	require.Equal(t, e.git.RepoURL("acme/gitops"), e.forge.CloneURL())
	require.Equal(t, scm.Auth{Token: e.fake.Token, TokenUser: "x-access-token"}, e.forge.GitAuth())

	e.pushBranch(t, "gpu-rightsizing/a", "gpu: 0.25\n")
	pr, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "Scale a back", Body: "body",
		Labels: []string{"gpu-rightsizing", "scale-back"}, Reviewers: []string{"alice"}, Assignees: []string{"bob"}, Draft: true})
	require.NoError(t, err)
	require.Equal(t, 1, pr.Number)
	require.Equal(t, scm.Open, pr.State)
	require.Equal(t, "gpu-rightsizing/a", pr.Branch)
	require.Equal(t, "main", pr.Base)
	require.True(t, pr.Draft)
	require.Equal(t, []string{"gpu-rightsizing", "scale-back"}, pr.Labels)
	require.Equal(t, e.fake.URL+"/acme/gitops/pull/1", pr.URL)
	got, _ := e.fake.Pull(1)
	require.Equal(t, []string{"alice"}, got.Reviewers)
	require.Equal(t, []string{"bob"}, got.Assignees)
	require.Equal(t, []string{"gpu-rightsizing", "scale-back"}, got.Labels)

	require.NoError(t, e.forge.Update(ctx, 1, "Scale a back more", "body 2"))
	found, err := e.forge.Find(ctx, "gpu-rightsizing/a")
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, "Scale a back more", found[0].Title)
	require.Equal(t, "body 2", found[0].Body)

	// A person merges it: merged, not closed; main holds the change.
	require.NoError(t, e.fake.Merge(1))
	found, err = e.forge.Find(ctx, "gpu-rightsizing/a")
	require.NoError(t, err)
	require.Equal(t, scm.Merged, found[0].State)
	require.Equal(t, "gpu: 0.25\n", e.git.Git(t, "acme/gitops", "show", "main:app/a.yaml"))

	// The next one on the same branch is found first; a person declines it.
	e.pushBranch(t, "gpu-rightsizing/a", "gpu: 0.2\n")
	second, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "again", Body: "b"})
	require.NoError(t, err)
	require.NoError(t, e.fake.ClosePR(second.Number))
	found, err = e.forge.Find(ctx, "gpu-rightsizing/a")
	require.NoError(t, err)
	require.Equal(t, []int{second.Number, 1}, []int{found[0].Number, found[1].Number})
	require.Equal(t, []scm.State{scm.Closed, scm.Merged}, []scm.State{found[0].State, found[1].State})

	// Closing comments first, then closes; closed ones are not listed open.
	e.pushBranch(t, "gpu-rightsizing/b", "gpu: 0.3\n")
	third, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/b", Base: "main", Title: "b", Body: "b"})
	require.NoError(t, err)
	open, err := e.forge.ListOpen(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Equal(t, third.Number, open[0].Number)
	require.NoError(t, e.forge.Close(ctx, third.Number, "The recommendation is gone."))
	closed, _ := e.fake.Pull(third.Number)
	require.Equal(t, "closed", closed.State)
	require.False(t, closed.Merged)
	require.Equal(t, []string{"The recommendation is gone."}, closed.Comments)
	open, err = e.forge.ListOpen(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Empty(t, open)
}

func TestGitHubOpenWhenOneAlreadyExists(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	e.pushBranch(t, "gpu-rightsizing/a", "gpu: 0.25\n")
	first, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "one", Body: "1"})
	require.NoError(t, err)
	// A run that stopped before it recorded the pull request opens it
	// again: GitHub's 422 "already exists" turns into an update.
	again, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "two", Body: "2", Labels: []string{"x"}})
	require.NoError(t, err)
	require.Equal(t, first.Number, again.Number)
	require.Len(t, e.fake.Pulls(), 1)
	got, _ := e.fake.Pull(first.Number)
	require.Equal(t, "two", got.Title)
	require.Equal(t, "2", got.Body)
	require.Equal(t, []string{"x"}, got.Labels)
}

func TestGitHubRefusesAnEmptyPullRequest(t *testing.T) {
	e := newGHEnv(t, nil)
	// A branch equal to main: GitHub says there is nothing to merge.
	e.git.Git(t, "acme/gitops", "branch", "gpu-rightsizing/same", "main")
	_, err := e.forge.Open(context.Background(), scm.NewPullRequest{Branch: "gpu-rightsizing/same", Base: "main", Title: "t", Body: "b"})
	require.ErrorContains(t, err, "No commits between main and gpu-rightsizing/same")
}

func TestGitHubPagination(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, func(c *scm.GitHubConfig, _ *forge.FakeGitHub) { c.PerPage = 2 })
	for i := range 5 {
		b := fmt.Sprintf("gpu-rightsizing/w%d", i)
		e.pushBranch(t, b, fmt.Sprintf("gpu: 0.%d1\n", i))
		_, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: b, Base: "main", Title: b, Body: "b"})
		require.NoError(t, err)
	}
	e.git.Git(t, "acme/gitops", "branch", "other/x", "gpu-rightsizing/w0")
	_, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "other/x", Base: "main", Title: "not ours", Body: "b"})
	require.NoError(t, err)

	before := len(e.fake.Requests())
	open, err := e.forge.ListOpen(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	var branches []string
	for _, pr := range open {
		branches = append(branches, pr.Branch)
	}
	require.Equal(t, []string{"gpu-rightsizing/w0", "gpu-rightsizing/w1", "gpu-rightsizing/w2", "gpu-rightsizing/w3", "gpu-rightsizing/w4"}, branches)
	// Six open pull requests, two a page: three pages, by the Link header.
	require.Len(t, e.fake.Requests()[before:], 3)
}

func TestGitHubErrors(t *testing.T) {
	tests := []struct {
		name      string
		faults    func(now time.Time) []forge.GitHubFault
		wantErr   error
		wantText  []string
		wantSleep []time.Duration
		wantTries int
	}{
		{name: "primary rate limit waits for the reset",
			faults: func(now time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.PrimaryRateLimit(now.Add(30 * time.Second))}
			},
			wantSleep: []time.Duration{31 * time.Second}, wantTries: 2},
		{name: "primary rate limit too long to wait",
			faults: func(now time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.PrimaryRateLimit(now.Add(20 * time.Minute))}
			},
			wantErr:   scm.ErrRateLimited,
			wantText:  []string{"the primary rate limit asks to wait 20m1s, more than the 1m0s this run waits in all"},
			wantTries: 1},
		{name: "primary rate limit as 429",
			faults: func(now time.Time) []forge.GitHubFault {
				f := forge.PrimaryRateLimit(now.Add(5 * time.Second))
				f.Status = http.StatusTooManyRequests
				return []forge.GitHubFault{f}
			},
			wantSleep: []time.Duration{6 * time.Second}, wantTries: 2},
		{name: "secondary rate limit waits Retry-After",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.SecondaryRateLimit(20 * time.Second)}
			},
			wantSleep: []time.Duration{20 * time.Second}, wantTries: 2},
		{name: "secondary rate limits add up to the bound",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.SecondaryRateLimit(40 * time.Second), forge.SecondaryRateLimit(40 * time.Second)}
			},
			wantErr: scm.ErrRateLimited, wantSleep: []time.Duration{40 * time.Second}, wantTries: 2},
		{name: "429 with Retry-After",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}, Body: `{"message":"Too Many Requests"}`}}
			},
			wantSleep: []time.Duration{7 * time.Second}, wantTries: 2},
		{name: "server errors retry with backoff",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.StatusFault(http.StatusBadGateway), forge.StatusFault(http.StatusServiceUnavailable)}
			},
			wantSleep: []time.Duration{time.Second, 2 * time.Second}, wantTries: 3},
		{name: "server errors three times fail",
			faults: func(time.Time) []forge.GitHubFault {
				f := forge.StatusFault(http.StatusBadGateway)
				return []forge.GitHubFault{f, f, f}
			},
			wantErr: scm.ErrUnavailable, wantText: []string{"502 Server Error"}, wantSleep: []time.Duration{time.Second, 2 * time.Second}, wantTries: 3},
		{name: "401",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.StatusFault(http.StatusUnauthorized)}
			},
			wantErr:  scm.ErrUnauthorized,
			wantText: []string{"the token is invalid or expired", "Bad credentials"}, wantTries: 1},
		{name: "403 names the permissions",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.StatusFault(http.StatusForbidden)}
			},
			wantErr:  scm.ErrForbidden,
			wantText: []string{"`pull_requests: write`", "`contents: write`", "`repo` scope", "acme/gitops"}, wantTries: 1},
		{name: "404",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.StatusFault(http.StatusNotFound)}
			},
			wantErr:  scm.ErrNotFound,
			wantText: []string{"repository not found, or the token cannot see it", "acme/gitops"}, wantTries: 1},
		{name: "422 other than already exists",
			faults: func(time.Time) []forge.GitHubFault {
				return []forge.GitHubFault{forge.StatusFault(http.StatusUnprocessableEntity)}
			},
			wantText: []string{"422 Validation Failed"}, wantTries: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newGHEnv(t, nil)
			for _, f := range tt.faults(e.now) {
				e.fake.Fail(1, f)
			}
			before := len(e.fake.Requests())
			_, err := e.forge.ListOpen(context.Background(), "gpu-rightsizing/")
			require.Equal(t, tt.wantTries, len(e.fake.Requests())-before, "tries")
			require.Equal(t, tt.wantSleep, e.sleeps())
			if tt.wantErr == nil && tt.wantText == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			for _, s := range tt.wantText {
				require.Contains(t, err.Error(), s)
			}
			require.NotContains(t, err.Error(), e.fake.Token)
			require.NotContains(t, e.logs.String(), e.fake.Token)
		})
	}
}

func TestGitHubOnCreate(t *testing.T) {
	// A 502 on create is retried; the pull request exists once.
	ctx := context.Background()
	e := newGHEnv(t, nil)
	e.pushBranch(t, "gpu-rightsizing/a", "gpu: 0.25\n")
	e.fake.Fail(1, forge.GitHubFault{Method: http.MethodPost, Status: http.StatusBadGateway, Body: `{"message":"Server Error"}`})
	pr, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "t", Body: "b"})
	require.NoError(t, err)
	require.Equal(t, 1, pr.Number)
	require.Len(t, e.fake.Pulls(), 1)
	require.Equal(t, []time.Duration{time.Second}, e.sleeps())
}

func TestNewGitHubFails(t *testing.T) {
	tests := []struct {
		name     string
		cfg      func(c *scm.GitHubConfig, f *forge.FakeGitHub)
		wantErr  error
		wantText string
	}{
		{name: "wrong token", cfg: func(c *scm.GitHubConfig, _ *forge.FakeGitHub) { c.Token = "ghp_wrongTokenForTest42" },
			wantErr: scm.ErrUnauthorized},
		{name: "unknown repository", cfg: func(c *scm.GitHubConfig, _ *forge.FakeGitHub) { c.Repo = "nope" },
			wantErr: scm.ErrNotFound},
		{name: "no credentials", cfg: func(c *scm.GitHubConfig, _ *forge.FakeGitHub) { c.Token = "" },
			wantText: "a token or a GitHub App"},
		{name: "token and app", cfg: func(c *scm.GitHubConfig, _ *forge.FakeGitHub) { c.AppID = 1 },
			wantText: "not both"},
		{name: "app with a wrong installation", cfg: func(c *scm.GitHubConfig, f *forge.FakeGitHub) {
			c.Token, c.AppID, c.InstallationID, c.PrivateKeyFile = "", f.AppID, 999, f.AppKeyFile
		}, wantText: "installation 999 not found"},
		{name: "app with a wrong ID", cfg: func(c *scm.GitHubConfig, f *forge.FakeGitHub) {
			c.Token, c.AppID, c.InstallationID, c.PrivateKeyFile = "", 1, f.InstallationID, f.AppKeyFile
		}, wantErr: scm.ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git := testenv.NewGitServer(t)
			git.NewRepo(t, "acme/gitops", nil)
			fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
			cfg := scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: fake.BaseURL(), Token: fake.Token}
			tt.cfg(&cfg, fake)
			_, err := scm.NewGitHub(context.Background(), cfg)
			require.Error(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			require.Contains(t, err.Error(), tt.wantText)
			if cfg.Token != "" {
				require.NotContains(t, err.Error(), cfg.Token)
			}
		})
	}
}

func TestGitHubApp(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, func(c *scm.GitHubConfig, f *forge.FakeGitHub) {
		c.Token, c.AppID, c.InstallationID, c.PrivateKeyFile = "", f.AppID, f.InstallationID, f.AppKeyFile
	})
	auth := e.forge.GitAuth()
	require.True(t, strings.HasPrefix(auth.Token, "ghs_"), "an installation token")
	require.Equal(t, "x-access-token", auth.TokenUser)
	// git and the API both take the installation token.
	e.pushBranch(t, "gpu-rightsizing/a", "gpu: 0.25\n")
	pr, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "t", Body: "b"})
	require.NoError(t, err)
	require.Equal(t, 1, pr.Number)
	require.Contains(t, e.fake.Requests(), "POST /api/v3/app/installations/77/access_tokens")
}
