package scm_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// TestPrivateCAGit: git over HTTPS to a server whose certificate no
// system trusts is refused, and works in every step a run takes (clone,
// branch list, push, reading a branch's head) with the CA bundle.
func TestPrivateCAGit(t *testing.T) {
	ctx := t.Context()
	const repo = "acme/gitops"
	srv := testenv.NewGitServerTLS(t)
	srv.NewRepo(t, repo, map[string]string{"app/a.yaml": "gpu: 0.5\n"})
	url := srv.RepoURL(repo)
	require.Regexp(t, `^https://127\.0\.0\.1:`, url)

	_, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "refused"), scm.Auth{Token: srv.Token})
	require.ErrorContains(t, err, "certificate signed by unknown authority")

	ca, err := scm.ReadCABundle(srv.CAFile)
	require.NoError(t, err)
	r, err := scm.Clone(ctx, url, "main", filepath.Join(t.TempDir(), "c"), scm.Auth{Token: srv.Token, CABundle: ca})
	require.NoError(t, err)
	h, err := r.Commit([]scm.File{{Path: "app/a.yaml", Data: []byte("gpu: 0.25\n")}}, "change a", who, r0)
	require.NoError(t, err)
	require.Equal(t, []error{nil}, r.PushAll(ctx, []scm.Update{{Branch: "gpu-rightsizing/a", Commit: h}}))
	require.Equal(t, h, head(t, srv, repo, "gpu-rightsizing/a"))
	branches, err := r.Branches(ctx, "gpu-rightsizing/")
	require.NoError(t, err)
	require.Equal(t, map[string]plumbing.Hash{"gpu-rightsizing/a": h}, branches)
	c, err := r.Head(ctx, "gpu-rightsizing/a")
	require.NoError(t, err)
	require.Equal(t, "change a", c.Message)
}

// TestPrivateCAForges: the GitHub and GitLab API clients refuse a forge
// whose certificate no system trusts, and reach it through CATransport.
func TestPrivateCAForges(t *testing.T) {
	git := testenv.NewGitServerTLS(t)
	git.NewRepo(t, "acme/gitops", map[string]string{"a.yaml": "a: 1\n"})
	gh := forge.NewFakeGitHub(t, git, "acme", "gitops")
	gl := forge.NewFakeGitLab(t, forge.FakeGitLabOptions{Project: "acme/gitops", Dir: git.Dir("acme/gitops"),
		CloneURL: git.RepoURL("acme/gitops"), TLS: true})
	ca, err := scm.ReadCABundle(git.CAFile)
	require.NoError(t, err)
	trusted, err := scm.CATransport(ca)
	require.NoError(t, err)

	tests := []struct {
		name string
		open func(ctx context.Context, tr *http.Transport) (string, error)
	}{
		{name: "github", open: func(ctx context.Context, tr *http.Transport) (string, error) {
			cfg := scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: gh.BaseURL(), Token: gh.Token}
			if tr != nil {
				cfg.Transport = tr
			}
			g, err := scm.NewGitHub(ctx, cfg)
			if err != nil {
				return "", err
			}
			return g.CloneURL(), nil
		}},
		{name: "gitlab", open: func(ctx context.Context, tr *http.Transport) (string, error) {
			cfg := scm.GitLabConfig{BaseURL: gl.URL, Project: "acme/gitops", Token: gl.Token}
			if tr != nil {
				cfg.HTTPClient = &http.Client{Transport: tr}
			}
			g, err := scm.NewGitLab(ctx, cfg)
			if err != nil {
				return "", err
			}
			return g.CloneURL(), nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.open(t.Context(), nil)
			var unknown x509.UnknownAuthorityError
			require.True(t, errors.As(err, &unknown), "want an unknown authority, got %v", err)
			clone, err := tt.open(t.Context(), trusted)
			require.NoError(t, err)
			require.Equal(t, git.RepoURL("acme/gitops"), clone)
		})
	}
}

// TestReadCABundle: a file that holds no certificate is refused by name.
func TestReadCABundle(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(notPEM, []byte("ghp_secret\n"), 0o600))
	tests := []struct {
		name, path, want string
	}{
		{name: "not PEM", path: notPEM, want: "CA file " + notPEM + ": no PEM certificate in it"},
		{name: "missing", path: filepath.Join(dir, "none.pem"), want: "CA file: read " + filepath.Join(dir, "none.pem")},
		{name: "a directory", path: dir, want: "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scm.ReadCABundle(tt.path)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "ghp_secret")
		})
	}
}
