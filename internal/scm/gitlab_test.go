package scm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

const project = "infra/gpu.team/gitops"

// bareRepo makes a bare repository whose main holds one file, and whose
// other branches change it.
func bareRepo(t *testing.T, branches ...string) string {
	t.Helper()
	git := testenv.LookPath(t, "git")
	work, bare := t.TempDir(), filepath.Join(t.TempDir(), "repo.git")
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	run(work, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(work, "app.yaml"), []byte("gpu: 1\n"), 0o644))
	run(work, "add", ".")
	run(work, "commit", "-qm", "base")
	run(work, "checkout", "-qb", "change")
	require.NoError(t, os.WriteFile(filepath.Join(work, "app.yaml"), []byte("gpu: 0.5\n"), 0o644))
	run(work, "commit", "-qam", "change")
	run(filepath.Dir(bare), "clone", "-q", "--bare", work, bare)
	// Every branch holds the same change: one update-ref for them all.
	var refs strings.Builder
	for _, b := range branches {
		fmt.Fprintf(&refs, "create refs/heads/%s refs/heads/change\n", b)
	}
	cmd := exec.Command(git, "-C", bare, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(refs.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bare
}

// sleeper records the waits instead of waiting.
type sleeper struct{ waits []time.Duration }

func (s *sleeper) sleep(_ context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return nil
}

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func newGitLab(t *testing.T, branches ...string) (*scm.GitLab, *forge.FakeGitLab, *sleeper) {
	t.Helper()
	fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: project, Dir: bareRepo(t, branches...)})
	s := &sleeper{}
	g, err := scm.NewGitLab(context.Background(), scm.GitLabConfig{BaseURL: fake.URL, Project: project, Token: fake.Token,
		Sleep: s.sleep, Now: func() time.Time { return now }})
	require.NoError(t, err)
	return g, fake, s
}

func TestGitLabMergeRequests(t *testing.T) {
	ctx := context.Background()
	g, fake, _ := newGitLab(t, "gpu-rightsizing/a", "gpu-rightsizing/b", "other/c")
	alice := fake.AddUser("alice")
	bob := fake.AddUser("bob")

	require.Equal(t, scm.Auth{Token: fake.Token, TokenUser: "oauth2"}, g.GitAuth())
	require.NotEmpty(t, g.CloneURL())

	a, err := g.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "Scale back a", Body: "body a",
		Labels: []string{"gpu-rightsizing", "scale-back"}, Reviewers: []string{"alice"}, Assignees: []string{"@bob"}, Draft: true})
	require.NoError(t, err)
	require.Equal(t, scm.PullRequest{Number: 1, URL: a.URL, Branch: "gpu-rightsizing/a", Base: "main", Title: "Scale back a",
		Body: "body a", State: scm.Open, Labels: []string{"gpu-rightsizing", "scale-back"}, Draft: true, Author: forge.GitLabBot}, a)
	mr, _ := fake.MergeRequest(1)
	require.Equal(t, "Draft: Scale back a", mr.Title)
	require.Equal(t, []int64{alice}, mr.ReviewerIDs)
	require.Equal(t, []int64{bob}, mr.AssigneeIDs)

	_, err = g.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/b", Base: "main", Title: "Upsize b", Body: "body b"})
	require.NoError(t, err)
	_, err = g.Open(ctx, scm.NewPullRequest{Branch: "other/c", Base: "main", Title: "c", Body: "c"})
	require.NoError(t, err)

	// A draft stays a draft when its title is updated.
	require.NoError(t, g.Update(ctx, 1, "Scale back a further", "body a2"))
	mr, _ = fake.MergeRequest(1)
	require.Equal(t, "Draft: Scale back a further", mr.Title)
	require.Equal(t, "body a2", mr.Description)

	open, err := g.ListOpen(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Len(t, open, 2)

	require.NoError(t, g.Close(ctx, 2, "gone"))
	mr, _ = fake.MergeRequest(2)
	require.Equal(t, "closed", mr.State)
	require.Equal(t, []string{"gone"}, mr.Notes)

	// Reopened by a person and merged: Find lists both, newest first.
	require.NoError(t, fake.Reopen(2))
	require.NoError(t, fake.Merge(2))
	_, err = g.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/b", Base: "main", Title: "Upsize b again", Body: "b2"})
	require.NoError(t, err)
	require.NoError(t, g.Close(ctx, 4, "declined"))
	prs, err := g.Find(ctx, "gpu-rightsizing/b")
	require.NoError(t, err)
	var got []string
	for _, pr := range prs {
		got = append(got, fmt.Sprintf("!%d %s", pr.Number, pr.State))
	}
	require.Equal(t, []string{"!4 closed", "!2 merged"}, got)

	open, err = g.ListOpen(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Len(t, open, 1)
	require.Equal(t, 1, open[0].Number)
}

func TestGitLabNoUser(t *testing.T) {
	g, _, _ := newGitLab(t, "gpu-rightsizing/a")
	_, err := g.Open(context.Background(), scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "t", Body: "b", Reviewers: []string{"nobody"}})
	require.ErrorContains(t, err, `no such user`)
}

