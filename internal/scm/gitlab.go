package scm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// GitLabConfig says which GitLab project holds the merge requests, and how
// to reach it.
type GitLabConfig struct {
	// BaseURL is a self-managed instance, e.g. https://gitlab.example.com;
	// empty means gitlab.com.
	BaseURL string
	// Project is the project's full path (group/sub/repo) or numeric ID.
	Project string
	// Token is a personal, project or group access token: the API needs
	// the `api` scope, and pushing needs the Developer role.
	Token string

	// HTTPClient carries the requests; nil means a client with a timeout.
	HTTPClient *http.Client
	// MaxRateLimitWait bounds the time waited for rate limits in one call
	// (default 60s); beyond it the call fails with ErrRateLimited.
	MaxRateLimitWait time.Duration
	// Tries bounds the attempts of a call answered 5xx (default 3).
	Tries int
	// Sleep waits, and Now reads the clock: tests replace them so that a
	// rate limit is waited through without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
}

// GitLab keeps pull requests as merge requests of one GitLab project.
type GitLab struct {
	c        *gitlab.Client
	cfg      GitLabConfig
	pid      int64
	path     string
	cloneURL string
	identity identity
}

// noLimiter turns off the client's own pacing: it sleeps on the real
// clock, beyond a test's reach, and a run makes few calls. Rate limits are
// waited through when GitLab answers 429, as GitLab documents.
type noLimiter struct{}

func (noLimiter) Wait(ctx context.Context) error { return ctx.Err() }

// NewGitLab connects to the project: it reads the project once, so that a
// wrong token, scope or path is reported now, by name, rather than at the
// first merge request.
func NewGitLab(ctx context.Context, cfg GitLabConfig) (*GitLab, error) {
	if cfg.Project == "" {
		return nil, errors.New("gitlab: no project")
	}
	if cfg.Token == "" {
		return nil, errors.New("gitlab: no token")
	}
	if cfg.MaxRateLimitWait <= 0 {
		cfg.MaxRateLimitWait = 60 * time.Second
	}
	if cfg.Tries <= 0 {
		cfg.Tries = 3
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	hc.Transport = boundedTransport{next: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport)}
	opts := []gitlab.ClientOptionFunc{
		gitlab.WithHTTPClient(hc),
		// Retries are ours (do), bounded and on an injectable clock.
		gitlab.WithoutRetries(),
		gitlab.WithCustomLimiter(noLimiter{}),
		gitlab.WithUserAgent("gpu-rightsizing-recommender"),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, gitlab.WithBaseURL(cfg.BaseURL))
	}
	c, err := gitlab.NewClient(cfg.Token, opts...)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %w", err)
	}
	g := &GitLab{c: c, cfg: cfg}
	var p *gitlab.Project
	err = g.do(ctx, "read the project", true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		var resp *gitlab.Response
		var err error
		p, resp, err = c.Projects.GetProject(g.projectID(), nil, o)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	g.pid, g.path, g.cloneURL = p.ID, p.PathWithNamespace, p.HTTPURLToRepo
	return g, nil
}

var _ interface {
	Find(context.Context, string) ([]PullRequest, error)
	ListOpen(context.Context, string) ([]PullRequest, error)
	Open(context.Context, NewPullRequest) (PullRequest, error)
	Update(context.Context, int, string, string) error
	Close(context.Context, int, string) error
} = (*GitLab)(nil)

// CloneURL is the project's HTTPS clone URL, without credentials.
func (g *GitLab) CloneURL() string { return g.cloneURL }

// GitAuth is how git reaches the project with the same token: GitLab
// takes any user name with a token as password, and documents oauth2.
func (g *GitLab) GitAuth() Auth { return Auth{Token: g.cfg.Token, TokenUser: "oauth2"} }

// projectID is what the API is asked about: the numeric ID once known (it
// survives a rename during the run), the configured path or ID before.
func (g *GitLab) projectID() any {
	if g.pid != 0 {
		return g.pid
	}
	if id, err := strconv.ParseInt(g.cfg.Project, 10, 64); err == nil {
		return id
	}
	return g.cfg.Project
}

