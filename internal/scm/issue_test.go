package scm_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// issues is what the dashboard asks of every forge.
type issues interface {
	Issues(ctx context.Context, label string) ([]scm.Issue, error)
	OpenIssue(ctx context.Context, title, body string, labels []string) (scm.Issue, error)
	EditIssue(ctx context.Context, number int, title, body string) error
}

// TestIssues: on each forge, issues are opened with a label, listed by it
// (open ones only, oldest first, over pages, pull requests left out) and
// edited in place.
func TestIssues(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		// make returns the forge, and a function that adds an issue as a
		// person would (another label, or closed).
		make func(t *testing.T) (issues, func(title string, labels []string) int)
	}{
		{name: "github", make: func(t *testing.T) (issues, func(string, []string) int) {
			e := newGHEnv(t, func(c *scm.GitHubConfig, _ *forge.FakeGitHub) { c.PerPage = 2 })
			// A pull request with the label: GitHub lists it as an issue.
			e.pushBranch(t, "gpu-rightsizing/x", "gpu: 0.25\n")
			_, err := e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/x", Base: "main", Title: "t", Body: "b", Labels: []string{"dash"}})
			require.NoError(t, err)
			return e.forge, func(title string, labels []string) int { return e.fake.NewIssue(title, "", labels) }
		}},
		{name: "gitlab", make: func(t *testing.T) (issues, func(string, []string) int) {
			g, fake, _ := newGitLab(t)
			return g, func(title string, labels []string) int { return int(fake.NewIssue(title, "", labels)) }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, person := tt.make(t)
			none, err := f.Issues(ctx, "dash")
			require.NoError(t, err)
			require.Empty(t, none)
			person("someone else's", []string{"bug"})
			var opened []int
			for _, title := range []string{"one", "two", "three"} {
				is, err := f.OpenIssue(ctx, title, "body of "+title, []string{"dash"})
				require.NoError(t, err)
				require.NotEmpty(t, is.URL)
				opened = append(opened, is.Number)
			}
			require.NoError(t, f.EditIssue(ctx, opened[1], "two, edited", "new body"))
			got, err := f.Issues(ctx, "dash")
			require.NoError(t, err)
			var numbers []int
			for _, is := range got {
				numbers = append(numbers, is.Number)
				require.Equal(t, []string{"dash"}, is.Labels)
			}
			require.Equal(t, opened, numbers, "the label's open issues, oldest first, over pages, no pull request")
			require.Equal(t, "two, edited", got[1].Title)
			require.Equal(t, "new body", got[1].Body)
		})
	}
}

// TestIssuesErrors: a missing permission and a missing issue are named.
func TestIssuesErrors(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	e.fake.Fail(1, forge.StatusFault(http.StatusForbidden))
	_, err := e.forge.OpenIssue(ctx, "t", "b", nil)
	require.ErrorIs(t, err, scm.ErrForbidden)
	require.ErrorContains(t, err, "`issues: write`")
	require.ErrorIs(t, e.forge.EditIssue(ctx, 99, "t", "b"), scm.ErrNotFound)

	g, _, _ := newGitLab(t)
	require.ErrorIs(t, g.EditIssue(ctx, 99, "t", "b"), scm.ErrNotFound)
}

// TestLocalIssues: the local provider's issues are Markdown files a
// person edits; a file a person wrote without a title keeps its text as
// the body.
func TestLocalIssues(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "pulls")
	l, err := scm.NewLocal(dir)
	require.NoError(t, err)
	none, err := l.Issues(ctx, "x")
	require.NoError(t, err)
	require.Empty(t, none, "no directory yet: no issue")
	is, err := l.OpenIssue(ctx, "Dashboard", "body\n", nil)
	require.NoError(t, err)
	require.Equal(t, 1, is.Number)
	b, err := os.ReadFile(filepath.Join(dir, "issue-0001.md"))
	require.NoError(t, err)
	require.Equal(t, "# Dashboard\n\nbody\n", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "issue-0002.md"), []byte("no title\r\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "issue-x.md"), []byte("not an issue"), 0o644))
	got, err := l.Issues(ctx, "")
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, scm.Issue{Number: 2, URL: got[1].URL, Body: "no title\r\n"}, got[1])
	require.NoError(t, l.EditIssue(ctx, 1, "Dashboard", "edited\n"))
	got, err = l.Issues(ctx, "")
	require.NoError(t, err)
	require.Equal(t, "edited\n", got[0].Body)
	require.Error(t, l.EditIssue(ctx, 7, "t", "b"), "no such issue")
	prs, err := l.All()
	require.NoError(t, err)
	require.Empty(t, prs, "issues are not pull requests")
}