// TestGitLabOpenExisting: a run killed after creating the merge request
// finds GitLab answering 409 the next time, and updates that one.
func TestGitLabOpenExisting(t *testing.T) {
	ctx := context.Background()
	g, fake, _ := newGitLab(t, "gpu-rightsizing/a")
	_, err := g.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "first", Body: "one"})
	require.NoError(t, err)
	pr, err := g.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "second", Body: "two"})
	require.NoError(t, err)
	require.Equal(t, 1, pr.Number)
	require.Equal(t, "second", pr.Title)
	mrs := fake.MergeRequests()
	require.Len(t, mrs, 1)
	require.Equal(t, "second", mrs[0].Title)
	require.Equal(t, "two", mrs[0].Description)
	require.Contains(t, statuses(fake), "POST 409")
}

func statuses(fake *forge.FakeGitLab) []string {
	var out []string
	for _, r := range fake.Requests() {
		out = append(out, r.Method+" "+strconv.Itoa(r.Status))
	}
	return out
}

// TestGitLabListOpenPages: more open merge requests than a page holds
// are all listed, following X-Next-Page.
func TestGitLabListOpenPages(t *testing.T) {
	ctx := context.Background()
	var branches []string
	for i := range 105 {
		branches = append(branches, fmt.Sprintf("gpu-rightsizing/w%03d", i))
	}
	g, fake, _ := newGitLab(t, branches...)
	for _, b := range branches {
		_, err := g.Open(ctx, scm.NewPullRequest{Branch: b, Base: "main", Title: b, Body: b})
		require.NoError(t, err)
	}
	before := len(fake.Requests())
	open, err := g.ListOpen(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Len(t, open, 105)
	reqs := fake.Requests()[before:]
	require.Len(t, reqs, 2)
	require.Contains(t, reqs[1].Path, "page=2")
}

func TestGitLabErrors(t *testing.T) {
	reset := strconv.FormatInt(now.Add(20*time.Second).Unix(), 10)
	tests := []struct {
		name   string
		faults []forge.GitLabFault
		// ok: the call succeeds after the faults.
		ok      bool
		is      error
		message string
		waits   []time.Duration
	}{
		{
			name:   "429 with Retry-After waits and succeeds",
			faults: []forge.GitLabFault{{Status: 429, Header: http.Header{"Retry-After": {"7"}}, Body: `{"message":"Retry later"}`}},
			ok:     true, waits: []time.Duration{7 * time.Second},
		},
		{
			name:   "429 with RateLimit-Reset waits until the reset",
			faults: []forge.GitLabFault{{Status: 429, Header: http.Header{"Ratelimit-Reset": {reset}}, Body: `{"message":"Retry later"}`}},
			ok:     true, waits: []time.Duration{20 * time.Second},
		},
		{
			name:   "429 beyond the bound fails without waiting",
			faults: []forge.GitLabFault{{Status: 429, Header: http.Header{"Retry-After": {"3600"}}, Body: `{"message":"Retry later"}`}},
			is:     scm.ErrRateLimited, message: "rate limited",
		},
		{
			name:   "429s adding up beyond the bound fail",
			faults: []forge.GitLabFault{{Times: 5, Status: 429, Header: http.Header{"Retry-After": {"25"}}, Body: `{"message":"Retry later"}`}},
			is:     scm.ErrRateLimited, waits: []time.Duration{25 * time.Second, 25 * time.Second},
		},
		{
			name:   "502 is tried again with backoff",
			faults: []forge.GitLabFault{{Times: 2, Status: 502, Body: `{"message":"502 Bad Gateway"}`}},
			ok:     true, waits: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name:   "5xx three times fails",
			faults: []forge.GitLabFault{{Times: 3, Status: 503, Body: `{"message":"503 Service Unavailable"}`}},
			is:     scm.ErrUnavailable, message: "after 3 tries: HTTP 503", waits: []time.Duration{time.Second, 2 * time.Second},
		},
		{
			name:   "401 names the token",
			faults: []forge.GitLabFault{{Status: 401, Body: `{"message":"401 Unauthorized"}`}},
			is:     scm.ErrUnauthorized, message: "the token is invalid or expired",
		},
		{
			name:   "403 names the scope",
			faults: []forge.GitLabFault{{Status: 403, Body: `{"error":"insufficient_scope","error_description":"The request requires higher privileges than provided by the access token.","scope":"api"}`}},
			is:     scm.ErrForbidden, message: "the token needs the `api` scope, and its user the Developer role",
		},
		{
			name:   "404 says the project cannot be seen",
			faults: []forge.GitLabFault{{Status: 404, Body: `{"message":"404 Project Not Found"}`}},
			is:     scm.ErrNotFound, message: "not found, or the token cannot see it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, fake, s := newGitLab(t)
			for _, f := range tt.faults {
				fake.Fail(f)
			}
			_, err := g.ListOpen(context.Background(), "gpu-rightsizing/")
			require.Equal(t, tt.waits, s.waits)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.is)
			require.ErrorContains(t, err, tt.message)
			require.NotContains(t, err.Error(), fake.Token)
		})
	}
}

