package scm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// hostileForge answers every list of pull requests (GitHub) or merge
// requests (GitLab) with page, and a next page that never ends, counting
// the requests.
func hostileForge(t *testing.T, page func(n int) any) (url string, requests *atomic.Int64) {
	t.Helper()
	requests = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.HasSuffix(r.URL.Path, "/pulls") && !strings.HasSuffix(r.URL.Path, "/merge_requests") {
			// The repository (GitHub) or project (GitLab) the client reads first.
			json.NewEncoder(w).Encode(map[string]any{"id": 42, "full_name": "acme/gitops", "path_with_namespace": "acme/gitops",
				"default_branch": "main", "clone_url": "http://" + r.Host + "/acme/gitops.git", "http_url_to_repo": "http://" + r.Host + "/acme/gitops.git"})
			return
		}
		requests.Add(1)
		n, _ := strconv.Atoi(r.URL.Query().Get("page"))
		n = max(n, 1)
		v := page(n)
		if items, ok := v.([]any); ok && len(items) == 0 {
			json.NewEncoder(w).Encode(v) // the last page
			return
		}
		next := *r.URL
		q := next.Query()
		q.Set("page", strconv.Itoa(n+1))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
		w.Header().Set("X-Next-Page", strconv.Itoa(n+1))
		json.NewEncoder(w).Encode(v)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// hostileTimeout bounds each request of the hostile forges: what these
// tests hold is the size bounds, and sending 33 MiB took over 30 s under
// the race detector at a load of 12, the forges' default timeout.
const hostileTimeout = 5 * time.Minute

// hostileToken is long enough not to appear by chance in what errors say.
const hostileToken = "hostile-forge-token-0123456789"

func newHostileGitHub(t *testing.T, url string) *scm.GitHub {
	t.Helper()
	g, err := scm.NewGitHub(context.Background(), scm.GitHubConfig{Owner: "acme", Repo: "gitops", BaseURL: url + "/api/v3/", Token: hostileToken,
		RequestTimeout: hostileTimeout, Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return g
}

func newHostileGitLab(t *testing.T, url string) *scm.GitLab {
	t.Helper()
	g, err := scm.NewGitLab(context.Background(), scm.GitLabConfig{BaseURL: url, Project: "42", Token: hostileToken,
		HTTPClient: &http.Client{Timeout: hostileTimeout}, Sleep: func(context.Context, time.Duration) error { return nil }})
	require.NoError(t, err)
	return g
}

func ghPull(n int, branch, body string) map[string]any {
	return map[string]any{"number": n, "state": "open", "title": "t", "body": body,
		"head": map[string]any{"ref": branch, "repo": map[string]any{"full_name": "acme/gitops"}}, "base": map[string]any{"ref": "main"}}
}

func glMR(n int, branch, body string) map[string]any {
	return map[string]any{"iid": n, "state": "opened", "title": "t", "description": body, "source_branch": branch, "target_branch": "main"}
}

// TestForgeListsAreBounded: a forge whose next page never ends, or whose
// pages carry huge bodies, cannot hang a run or fill its memory: a
// listing stops after 100 pages with an error, an answer over 32 MiB fails
// while it is read, and a body over 256 KiB — longer than GitHub accepts,
// so none of the tool's — is kept empty.
func TestForgeListsAreBounded(t *testing.T) {
	ctx := context.Background()
	type lister interface {
		ListOpen(context.Context, string) ([]scm.PullRequest, error)
	}
	forges := []struct {
		name  string
		item  func(n int, branch, body string) map[string]any
		forge func(*testing.T, string) lister
	}{
		{"GitHub", ghPull, func(t *testing.T, u string) lister { return newHostileGitHub(t, u) }},
		{"GitLab", glMR, func(t *testing.T, u string) lister { return newHostileGitLab(t, u) }},
	}
	for _, f := range forges {
		t.Run(f.name+": endless pages", func(t *testing.T) {
			url, requests := hostileForge(t, func(n int) any { return []any{f.item(n, "other/x", "b")} })
			_, err := f.forge(t, url).ListOpen(ctx, "gpu-rightsizing/")
			require.ErrorContains(t, err, "more than 100 pages")
			require.EqualValues(t, 100, requests.Load())
		})
		t.Run(f.name+": an answer over 32 MiB", func(t *testing.T) {
			big := strings.Repeat("x", 33<<20)
			url, _ := hostileForge(t, func(n int) any { return []any{f.item(n, "gpu-rightsizing/a", big)} })
			_, err := f.forge(t, url).ListOpen(ctx, "gpu-rightsizing/")
			require.ErrorContains(t, err, "answer too long")
		})
		t.Run(f.name+": a body longer than any the tool writes", func(t *testing.T) {
			long := strings.Repeat("x", 300<<10)
			url, _ := hostileForge(t, func(n int) any {
				if n > 1 {
					return []any{}
				}
				return []any{f.item(1, "gpu-rightsizing/a", long), f.item(2, "gpu-rightsizing/b", "short")}
			})
			prs, err := f.forge(t, url).ListOpen(ctx, "gpu-rightsizing/")
			require.NoError(t, err)
			require.Len(t, prs, 2)
			require.Empty(t, prs[0].Body)
			require.Equal(t, "short", prs[1].Body)
		})
	}
}
