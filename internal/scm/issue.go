package scm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v60/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// Issue is an issue (GitHub, GitLab) or the local provider's Markdown
// file, as the dashboard sees it: the tool keeps one, and people tick its
// checkboxes.
type Issue struct {
	Number int
	URL    string
	Title  string
	Body   string
	Labels []string
	// Author is who opened it (GitHub's user.login, GitLab's
	// author.username); "" on the local stand-in, whose issues are all
	// the tool's.
	Author string
	// Oversized is set when the body is longer than any the tool keeps
	// (256 KiB): it is not kept, and Body is empty. GitLab takes a
	// description of a million characters, so a person can make one.
	Oversized bool
}

// Issues lists the open issues that carry label, oldest first. GitHub
// lists pull requests as issues too; they are left out.
func (g *GitHub) Issues(ctx context.Context, label string) ([]Issue, error) {
	opts := &github.IssueListByRepoOptions{State: "open", Labels: []string{label}, Sort: "created", Direction: "asc",
		ListOptions: github.ListOptions{PerPage: g.cfg.PerPage, Page: 1}}
	var out []Issue
	for range maxPages {
		var page []*github.Issue
		var next int
		err := g.do(ctx, "list the issues labelled "+label, func(ctx context.Context, c *github.Client) (*github.Response, error) {
			var resp *github.Response
			var err error
			page, resp, err = c.Issues.ListByRepo(ctx, g.cfg.Owner, g.cfg.Repo, opts)
			if resp != nil {
				next = resp.NextPage
			}
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, is := range page {
			if !is.IsPullRequest() {
				out = append(out, githubIssue(is))
			}
		}
		if next == 0 || next <= opts.Page {
			// Numbers grow with creation: oldest first whatever the
			// pages said.
			slices.SortFunc(out, func(a, b Issue) int { return cmp.Compare(a.Number, b.Number) })
			return out, nil
		}
		opts.Page = next
	}
	return nil, fmt.Errorf("github: list the issues labelled %s: more than %d pages", label, maxPages)
}

// OpenIssue opens an issue with labels.
func (g *GitHub) OpenIssue(ctx context.Context, title, body string, labels []string) (Issue, error) {
	var created *github.Issue
	err := g.do(ctx, "open an issue", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		var resp *github.Response
		var err error
		created, resp, err = c.Issues.Create(ctx, g.cfg.Owner, g.cfg.Repo, &github.IssueRequest{
			Title: github.String(title), Body: github.String(body), Labels: &labels})
		return resp, err
	})
	if err != nil {
		return Issue{}, err
	}
	return githubIssue(created), nil
}

// EditIssue sets an issue's title and body.
func (g *GitHub) EditIssue(ctx context.Context, number int, title, body string) error {
	return g.do(ctx, fmt.Sprintf("edit issue #%d", number), func(ctx context.Context, c *github.Client) (*github.Response, error) {
		_, resp, err := c.Issues.Edit(ctx, g.cfg.Owner, g.cfg.Repo, number, &github.IssueRequest{
			Title: github.String(title), Body: github.String(body)})
		return resp, err
	})
}

func githubIssue(is *github.Issue) Issue {
	out := Issue{Number: is.GetNumber(), URL: is.GetHTMLURL(), Title: is.GetTitle(), Body: keptBody(is.GetBody()),
		Author: is.GetUser().GetLogin(), Oversized: len(is.GetBody()) > maxBodyBytes}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// Issues lists the project's open issues that carry label, oldest first.
func (g *GitLab) Issues(ctx context.Context, label string) ([]Issue, error) {
	opt := &gitlab.ListProjectIssuesOptions{
		ListOptions: gitlab.ListOptions{PerPage: 100},
		State:       gitlab.Ptr("opened"),
		Labels:      &gitlab.LabelOptions{label},
		OrderBy:     gitlab.Ptr("created_at"),
		Sort:        gitlab.Ptr("asc"),
	}
	var out []Issue
	for range maxPages {
		var page []*gitlab.Issue
		var resp *gitlab.Response
		err := g.do(ctx, "list the issues labelled "+label, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
			var err error
			page, resp, err = g.c.Issues.ListProjectIssues(g.projectID(), opt, o)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, is := range page {
			out = append(out, gitlabIssue(is))
		}
		if resp.NextPage == 0 {
			slices.SortFunc(out, func(a, b Issue) int { return cmp.Compare(a.Number, b.Number) })
			return out, nil
		}
		opt.Page = resp.NextPage
	}
	return nil, g.errorf("list the issues labelled %s: more than %d pages", label, maxPages)
}

// OpenIssue opens an issue with labels. Creating is not idempotent: it is
// not tried again after a transport error.
func (g *GitLab) OpenIssue(ctx context.Context, title, body string, labels []string) (Issue, error) {
	var created *gitlab.Issue
	err := g.do(ctx, "open an issue", false, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		var resp *gitlab.Response
		var err error
		created, resp, err = g.c.Issues.CreateIssue(g.projectID(), &gitlab.CreateIssueOptions{
			Title: gitlab.Ptr(title), Description: gitlab.Ptr(body), Labels: (*gitlab.LabelOptions)(&labels)}, o)
		return resp, err
	})
	if err != nil {
		return Issue{}, err
	}
	return gitlabIssue(created), nil
}

// EditIssue sets an issue's title and description.
func (g *GitLab) EditIssue(ctx context.Context, number int, title, body string) error {
	return g.do(ctx, fmt.Sprintf("edit issue #%d", number), true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		_, resp, err := g.c.Issues.UpdateIssue(g.projectID(), int64(number), &gitlab.UpdateIssueOptions{
			Title: gitlab.Ptr(title), Description: gitlab.Ptr(body)}, o)
		return resp, err
	})
}

func gitlabIssue(is *gitlab.Issue) Issue {
	out := Issue{Number: int(is.IID), URL: is.WebURL, Title: is.Title, Body: keptBody(is.Description), Labels: is.Labels,
		Oversized: len(is.Description) > maxBodyBytes}
	if is.Author != nil {
		out.Author = is.Author.Username
	}
	return out
}

// The local provider keeps each issue as one Markdown file beside its pull
// requests, issue-NNNN.md: a "# title" line, a blank line, the body. A
// person ticks a checkbox by editing the file.
var localIssueName = regexp.MustCompile(`^issue-(\d{4,})\.md$`)

// Issues lists the local issues, oldest first. The local provider holds
// only the tool's own issues, so every one carries every label. An empty
// file is one a run was killed creating before this version wrote issues
// whole: it is no issue (OpenIssue replaces it). One longer than a body
// is kept is Oversized, not read.
func (l *Local) Issues(_ context.Context, _ string) ([]Issue, error) {
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("local issues: %w", err)
	}
	var out []Issue
	for _, e := range entries {
		m := localIssueName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		path := filepath.Join(l.dir, e.Name())
		url := "file://" + filepath.ToSlash(path)
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("local issue: %w", err)
		}
		switch {
		case info.Size() == 0:
			continue
		case info.Size() > maxBodyBytes:
			out = append(out, Issue{Number: n, URL: url, Oversized: true})
			continue
		}
		b, err := readBounded(path, maxBodyBytes)
		if err != nil {
			return nil, fmt.Errorf("local issue: %w", err)
		}
		if len(b) > maxBodyBytes {
			out = append(out, Issue{Number: n, URL: url, Oversized: true})
			continue
		}
		title, body := splitIssue(string(b))
		out = append(out, Issue{Number: n, URL: url, Title: title, Body: body})
	}
	slices.SortFunc(out, func(a, b Issue) int { return cmp.Compare(a.Number, b.Number) })
	return out, nil
}