// Find lists the merge requests of a source branch in any state, newest
// first.
func (g *GitLab) Find(ctx context.Context, branch string) ([]PullRequest, error) {
	opt := &gitlab.ListProjectMergeRequestsOptions{
		ListOptions:  gitlab.ListOptions{PerPage: 100},
		State:        gitlab.Ptr("all"),
		SourceBranch: gitlab.Ptr(branch),
		OrderBy:      gitlab.Ptr("created_at"),
		Sort:         gitlab.Ptr("desc"),
	}
	return g.list(ctx, "find merge requests of "+branch, opt, func(PullRequest) bool { return true })
}

// ListOpen lists the open merge requests whose source branch starts with
// prefix. GitLab filters by exact branch only, so the prefix is matched
// here, over every page.
func (g *GitLab) ListOpen(ctx context.Context, prefix string) ([]PullRequest, error) {
	opt := &gitlab.ListProjectMergeRequestsOptions{
		ListOptions: gitlab.ListOptions{PerPage: 100},
		State:       gitlab.Ptr("opened"),
		OrderBy:     gitlab.Ptr("created_at"),
		Sort:        gitlab.Ptr("desc"),
	}
	return g.list(ctx, "list open merge requests", opt, func(pr PullRequest) bool {
		return strings.HasPrefix(pr.Branch, prefix)
	})
}

func (g *GitLab) list(ctx context.Context, what string, opt *gitlab.ListProjectMergeRequestsOptions, keep func(PullRequest) bool) ([]PullRequest, error) {
	var out []PullRequest
	var page []gitlab.RequestOptionFunc
	for range maxPages {
		var mrs []*gitlab.BasicMergeRequest
		var resp *gitlab.Response
		err := g.do(ctx, what, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
			var err error
			mrs, resp, err = g.c.MergeRequests.ListProjectMergeRequests(g.projectID(), opt, append(page, o)...)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, mr := range mrs {
			if pr := mergeRequest(mr); keep(pr) {
				out = append(out, pr)
			}
		}
		// Offset pagination names the next page in X-Next-Page; keyset
		// pagination (and large offset listings) in a Link header.
		switch {
		case resp.NextPage > 0:
			opt.Page, page = resp.NextPage, nil
		case resp.NextLink != "":
			page = []gitlab.RequestOptionFunc{gitlab.WithKeysetPaginationParameters(resp.NextLink)}
		default:
			return out, nil
		}
	}
	return nil, g.errorf("%s: more than %d pages", what, maxPages)
}

// draftPrefix marks a draft merge request: GitLab reads the title.
const draftPrefix = "Draft: "

var draftTitle = regexp.MustCompile(`(?i)^\s*(\[draft\]|\(draft\)|draft:|draft\s+-\s+)\s*`)

// mergeRequest is GitLab's merge request as the publisher sees it: its
// author is author.username; it is a fork's when source_project_id is not
// target_project_id.
func mergeRequest(mr *gitlab.BasicMergeRequest) PullRequest {
	pr := PullRequest{
		Fork:   mr.SourceProjectID != mr.TargetProjectID,
		Number: int(mr.IID),
		URL:    mr.WebURL,
		Branch: mr.SourceBranch,
		Base:   mr.TargetBranch,
		Title:  draftTitle.ReplaceAllString(mr.Title, ""),
		Body:   keptBody(mr.Description),
		Labels: mr.Labels,
		Draft:  mr.Draft,
	}
	if mr.Author != nil {
		pr.Author = mr.Author.Username
	}
	switch mr.State {
	case "merged":
		pr.State = Merged
	case "closed":
		pr.State = Closed
	default:
		// opened, or locked: a transient state while merging, not a
		// decline.
		pr.State = Open
	}
	return pr
}

// Open creates a merge request. A draft is marked by the title's "Draft: "
// prefix, as GitLab does; reviewers and assignees are user names, looked
// up once each. When GitLab answers that one is already open for the
// branch (a run killed after creating it), that one is updated instead.
func (g *GitLab) Open(ctx context.Context, n NewPullRequest) (PullRequest, error) {
	reviewers, err := g.userIDs(ctx, n.Reviewers)
	if err != nil {
		return PullRequest{}, err
	}
	assignees, err := g.userIDs(ctx, n.Assignees)
	if err != nil {
		return PullRequest{}, err
	}
	t := n.Title
	if n.Draft {
		t = draftPrefix + t
	}
	opt := &gitlab.CreateMergeRequestOptions{
		Title:        gitlab.Ptr(t),
		Description:  gitlab.Ptr(n.Body),
		SourceBranch: gitlab.Ptr(n.Branch),
		TargetBranch: gitlab.Ptr(n.Base),
	}
	if len(n.Labels) > 0 {
		opt.Labels = gitlab.Ptr(gitlab.LabelOptions(n.Labels))
	}
	if len(reviewers) > 0 {
		opt.ReviewerIDs = &reviewers
	}
	if len(assignees) > 0 {
		opt.AssigneeIDs = &assignees
	}
	var mr *gitlab.MergeRequest
	conflict := false
	err = g.do(ctx, "open a merge request for "+n.Branch, false, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		var resp *gitlab.Response
		var err error
		mr, resp, err = g.c.MergeRequests.CreateMergeRequest(g.projectID(), opt, o)
		conflict = gitlab.HasStatusCode(err, http.StatusConflict)
		return resp, err
	})
	if conflict {
		// "Another open merge request already exists for this source
		// branch": GitLab's answer to a second one.
		return g.adopt(ctx, n)
	}
	if err != nil {
		return PullRequest{}, err
	}
	return mergeRequest(&mr.BasicMergeRequest), nil
}

