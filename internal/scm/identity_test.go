package scm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// TestGitHubIdentity: the tool is the token's user (GET /user); as a
// GitHub App its bot user, "<slug>[bot]"; with an installation token
// given as a token (a workflow's own), which GET /user refuses, the bot
// user GraphQL's viewer names. It is asked once a run.
func TestGitHubIdentity(t *testing.T) {
	ctx := context.Background()
	token := newGHEnv(t, nil)
	app := newGHEnv(t, func(c *scm.GitHubConfig, f *forge.FakeGitHub) {
		c.Token, c.AppID, c.InstallationID, c.PrivateKeyFile = "", f.AppID, f.InstallationID, f.AppKeyFile
	})
	workflow := newGHEnv(t, func(c *scm.GitHubConfig, f *forge.FakeGitHub) {
		// The fake's installation token, as GitHub Actions hands one out.
		g, err := scm.NewGitHub(ctx, scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: f.BaseURL(),
			AppID: f.AppID, InstallationID: f.InstallationID, PrivateKeyFile: f.AppKeyFile})
		require.NoError(t, err)
		c.Token = g.GitAuth().Token
	})
	for _, tt := range []struct {
		name string
		env  *ghEnv
		want string
	}{
		{name: "a token", env: token, want: forge.TokenUser},
		{name: "a GitHub App", env: app, want: forge.AppBot},
		{name: "an installation token as a token", env: workflow, want: forge.AppBot},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 {
				got, err := tt.env.forge.Identity(ctx)
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
			}
			asked := 0
			for _, r := range tt.env.fake.Requests() {
				if r == "GET /api/v3/user" || r == "POST /api/graphql" {
					asked++
				}
			}
			require.LessOrEqual(t, asked, 2, "asked once (GET /user, then GraphQL when it is refused)")
		})
	}
}

// TestGitHubForksAndStrangers: a pull request's author and whether its
// head is in the repository are read as GitHub gives them (user.login,
// head.repo.full_name); a fork's pull request with the tool's branch name
// is listed marked Fork; and when GitHub says a pull request is open for
// the branch and base, one a stranger opened is not adopted.
func TestGitHubForksAndStrangers(t *testing.T) {
	ctx := context.Background()
	e := newGHEnv(t, nil)
	e.pushBranch(t, "gpu-rightsizing/a", "gpu: 0.25\n")
	e.fake.SetRole("stranger", "triage")
	fork, err := e.fake.OpenPullAs("stranger", forge.OpenPull{Fork: "stranger", Head: "gpu-rightsizing/b", Base: "main", Title: "fork", Body: "b"})
	require.NoError(t, err)
	theirs, err := e.fake.OpenPullAs("stranger", forge.OpenPull{Head: "gpu-rightsizing/a", Base: "main", Title: "theirs", Body: "copied"})
	require.NoError(t, err)

	open, err := e.forge.ListOpen(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Len(t, open, 2)
	for _, pr := range open {
		require.Equal(t, "stranger", pr.Author)
		require.Equal(t, pr.Number == fork, pr.Fork, "#%d", pr.Number)
		require.False(t, scm.Mine(pr, forge.TokenUser))
	}
	found, err := e.forge.Find(ctx, "gpu-rightsizing/b")
	require.NoError(t, err)
	require.Empty(t, found, "a fork's branch of that name is another branch")

	_, err = e.forge.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "t", Body: "mine"})
	require.ErrorIs(t, err, scm.ErrConflict)
	require.ErrorContains(t, err, "opened by stranger")
	p, _ := e.fake.Pull(theirs)
	require.Equal(t, "copied", p.Body, "the stranger's pull request is not adopted")
}

// TestGitLabForksAndStrangers: a merge request's author and source
// project are read as GitLab gives them (author.username,
// source_project_id); one from a fork's branch of the tool's name is found
// marked Fork; when GitLab answers 409 for a second one, one a stranger
// opened is not adopted; and the tool is the token's user (GET /user).
func TestGitLabForksAndStrangers(t *testing.T) {
	ctx := context.Background()
	g, fake, _ := newGitLab(t, "gpu-rightsizing/a")
	me, err := g.Identity(ctx)
	require.NoError(t, err)
	require.Equal(t, forge.GitLabBot, me)

	fake.AddMember("stranger", forge.AccessDeveloper)
	fork, err := fake.OpenMRAs("stranger", forge.OpenMR{Fork: "stranger/gitops", Source: "gpu-rightsizing/a", Target: "main", Title: "fork", Description: "f"})
	require.NoError(t, err)
	found, err := g.Find(ctx, "gpu-rightsizing/a")
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.True(t, found[0].Fork)
	require.Equal(t, "stranger", found[0].Author)

	// A fork's merge request does not stop the tool's own.
	mine, err := g.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "t", Body: "mine"})
	require.NoError(t, err)
	require.True(t, scm.Mine(mine, me))
	require.NotEqual(t, int(fork), mine.Number)
	require.NoError(t, g.Close(ctx, mine.Number, "done"))

	theirs, err := fake.OpenMRAs("stranger", forge.OpenMR{Source: "gpu-rightsizing/a", Target: "main", Title: "theirs", Description: "copied"})
	require.NoError(t, err)
	_, err = g.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "t", Body: "mine"})
	require.ErrorIs(t, err, scm.ErrConflict)
	require.ErrorContains(t, err, "opened by stranger")
	mr, _ := fake.MergeRequest(theirs)
	require.Equal(t, "copied", mr.Description, "the stranger's merge request is not adopted")
}

// TestGitLabUntrustedEdits: who changed a description since the tool
// last wrote it is read from GitLab's system notes, and whether each may
// push from the members API: a Reporter may not, a Developer may; what
// came before the tool's own last change does not count.
func TestGitLabUntrustedEdits(t *testing.T) {
	ctx := context.Background()
	g, fake, _ := newGitLab(t)
	fake.AddMember("reporter", forge.AccessReporter)
	fake.AddMember("developer", forge.AccessDeveloper)
	is, err := g.OpenIssue(ctx, "dashboard", "- [ ] a\n- [ ] b\n", []string{"l"})
	require.NoError(t, err)
	who := func() []string {
		t.Helper()
		got, err := g.UntrustedIssueEdits(ctx, is.Number)
		require.NoError(t, err)
		return got
	}
	require.Empty(t, who(), "nobody changed it")
	require.NoError(t, fake.EditIssueDescriptionAs("developer", int64(is.Number), "- [x] a\n- [ ] b\n"))
	require.Empty(t, who(), "a Developer may push")
	require.NoError(t, fake.EditIssueDescriptionAs("reporter", int64(is.Number), "- [x] a\n- [x] b\n"))
	require.Equal(t, []string{"reporter"}, who())
	require.NoError(t, g.EditIssue(ctx, is.Number, "dashboard", "- [ ] a\n- [ ] b\n"))
	require.Empty(t, who(), "the tool wrote it since")
	require.NoError(t, fake.EditIssueDescriptionAs("reporter", int64(is.Number), "edited\n"))
	require.Equal(t, []string{"reporter"}, who(), "a whole edit counts as a tick does")
}