// splitIssue reads a local issue file: its first line, when it is a
// "# " heading, is the title; the body follows the blank line after it.
func splitIssue(s string) (title, body string) {
	first, rest, _ := strings.Cut(s, "\n")
	t, ok := strings.CutPrefix(strings.TrimSuffix(first, "\r"), "# ")
	if !ok {
		return "", s
	}
	return t, strings.TrimPrefix(strings.TrimPrefix(rest, "\r\n"), "\n")
}

// OpenIssue writes a new local issue, numbered one more than the highest,
// whole (atomic.go): a run killed meanwhile leaves no issue or all of it.
// An empty issue file, which a run killed before this version wrote files
// whole leaves, is removed first: it takes its number back.
func (l *Local) OpenIssue(_ context.Context, title, body string, _ []string) (Issue, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Issue{}, fmt.Errorf("local issues: %w", err)
	}
	next := 1
	for _, e := range entries {
		m := localIssueName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		if info, err := e.Info(); err == nil && info.Size() == 0 {
			if err := os.Remove(filepath.Join(l.dir, e.Name())); err != nil {
				return Issue{}, fmt.Errorf("local issues: %w", err)
			}
			continue
		}
		next = max(next, n+1)
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return Issue{}, fmt.Errorf("local issues: %w", err)
	}
	path := l.issuePath(next)
	if err := createFile(path, []byte("# "+title+"\n\n"+body)); err != nil {
		return Issue{}, fmt.Errorf("local issue #%d: %w", next, err)
	}
	return Issue{Number: next, URL: "file://" + filepath.ToSlash(path), Title: title, Body: body}, nil
}

// EditIssue rewrites a local issue whole (atomic.go), so that a killed
// run leaves the old or the new version.
func (l *Local) EditIssue(_ context.Context, number int, title, body string) error {
	path := l.issuePath(number)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("local issue #%d: %w", number, err)
	}
	if err := writeFile(path, []byte("# "+title+"\n\n"+body)); err != nil {
		return fmt.Errorf("local issue #%d: %w", number, err)
	}
	return nil
}

// readBounded reads at most limit+1 bytes of path: enough to tell a file
// longer than limit, whatever it grew to since it was listed.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(limit)+1))
}

func (l *Local) issuePath(number int) string {
	return filepath.Join(l.dir, fmt.Sprintf("issue-%04d.md", number))
}
