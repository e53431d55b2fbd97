package scm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v60/github"

	"github.com/gpu-rightsizing/recommender/internal/localfile"
)

// GitHubConfig says which repository to publish to and how to
// authenticate: a token, or a GitHub App installation.
type GitHubConfig struct {
	Owner, Repo string
	// BaseURL is the REST API's root: https://HOST/api/v3/ for GitHub
	// Enterprise Server; empty for github.com.
	BaseURL string

	// Token is a personal access token (fine-grained or classic).
	Token string
	// AppID, InstallationID and PrivateKeyFile authenticate as a GitHub
	// App installation instead of a token.
	AppID, InstallationID int64
	PrivateKeyFile        string

	// Transport carries the requests (nil: http.DefaultTransport); tests
	// and proxies set it.
	Transport http.RoundTripper
	// RequestTimeout bounds each request (default 30s).
	RequestTimeout time.Duration
	// MaxWait bounds the time spent waiting for rate limits and retrying
	// server errors in one operation (default 60s): a longer wait fails
	// the operation with ErrRateLimited instead.
	MaxWait time.Duration
	// PerPage is the page size of lists (default 100, GitHub's maximum).
	PerPage int
	// Now and Sleep are the clock; tests replace them so as not to wait.
	// Sleep returns early with ctx's error when ctx ends.
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger
}

// GitHub holds pull requests on GitHub or GitHub Enterprise Server.
type GitHub struct {
	cfg       GitHubConfig
	newClient func() *github.Client
	client    *github.Client
	cloneURL  string
	gitToken  string
	secrets   []string
	identity  identity
}

var _ interface {
	Find(ctx context.Context, branch string) ([]PullRequest, error)
	ListOpen(ctx context.Context, prefix string) ([]PullRequest, error)
	Open(ctx context.Context, pr NewPullRequest) (PullRequest, error)
	Update(ctx context.Context, number int, title, body string) error
	Close(ctx context.Context, number int, comment string) error
} = (*GitHub)(nil)