// adopt updates the merge request already open for n's branch to n, and
// returns it: only the tool's own, from the project itself onto n's base.
func (g *GitLab) adopt(ctx context.Context, n NewPullRequest) (PullRequest, error) {
	prs, err := g.Find(ctx, n.Branch)
	if err != nil {
		return PullRequest{}, err
	}
	me, err := g.Identity(ctx)
	if err != nil {
		return PullRequest{}, err
	}
	for _, pr := range prs {
		if pr.State != Open || pr.Base != n.Base || pr.Fork {
			continue
		}
		if !Mine(pr, me) {
			return PullRequest{}, withClass(g.errorf("open a merge request for %s: !%d, opened by %s, is open for it and is not the tool's", n.Branch, pr.Number, pr.Author), ErrConflict)
		}
		if err := g.Update(ctx, pr.Number, n.Title, n.Body); err != nil {
			return PullRequest{}, err
		}
		pr.Title, pr.Body = n.Title, n.Body
		return pr, nil
	}
	return PullRequest{}, withClass(g.errorf("open a merge request for %s: GitLab says one is open, but none is listed", n.Branch), ErrConflict)
}

// userIDs looks up user names.
func (g *GitLab) userIDs(ctx context.Context, names []string) ([]int64, error) {
	var ids []int64
	for _, name := range names {
		var users []*gitlab.User
		err := g.do(ctx, "look up user "+name, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
			var resp *gitlab.Response
			var err error
			users, resp, err = g.c.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr(strings.TrimPrefix(name, "@"))}, o)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		if len(users) == 0 {
			return nil, g.errorf("look up user %q: no such user", name)
		}
		ids = append(ids, users[0].ID)
	}
	return ids, nil
}

// Update sets a merge request's title and description. A draft stays a
// draft and a ready one ready: the title carries that state on GitLab, so
// the merge request is read first.
func (g *GitLab) Update(ctx context.Context, number int, title, body string) error {
	var mr *gitlab.MergeRequest
	what := fmt.Sprintf("read merge request !%d", number)
	err := g.do(ctx, what, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		var resp *gitlab.Response
		var err error
		mr, resp, err = g.c.MergeRequests.GetMergeRequest(g.projectID(), int64(number), nil, o)
		return resp, err
	})
	if err != nil {
		return err
	}
	if mr.Draft {
		title = draftPrefix + title
	}
	what = fmt.Sprintf("update merge request !%d", number)
	return g.do(ctx, what, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		_, resp, err := g.c.MergeRequests.UpdateMergeRequest(g.projectID(), int64(number),
			&gitlab.UpdateMergeRequestOptions{Title: gitlab.Ptr(title), Description: gitlab.Ptr(body)}, o)
		return resp, err
	})
}

// Relabel adds labels to a merge request and removes others in one
// update, with GitLab's add_labels and remove_labels: labels a person
// set and neither names stay.
func (g *GitLab) Relabel(ctx context.Context, number int, add, remove []string) error {
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	opt := &gitlab.UpdateMergeRequestOptions{}
	if len(add) > 0 {
		opt.AddLabels = gitlab.Ptr(gitlab.LabelOptions(add))
	}
	if len(remove) > 0 {
		opt.RemoveLabels = gitlab.Ptr(gitlab.LabelOptions(remove))
	}
	return g.do(ctx, fmt.Sprintf("label merge request !%d", number), true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		_, resp, err := g.c.MergeRequests.UpdateMergeRequest(g.projectID(), int64(number), opt, o)
		return resp, err
	})
}