func TestNewGitLab(t *testing.T) {
	dir := bareRepo(t)
	fake := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: project, Dir: dir, CloneURL: "http://127.0.0.1:1/infra/gitops.git"})
	tests := []struct {
		name    string
		cfg     scm.GitLabConfig
		is      error
		message string
	}{
		{name: "by path", cfg: scm.GitLabConfig{Project: project, Token: fake.Token}},
		{name: "by ID", cfg: scm.GitLabConfig{Project: "4242", Token: fake.Token}},
		{name: "wrong token", cfg: scm.GitLabConfig{Project: project, Token: "glpat-wrong"}, is: scm.ErrUnauthorized,
			message: "gitlab infra/gpu.team/gitops: read the project: the token is invalid or expired (HTTP 401)"},
		{name: "unknown project", cfg: scm.GitLabConfig{Project: "infra/other", Token: fake.Token}, is: scm.ErrNotFound,
			message: "gitlab infra/other: read the project: repository not found, or the token cannot see it"},
		{name: "no token", cfg: scm.GitLabConfig{Project: project}, message: "gitlab: no token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.BaseURL = fake.URL
			g, err := scm.NewGitLab(context.Background(), tt.cfg)
			if tt.message == "" {
				require.NoError(t, err)
				require.Equal(t, "http://127.0.0.1:1/infra/gitops.git", g.CloneURL())
				return
			}
			require.EqualError(t, err, tt.message)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.False(t, strings.Contains(err.Error(), fake.Token) || strings.Contains(err.Error(), "glpat-wrong"))
		})
	}
}

// TestGitLabTokenScrubbed: a server that echoes the token in an error
// body does not get it into the error.
func TestGitLabTokenScrubbed(t *testing.T) {
	g, fake, _ := newGitLab(t)
	fake.Fail(forge.GitLabFault{Status: 400, Body: fmt.Sprintf(`{"message":"bad token %s"}`, fake.Token)})
	_, err := g.ListOpen(context.Background(), "x")
	require.Error(t, err)
	require.NotContains(t, err.Error(), fake.Token)
	require.Contains(t, err.Error(), "***")
}

func TestGitLabContextCancelled(t *testing.T) {
	g, fake, _ := newGitLab(t)
	fake.Fail(forge.GitLabFault{Times: 3, Status: 502, Body: `{"message":"502"}`})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.ListOpen(ctx, "x")
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
}