// NewGitHub connects to the repository: it authenticates (for an App,
// it obtains an installation token) and reads the repository, so that a
// wrong token, a missing permission or a wrong name is reported before
// anything is done.
func NewGitHub(ctx context.Context, cfg GitHubConfig) (*GitHub, error) {
	switch {
	case cfg.Owner == "" || cfg.Repo == "":
		return nil, errors.New("github: the repository's owner and name are required")
	case cfg.Token != "" && cfg.AppID != 0:
		return nil, errors.New("github: use a token or a GitHub App, not both")
	case cfg.Token == "" && cfg.AppID == 0:
		return nil, errors.New("github: a token or a GitHub App (app ID, installation ID, private key file) is required")
	case cfg.AppID != 0 && (cfg.InstallationID == 0 || cfg.PrivateKeyFile == ""):
		return nil, errors.New("github: a GitHub App needs its installation ID and private key file")
	}
	cfg.Transport = cmp.Or[http.RoundTripper](cfg.Transport, http.DefaultTransport)
	cfg.RequestTimeout = cmp.Or(cfg.RequestTimeout, 30*time.Second)
	cfg.MaxWait = cmp.Or(cfg.MaxWait, 60*time.Second)
	cfg.PerPage = cmp.Or(cfg.PerPage, 100)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	g := &GitHub{cfg: cfg}
	if cfg.Token != "" {
		g.secrets = []string{cfg.Token}
	}

	bounded := boundedTransport{next: cfg.Transport}
	httpClient := &http.Client{Transport: bounded}
	var itr *ghinstallation.Transport
	if cfg.AppID != 0 {
		var err error
		key, err := localfile.Read(cfg.PrivateKeyFile, localfile.MaxKey)
		if err != nil {
			return nil, fmt.Errorf("github: GitHub App %d: private key: %w", cfg.AppID, err)
		}
		itr, err = ghinstallation.New(bounded, cfg.AppID, cfg.InstallationID, key)
		if err != nil {
			return nil, fmt.Errorf("github: GitHub App %d: %w", cfg.AppID, err)
		}
		if cfg.BaseURL != "" {
			itr.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
		}
		httpClient = &http.Client{Transport: itr}
	}
	g.newClient = func() *github.Client {
		c := github.NewClient(httpClient)
		if cfg.Token != "" {
			c = c.WithAuthToken(cfg.Token)
		}
		if cfg.BaseURL != "" {
			// Checked once below; the same URL parses every time.
			c, _ = c.WithEnterpriseURLs(cfg.BaseURL, cfg.BaseURL)
		}
		return c
	}
	if cfg.BaseURL != "" {
		if _, err := github.NewClient(nil).WithEnterpriseURLs(cfg.BaseURL, cfg.BaseURL); err != nil {
			return nil, fmt.Errorf("github: base URL: %w", err)
		}
	}
	g.client = g.newClient()

	if itr != nil {
		tctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		tok, err := itr.Token(tctx)
		cancel()
		if err != nil {
			return nil, g.appError(err)
		}
		g.gitToken = tok
		g.secrets = append(g.secrets, tok)
	} else {
		g.gitToken = cfg.Token
	}

	var repo *github.Repository
	err := g.do(ctx, "read the repository", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		repo, resp, err = c.Repositories.Get(ctx, cfg.Owner, cfg.Repo)
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	g.cloneURL = repo.GetCloneURL()
	return g, nil
}

// CloneURL is the repository's HTTPS clone URL, without credentials.
func (g *GitHub) CloneURL() string { return g.cloneURL }

// GitAuth is how git reaches the repository with the same credentials:
// the token, or the App's installation token (valid for an hour, longer
// than a run).
func (g *GitHub) GitAuth() Auth {
	return Auth{Token: g.gitToken, TokenUser: "x-access-token"}
}

// Find lists the pull requests whose head is branch in this repository,
// in any state, newest first.
func (g *GitHub) Find(ctx context.Context, branch string) ([]PullRequest, error) {
	out, err := g.list(ctx, "find the pull requests of "+branch, &github.PullRequestListOptions{
		State: "all", Head: g.cfg.Owner + ":" + branch, Sort: "created", Direction: "desc"},
		func(pr PullRequest) bool { return pr.Branch == branch })
	if err != nil {
		return nil, err
	}
	// Numbers grow with creation: newest first whatever the pages said.
	slices.SortFunc(out, func(a, b PullRequest) int { return cmp.Compare(b.Number, a.Number) })
	return out, nil
}

// ListOpen lists the open pull requests whose head branch starts with
// prefix, those from forks (which may use the same branch names) marked
// Fork.
func (g *GitHub) ListOpen(ctx context.Context, prefix string) ([]PullRequest, error) {
	return g.list(ctx, "list the open pull requests", &github.PullRequestListOptions{
		State: "open", Sort: "created", Direction: "asc"},
		func(pr PullRequest) bool { return strings.HasPrefix(pr.Branch, prefix) })
}

// list reads every page of a list of pull requests, following the Link
// header, and keeps those keep accepts: only they are held in memory.
// Those from forks are among them, marked Fork: the publisher names them
// as look-alikes. At most maxPages pages are read.
func (g *GitHub) list(ctx context.Context, what string, opts *github.PullRequestListOptions, keep func(PullRequest) bool) ([]PullRequest, error) {
	opts.PerPage = g.cfg.PerPage
	opts.Page = 1
	var out []PullRequest
	for range maxPages {
		var page []*github.PullRequest
		var next int
		err := g.do(ctx, what, func(ctx context.Context, c *github.Client) (*github.Response, error) {
			var resp *github.Response
			var err error
			page, resp, err = c.PullRequests.List(ctx, g.cfg.Owner, g.cfg.Repo, opts)
			if resp != nil {
				next = resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, pr := range page {
			if p := g.pullRequest(pr); keep(p) {
				out = append(out, p)
			}
		}
		if next == 0 || next <= opts.Page {
			return out, nil
		}
		opts.Page = next
	}
	return nil, fmt.Errorf("github: %s: more than %d pages", what, maxPages)
}

// Open opens a pull request, then labels it, asks for reviews and
// assigns it. When GitHub says one is already open for the branch (a run
// stopped between pushing and recording), that one is updated instead.
// Labels, reviewers and assignees are best effort: the pull request
// exists either way, and a reviewer who cannot review must not make the
// next run open another.
func (g *GitHub) Open(ctx context.Context, n NewPullRequest) (PullRequest, error) {
	var created *github.PullRequest
	err := g.do(ctx, "open a pull request for "+n.Branch, func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		created, resp, err = c.PullRequests.Create(ctx, g.cfg.Owner, g.cfg.Repo, &github.NewPullRequest{
			Title: github.String(n.Title), Head: github.String(n.Branch), Base: github.String(n.Base),
			Body: github.String(n.Body), Draft: github.Bool(n.Draft), MaintainerCanModify: github.Bool(true),
		})
		return resp, err
	})
	var pr PullRequest
	switch {
	case err == nil:
		pr = g.pullRequest(created)
	case alreadyExists(err):
		existing, ferr := g.Find(ctx, n.Branch)
		if ferr != nil {
			return PullRequest{}, ferr
		}
		me, ierr := g.Identity(ctx)
		if ierr != nil {
			return PullRequest{}, ierr
		}
		// Only the tool's own is adopted: one a person opened from the
		// same branch onto the same base is theirs to keep.
		i := slices.IndexFunc(existing, func(p PullRequest) bool { return p.State == Open && p.Base == n.Base && Mine(p, me) })
		if i < 0 {
			if j := slices.IndexFunc(existing, func(p PullRequest) bool { return p.State == Open && p.Base == n.Base }); j >= 0 {
				return PullRequest{}, withClass(fmt.Errorf("github: open a pull request for %s: #%d, opened by %s, is open for it and is not the tool's: %w",
					n.Branch, existing[j].Number, existing[j].Author, err), ErrConflict)
			}
			return PullRequest{}, withClass(err, ErrConflict)
		}
		pr = existing[i]
		g.cfg.Logger.Info("github: a pull request was already open for the branch; updating it", "branch", n.Branch, "number", pr.Number)
		if err := g.Update(ctx, pr.Number, n.Title, n.Body); err != nil {
			return PullRequest{}, err
		}
		pr.Title, pr.Body = n.Title, n.Body
	default:
		return PullRequest{}, err
	}

	if len(n.Labels) > 0 {
		g.bestEffort(ctx, "label", pr.Number, func(ctx context.Context, c *github.Client) (*github.Response, error) {
			_, resp, err := c.Issues.AddLabelsToIssue(ctx, g.cfg.Owner, g.cfg.Repo, pr.Number, n.Labels)
			return resp, err
		})
		pr.Labels = slices.Compact(slices.Sorted(slices.Values(append(pr.Labels, n.Labels...))))
	}
	if len(n.Reviewers) > 0 {
		g.bestEffort(ctx, "request reviews for", pr.Number, func(ctx context.Context, c *github.Client) (*github.Response, error) {
			_, resp, err := c.PullRequests.RequestReviewers(ctx, g.cfg.Owner, g.cfg.Repo, pr.Number, github.ReviewersRequest{Reviewers: n.Reviewers})
			return resp, err
		})
	}
	if len(n.Assignees) > 0 {
		g.bestEffort(ctx, "assign", pr.Number, func(ctx context.Context, c *github.Client) (*github.Response, error) {
			_, resp, err := c.Issues.AddAssignees(ctx, g.cfg.Owner, g.cfg.Repo, pr.Number, n.Assignees)
			return resp, err
		})
	}
	return pr, nil
}

func (g *GitHub) bestEffort(ctx context.Context, what string, number int, fn func(context.Context, *github.Client) (*github.Response, error)) {
	if err := g.do(ctx, fmt.Sprintf("%s #%d", what, number), fn); err != nil {
		g.cfg.Logger.Warn("github: the pull request is open, but not all of it was set", "number", number, "err", err)
	}
}

// Update changes a pull request's title and body.
func (g *GitHub) Update(ctx context.Context, number int, title, body string) error {
	return g.do(ctx, fmt.Sprintf("update #%d", number), func(ctx context.Context, c *github.Client) (*github.Response, error) {
		_, resp, err := c.PullRequests.Edit(ctx, g.cfg.Owner, g.cfg.Repo, number, &github.PullRequest{
			Title: github.String(title), Body: github.String(body)})
		return resp, err
	})
}

// Relabel adds labels to a pull request and removes others, through
// GitHub's issue label endpoints: one POST adds (labels it already has
// stay), one DELETE removes each. A label already gone answers 404,
// which is what was wanted.
func (g *GitHub) Relabel(ctx context.Context, number int, add, remove []string) error {
	if len(add) > 0 {
		err := g.do(ctx, fmt.Sprintf("label #%d", number), func(ctx context.Context, c *github.Client) (*github.Response, error) {
			_, resp, err := c.Issues.AddLabelsToIssue(ctx, g.cfg.Owner, g.cfg.Repo, number, add)
			return resp, err
		})
		if err != nil {
			return err
		}
	}
	for _, l := range remove {
		err := g.do(ctx, fmt.Sprintf("remove label %q from #%d", l, number), func(ctx context.Context, c *github.Client) (*github.Response, error) {
			resp, err := c.Issues.RemoveLabelForIssue(ctx, g.cfg.Owner, g.cfg.Repo, number, url.PathEscape(l))
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				return resp, nil
			}
			return resp, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Close comments on a pull request, so that the reason is there when a
// person looks, then closes it.
func (g *GitHub) Close(ctx context.Context, number int, comment string) error {
	if comment != "" {
		err := g.do(ctx, fmt.Sprintf("comment on #%d", number), func(ctx context.Context, c *github.Client) (*github.Response, error) {
			_, resp, err := c.Issues.CreateComment(ctx, g.cfg.Owner, g.cfg.Repo, number, &github.IssueComment{Body: github.String(comment)})
			return resp, err
		})
		if err != nil {
			return err
		}
	}
	return g.do(ctx, fmt.Sprintf("close #%d", number), func(ctx context.Context, c *github.Client) (*github.Response, error) {
		_, resp, err := c.PullRequests.Edit(ctx, g.cfg.Owner, g.cfg.Repo, number, &github.PullRequest{State: github.String("closed")})
		return resp, err
	})
}

// pullRequest is GitHub's pull request as the publisher sees it: merged
// is a state of its own, told by merged_at, which GitHub sets on merge
// and never on a close; its author is user.login; it is a fork's unless
// head.repo.full_name is this repository (GitHub leaves head.repo null
// when the fork was deleted).
func (g *GitHub) pullRequest(pr *github.PullRequest) PullRequest {
	out := PullRequest{
		Number: pr.GetNumber(), URL: pr.GetHTMLURL(), Branch: pr.GetHead().GetRef(), Base: pr.GetBase().GetRef(),
		Title: pr.GetTitle(), Body: keptBody(pr.GetBody()), Draft: pr.GetDraft(), State: Open,
		Author: pr.GetUser().GetLogin(),
		Fork:   !strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), g.cfg.Owner+"/"+g.cfg.Repo),
	}
	switch {
	case pr.MergedAt != nil || pr.GetMerged():
		out.State = Merged
	case pr.GetState() == "closed":
		out.State = Closed
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// alreadyExists tells GitHub's 422 for a second pull request on a head.
func alreadyExists(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	if strings.Contains(er.Message, "already exists") {
		return true
	}
	for _, e := range er.Errors {
		if strings.Contains(e.Message, "already exists") {
			return true
		}
	}
	return false
}

// maxTries bounds the tries of a request that met a server error.
const maxTries = 3

// do runs one API call, each try under its own timeout, waiting out
// rate limits and retrying server errors within MaxWait, and returns the
// error classified, with no secret in it.
func (g *GitHub) do(ctx context.Context, what string, call func(context.Context, *github.Client) (*github.Response, error)) error {
	var waited time.Duration
	for try := 1; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, g.cfg.RequestTimeout)
		_, err := call(rctx, g.client)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("github: %s: %w", what, ctx.Err())
		}
		wait, why, retry := g.retryAfter(err, try)
		if !retry {
			return g.classify(what, err)
		}
		if waited+wait > g.cfg.MaxWait {
			if why == "server error" {
				return withClass(g.scrub(fmt.Errorf("github: %s: %w", what, err)), ErrUnavailable)
			}
			return g.scrub(fmt.Errorf("github: %s: %w: %s asks to wait %v, more than the %v this run waits in all (%w)",
				what, ErrRateLimited, why, wait.Round(time.Second), g.cfg.MaxWait, err))
		}
		g.cfg.Logger.Warn("github: waiting before trying again", "op", what, "why", why, "wait", wait, "try", try)
		if err := g.cfg.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("github: %s: %w", what, err)
		}
		waited += wait
		// go-github remembers a limit by the wall clock and refuses
		// requests until then without asking; after the wait, ask afresh.
		g.client = g.newClient()
	}
}

// retryAfter says whether err is worth another try, after how long and
// why: rate limits as GitHub documents them (403 or 429 with
// X-RateLimit-Remaining: 0 until X-RateLimit-Reset; secondary limits with
// Retry-After, or a minute when it is absent), and server errors with
// backoff for maxTries tries.
func (g *GitHub) retryAfter(err error, try int) (time.Duration, string, bool) {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var er *github.ErrorResponse
	switch {
	case errors.As(err, &rl):
		return g.untilReset(rl.Rate.Reset.Time), "the primary rate limit", true
	case errors.As(err, &abuse):
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			return *abuse.RetryAfter, "the secondary rate limit", true
		}
		return time.Minute, "the secondary rate limit", true
	case errors.As(err, &er) && er.Response != nil:
		h, code := er.Response.Header, er.Response.StatusCode
		// go-github v60 maps neither 429 nor a 403 whose body does not
		// name the secondary limit; the headers still say what to do.
		if code == http.StatusTooManyRequests || code == http.StatusForbidden {
			if s := h.Get("Retry-After"); s != "" {
				if n, err := strconv.Atoi(s); err == nil && n >= 0 {
					return time.Duration(n) * time.Second, "the secondary rate limit", true
				}
			}
			if h.Get("X-RateLimit-Remaining") == "0" {
				if n, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
					return g.untilReset(time.Unix(n, 0)), "the primary rate limit", true
				}
			}
			if code == http.StatusTooManyRequests || strings.Contains(strings.ToLower(er.Message), "secondary rate limit") {
				return time.Minute, "the secondary rate limit", true
			}
		}
		if code >= 500 && try < maxTries {
			return time.Duration(1<<(try-1)) * time.Second, "server error", true
		}
	}
	return 0, "", false
}

