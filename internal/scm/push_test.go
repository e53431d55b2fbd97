package scm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// r0 is when the tests' commits are made.
var r0 = time.Unix(1_800_000_000, 0)

// TestPushAll: the branches of a run go in one push, each with its own
// lease, and each succeeds or fails alone — to a repository on this
// machine (in-process), over smart HTTP and over SSH alike.
func TestPushAll(t *testing.T) {
	const repo = "acme/gitops"
	tests := []struct {
		name string
		// remote returns the URL to clone and the auth to use.
		remote func(t *testing.T, srv *testenv.GitServer) (string, scm.Auth)
		// requests is how many HTTP requests the second push may take,
		// -1 when it is not pushed over HTTP.
		requests int
	}{
		{name: "local", requests: -1, remote: func(t *testing.T, srv *testenv.GitServer) (string, scm.Auth) {
			return srv.Dir(repo), scm.Auth{}
		}},
		{name: "smart HTTP", requests: 2, remote: func(t *testing.T, srv *testenv.GitServer) (string, scm.Auth) {
			return srv.RepoURL(repo), scm.Auth{Token: srv.Token}
		}},
		{name: "SSH", requests: -1, remote: func(t *testing.T, srv *testenv.GitServer) (string, scm.Auth) {
			sshd := testenv.NewSSHServer(t, srv)
			return sshd.RepoURL(repo), scm.Auth{SSHKeyFile: sshd.KeyFile, KnownHostsFile: sshd.KnownHostsFile}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			srv := testenv.NewGitServer(t)
			srv.NewRepo(t, repo, map[string]string{"app/a.yaml": "gpu: 0.5\n", "app/b.yaml": "gpu: 0.5\n"})
			url, auth := tt.remote(t, srv)
			r, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "c"), auth)
			require.NoError(t, err)
			commitFile := func(path, content string) plumbing.Hash {
				h, err := r.Commit([]scm.File{{Path: path, Data: []byte(content)}}, "change "+path, who, r0)
				require.NoError(t, err)
				return h
			}

			// The first run creates two branches in one push.
			kept, moved := commitFile("app/a.yaml", "gpu: 0.25\n"), commitFile("app/b.yaml", "gpu: 0.25\n")
			require.Equal(t, []error{nil, nil}, r.PushAll(ctx, []scm.Update{
				{Branch: "gpu-rightsizing/kept", Commit: kept},
				{Branch: "gpu-rightsizing/moved", Commit: moved},
			}))
			require.Equal(t, kept, head(t, srv, repo, "gpu-rightsizing/kept"))
			require.Equal(t, moved, head(t, srv, repo, "gpu-rightsizing/moved"))

			// Meanwhile a person pushes to one branch and creates another
			// the tool is about to create.
			theirs := plumbing.NewHash(srv.Commit(t, repo, "gpu-rightsizing/moved", map[string]string{"app/b.yaml": "gpu: 1\n"}, "a person's fix"))
			srv.Git(t, repo, "branch", "gpu-rightsizing/taken", "main")
			main := head(t, srv, repo, "main")

			kept2, moved2 := commitFile("app/a.yaml", "gpu: 0.3\n"), commitFile("app/b.yaml", "gpu: 0.3\n")
			fresh, taken := commitFile("app/c.yaml", "gpu: 0.1\n"), commitFile("app/d.yaml", "gpu: 0.1\n")
			before, _ := srv.Requests()
			errs := r.PushAll(ctx, []scm.Update{
				{Branch: "gpu-rightsizing/kept", Commit: kept2, Expected: kept},
				{Branch: "gpu-rightsizing/moved", Commit: moved2, Expected: moved},
				{Branch: "gpu-rightsizing/fresh", Commit: fresh},
				{Branch: "gpu-rightsizing/taken", Commit: taken},
				{Branch: "gpu-rightsizing/same", Commit: kept2, Expected: plumbing.ZeroHash},
			})
			after, _ := srv.Requests()
			require.Len(t, errs, 5)
			require.NoError(t, errs[0], "the lease holds")
			require.ErrorIs(t, errs[1], scm.ErrLeaseBroken, "a person pushed since")
			require.NoError(t, errs[2], "a new branch")
			require.ErrorIs(t, errs[3], scm.ErrLeaseBroken, "someone created it since")
			require.NoError(t, errs[4], "a second new branch on a commit the same push sends")
			if tt.requests >= 0 {
				require.Equal(t, tt.requests, after-before, "one push: the advertisement and one receive-pack request")
			}

			require.Equal(t, kept2, head(t, srv, repo, "gpu-rightsizing/kept"))
			require.Equal(t, theirs, head(t, srv, repo, "gpu-rightsizing/moved"), "the person's commit is not overwritten")
			require.Equal(t, fresh, head(t, srv, repo, "gpu-rightsizing/fresh"))
			require.Equal(t, main, head(t, srv, repo, "gpu-rightsizing/taken"), "the branch created meanwhile is not overwritten")
			require.Equal(t, kept2, head(t, srv, repo, "gpu-rightsizing/same"))
			require.Equal(t, "gpu: 0.1\n", srv.Git(t, repo, "show", "gpu-rightsizing/fresh:app/c.yaml"))
			srv.Git(t, repo, "fsck", "--strict")

			// Pushing what the branches hold is nothing to do.
			require.Equal(t, []error{nil, nil}, r.PushAll(ctx, []scm.Update{
				{Branch: "gpu-rightsizing/kept", Commit: kept2, Expected: kept},
				{Branch: "gpu-rightsizing/fresh", Commit: fresh},
			}))
		})
	}
}

