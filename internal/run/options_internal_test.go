package run

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

func TestGitRemote(t *testing.T) {
	token := scm.Auth{Token: "t", TokenUser: "x-access-token"}
	tests := []struct {
		name     string
		git      Git
		wantURL  string
		wantAuth scm.Auth
	}{
		{name: "the forge's", git: Git{}, wantURL: "https://github.com/acme/gitops.git", wantAuth: token},
		{name: "another HTTPS URL keeps the token", git: Git{URL: "https://mirror/acme.git"}, wantURL: "https://mirror/acme.git", wantAuth: token},
		{name: "SSH replaces the token", git: Git{URL: "git@github.com:acme/gitops.git", SSHKeyFile: "/k", KnownHostsFile: "/kh"},
			wantURL: "git@github.com:acme/gitops.git", wantAuth: scm.Auth{SSHKeyFile: "/k", KnownHostsFile: "/kh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, auth := tt.git.remote("https://github.com/acme/gitops.git", token)
			require.Equal(t, tt.wantURL, url)
			require.Equal(t, tt.wantAuth, auth)
		})
	}
}

type pushOnly struct {
	publish.Git
	pushed []string
}

func (g *pushOnly) PushAll(_ context.Context, updates []scm.Update) []error {
	for _, u := range updates {
		g.pushed = append(g.pushed, u.Branch)
	}
	return make([]error, len(updates))
}

// steps records what a run tells its progress.
type steps struct{ bytes.Buffer }

func (s *steps) Start(label string, _ int) { s.WriteString("[" + label + "]") }
func (s *steps) Step()                     { s.WriteString("+") }
func (s *steps) Clear()                    { s.WriteString("|") }

// TestCountPushes: each branch pushed through the wrapped Git is counted,
// and reaches the Git it wraps; without a progress, the Git is as it was.
func TestCountPushes(t *testing.T) {
	p := &steps{}
	o := &Options{Progress: p}
	inner := &pushOnly{}
	g := o.countPushes(inner)
	require.Equal(t, []error{nil, nil}, g.PushAll(context.Background(), []scm.Update{{Branch: "a"}, {Branch: "b"}}))
	o.clearProgress()
	require.Equal(t, []string{"a", "b"}, inner.pushed)
	require.Equal(t, "[publishing: branches pushed]++|", p.String())
	require.Same(t, inner, (&Options{}).countPushes(inner))
	(&Options{}).clearProgress()
}