// Close comments on a merge request, then closes it.
func (g *GitLab) Close(ctx context.Context, number int, comment string) error {
	what := fmt.Sprintf("comment on merge request !%d", number)
	err := g.do(ctx, what, false, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		_, resp, err := g.c.Notes.CreateMergeRequestNote(g.projectID(), int64(number),
			&gitlab.CreateMergeRequestNoteOptions{Body: gitlab.Ptr(comment)}, o)
		return resp, err
	})
	if err != nil {
		return err
	}
	what = fmt.Sprintf("close merge request !%d", number)
	return g.do(ctx, what, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		_, resp, err := g.c.MergeRequests.UpdateMergeRequest(g.projectID(), int64(number),
			&gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")}, o)
		return resp, err
	})
}

// do makes one API call, as GitLab documents its errors: a 429 waits for
// Retry-After or RateLimit-Reset, up to MaxRateLimitWait in all; a 5xx is
// tried again with backoff, up to Tries times (and a transport error too,
// when the call is idempotent); anything else is classified and returned.
func (g *GitLab) do(ctx context.Context, what string, idempotent bool, call func(gitlab.RequestOptionFunc) (*gitlab.Response, error)) error {
	var waited time.Duration
	failures := 0
	for {
		resp, err := call(gitlab.WithContext(ctx))
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return g.errorf("%s: %w", what, ctx.Err())
		}
		status := 0
		if resp != nil && resp.Response != nil {
			status = resp.StatusCode
		}
		var wait time.Duration
		switch {
		case status == http.StatusTooManyRequests:
			wait = g.rateLimitWait(resp.Header)
			if waited+wait > g.cfg.MaxRateLimitWait {
				return g.errorf("%s: %w (GitLab asks to wait %s more; %s waited already)", what, ErrRateLimited, wait, waited)
			}
			waited += wait
		case status >= 500 || (status == 0 && idempotent && !errors.Is(err, gitlab.ErrNotFound)):
			failures++
			if failures >= g.cfg.Tries {
				if status == 0 {
					return g.errorf("%s: %w after %d tries: %w", what, ErrUnavailable, failures, err)
				}
				return g.errorf("%s: %w after %d tries: HTTP %d", what, ErrUnavailable, failures, status)
			}
			wait = time.Duration(1<<(failures-1)) * time.Second
		default:
			return g.classify(what, err)
		}
		if err := g.cfg.Sleep(ctx, wait); err != nil {
			return g.errorf("%s: %w", what, err)
		}
	}
}

// rateLimitWait is how long a 429 asks to wait: Retry-After (seconds or a
// date), else RateLimit-Reset (Unix seconds), else a minute, as GitLab's
// limits are per minute.
func (g *GitLab) rateLimitWait(h http.Header) time.Duration {
	now := g.cfg.Now()
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0)
		}
	}
	if v := h.Get("RateLimit-Reset"); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			return max(time.Unix(s, 0).Sub(now), 0)
		}
	}
	return time.Minute
}

// classify turns an API error into one that says what to do about it.
func (g *GitLab) classify(what string, err error) error {
	if errors.Is(err, gitlab.ErrNotFound) {
		return g.errorf("%s: %w", what, ErrNotFound)
	}
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return g.errorf("%s: %w", what, err)
	}
	switch er.Response.StatusCode {
	case http.StatusUnauthorized:
		return g.errorf("%s: %w (HTTP 401)", what, ErrUnauthorized)
	case http.StatusForbidden:
		var body struct {
			Scope string `json:"scope"`
		}
		_ = json.Unmarshal(er.Body, &body)
		return g.errorf("%s: %w (HTTP 403: %s): the token needs the `%s` scope, and its user the Developer role on %s to push",
			what, ErrForbidden, er.Message, cmp.Or(body.Scope, "api"), g.cfg.Project)
	}
	return g.errorf("%s: HTTP %d: %s", what, er.Response.StatusCode, er.Message)
}

// errorf is fmt.Errorf prefixed with the project, scrubbing the token: an
// error body or a transport error may quote what the request carried.
func (g *GitLab) errorf(format string, args ...any) error {
	return scrub(fmt.Errorf("gitlab %s: "+format, append([]any{g.cfg.Project}, args...)...), g.cfg.Token)
}