// TestPushAllServerRefusals: over smart HTTP, git-receive-pack has the
// last word on each branch. A branch that moves after the advertisement
// (a pre-receive hook moves it, between the two requests of the push) is
// refused by git's compare-and-set on the old value the tool sent, as a
// broken lease; a branch a hook declines fails with the server's reason;
// the others land.
func TestPushAllServerRefusals(t *testing.T) {
	ctx := t.Context()
	const repo = "acme/gitops"
	srv := testenv.NewGitServer(t)
	srv.NewRepo(t, repo, map[string]string{"app/a.yaml": "gpu: 0.5\n"})
	srv.Git(t, repo, "branch", "gpu-rightsizing/raced", "main")
	main := head(t, srv, repo, "main")
	person := srv.Commit(t, repo, "main", map[string]string{"app/a.yaml": "gpu: 2\n"}, "a person's commit")
	srv.Git(t, repo, "update-ref", "refs/heads/main", main.String())
	hooks := filepath.Join(srv.Dir(repo), "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	// Ref updates are refused in the quarantine the hook runs in; the
	// person's commit is already in the repository.
	require.NoError(t, os.WriteFile(filepath.Join(hooks, "pre-receive"), []byte("#!/bin/sh\ncat >/dev/null\n"+
		"env -u GIT_QUARANTINE_PATH git update-ref refs/heads/gpu-rightsizing/raced "+person+"\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hooks, "update"), []byte("#!/bin/sh\n"+
		"if [ \"$1\" = refs/heads/gpu-rightsizing/declined ]; then echo 'protected branch' >&2; exit 1; fi\n"), 0o755))

	r, err := scm.Clone(ctx, srv.RepoURL(repo), "main", filepath.Join(t.TempDir(), "c"), scm.Auth{Token: srv.Token})
	require.NoError(t, err)
	c, err := r.Commit([]scm.File{{Path: "app/a.yaml", Data: []byte("gpu: 0.25\n")}}, "change a", who, r0)
	require.NoError(t, err)
	errs := r.PushAll(ctx, []scm.Update{
		{Branch: "gpu-rightsizing/raced", Commit: c, Expected: main},
		{Branch: "gpu-rightsizing/declined", Commit: c},
		{Branch: "gpu-rightsizing/landed", Commit: c},
	})
	require.ErrorIs(t, errs[0], scm.ErrLeaseBroken)
	require.Error(t, errs[1])
	require.NotErrorIs(t, errs[1], scm.ErrLeaseBroken)
	require.True(t, strings.Contains(errs[1].Error(), "gpu-rightsizing/declined") && strings.Contains(errs[1].Error(), "hook declined"), errs[1].Error())
	require.NotContains(t, errs[1].Error(), srv.Token)
	require.NoError(t, errs[2])
	require.Equal(t, person, head(t, srv, repo, "gpu-rightsizing/raced").String())
	require.Equal(t, plumbing.ZeroHash, head(t, srv, repo, "gpu-rightsizing/declined"))
	require.Equal(t, c, head(t, srv, repo, "gpu-rightsizing/landed"))
}
