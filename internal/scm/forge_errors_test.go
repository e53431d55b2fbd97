package scm_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// forgeClient is what TestForgesFailAlike asks of both forges.
type forgeClient interface {
	ListOpen(ctx context.Context, prefix string) ([]scm.PullRequest, error)
	Open(ctx context.Context, pr scm.NewPullRequest) (scm.PullRequest, error)
}

// TestForgesFailAlike: GitHub and GitLab, each answering the same failure
// as it documents it, give the same class of error, so that a caller acts
// on the class without knowing the forge.
func TestForgesFailAlike(t *testing.T) {
	tooMany := http.Header{"Retry-After": {"3600"}}
	tests := []struct {
		name   string
		github []forge.GitHubFault
		gitlab []forge.GitLabFault
		// open opens a pull request instead of listing them.
		open   bool
		cancel bool
		want   error
	}{
		{name: "401", want: scm.ErrUnauthorized,
			github: []forge.GitHubFault{forge.StatusFault(http.StatusUnauthorized)},
			gitlab: []forge.GitLabFault{{Status: http.StatusUnauthorized, Body: `{"message":"401 Unauthorized"}`}}},
		{name: "403", want: scm.ErrForbidden,
			github: []forge.GitHubFault{forge.StatusFault(http.StatusForbidden)},
			gitlab: []forge.GitLabFault{{Status: http.StatusForbidden, Body: `{"error":"insufficient_scope","scope":"api"}`}}},
		{name: "404", want: scm.ErrNotFound,
			github: []forge.GitHubFault{forge.StatusFault(http.StatusNotFound)},
			gitlab: []forge.GitLabFault{{Status: http.StatusNotFound, Body: `{"message":"404 Project Not Found"}`}}},
		{name: "rate limited beyond the wait", want: scm.ErrRateLimited,
			github: []forge.GitHubFault{{Status: http.StatusTooManyRequests, Header: tooMany, Body: `{"message":"Too Many Requests"}`}},
			gitlab: []forge.GitLabFault{{Status: http.StatusTooManyRequests, Header: tooMany, Body: `{"message":"Retry later"}`}}},
		{name: "server errors through every try", want: scm.ErrUnavailable,
			github: []forge.GitHubFault{forge.StatusFault(http.StatusServiceUnavailable), forge.StatusFault(http.StatusServiceUnavailable), forge.StatusFault(http.StatusServiceUnavailable)},
			gitlab: []forge.GitLabFault{{Times: 3, Status: http.StatusServiceUnavailable, Body: `{"message":"503 Service Unavailable"}`}}},
		{name: "a second pull request refused, none listed", want: scm.ErrConflict, open: true,
			github: []forge.GitHubFault{{Method: http.MethodPost, Status: http.StatusUnprocessableEntity,
				Body: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for acme:gpu-rightsizing/a."}]}`}},
			gitlab: []forge.GitLabFault{{Method: http.MethodPost, Path: "/merge_requests", Status: http.StatusConflict,
				Body: `{"message":["Another open merge request already exists for this source branch: !1"]}`}}},
		{name: "cancelled", want: context.Canceled, cancel: true},
	}
	forges := []struct {
		name  string
		start func(t *testing.T, gh []forge.GitHubFault, gl []forge.GitLabFault) (f forgeClient, token string)
	}{
		{name: "github", start: func(t *testing.T, faults []forge.GitHubFault, _ []forge.GitLabFault) (forgeClient, string) {
			e := newGHEnv(t, nil)
			for _, f := range faults {
				e.fake.Fail(1, f)
			}
			return e.forge, e.fake.Token
		}},
		{name: "gitlab", start: func(t *testing.T, _ []forge.GitHubFault, faults []forge.GitLabFault) (forgeClient, string) {
			g, fake, _ := newGitLab(t)
			for _, f := range faults {
				fake.Fail(f)
			}
			return g, fake.Token
		}},
	}
	for _, tt := range tests {
		for _, fg := range forges {
			t.Run(tt.name+"/"+fg.name, func(t *testing.T) {
				f, token := fg.start(t, tt.github, tt.gitlab)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.cancel {
					cancel()
				}
				var err error
				if tt.open {
					_, err = f.Open(ctx, scm.NewPullRequest{Branch: "gpu-rightsizing/a", Base: "main", Title: "t", Body: "b"})
				} else {
					_, err = f.ListOpen(ctx, "gpu-rightsizing/")
				}
				require.ErrorIs(t, err, tt.want)
				require.NotContains(t, err.Error(), token)
			})
		}
	}
}