// untilReset is the wait until a primary limit resets, a second more for
// the clocks' difference.
func (g *GitHub) untilReset(reset time.Time) time.Duration {
	if reset.IsZero() {
		return time.Minute
	}
	return max(reset.Sub(g.cfg.Now())+time.Second, time.Second)
}

// classify names what a failed request means for the person running the
// tool.
func (g *GitHub) classify(what string, err error) error {
	repo := g.cfg.Owner + "/" + g.cfg.Repo
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusUnauthorized:
			return g.scrub(fmt.Errorf("github: %s: %w (401: %s)", what, ErrUnauthorized, er.Message))
		case http.StatusForbidden:
			return g.scrub(fmt.Errorf("github: %s in %s: %w: a fine-grained token needs `pull_requests: write` and `contents: write` on the repository (and `issues: write` for the dashboard), a classic token the `repo` scope, a GitHub App the same permissions on its installation (403: %s)",
				what, repo, ErrForbidden, er.Message))
		case http.StatusNotFound:
			return g.scrub(fmt.Errorf("github: %s: %s: %w (404)", what, repo, ErrNotFound))
		}
		if er.Response.StatusCode >= 500 {
			// Retried maxTries times already (retryAfter).
			return withClass(g.scrub(fmt.Errorf("github: %s: %w", what, err)), ErrUnavailable)
		}
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) {
		return g.appError(err)
	}
	return g.scrub(fmt.Errorf("github: %s: %w", what, err))
}

// appError explains a failure to obtain an installation token.
func (g *GitHub) appError(err error) error {
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		switch he.Response.StatusCode {
		case http.StatusUnauthorized:
			return g.scrub(fmt.Errorf("github: GitHub App %d: %w: the App's ID or private key is wrong (%w)", g.cfg.AppID, ErrUnauthorized, err))
		case http.StatusNotFound:
			return g.scrub(fmt.Errorf("github: GitHub App %d: installation %d not found (%w)", g.cfg.AppID, g.cfg.InstallationID, err))
		}
	}
	return g.scrub(fmt.Errorf("github: GitHub App %d: an installation token: %w", g.cfg.AppID, err))
}

// scrub removes the token and the App's installation token from err's
// text.
func (g *GitHub) scrub(err error) error { return scrub(err, g.secrets...) }

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
