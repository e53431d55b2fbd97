package scm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-github/v60/github"
	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// Who the tool is on a forge, and whose edits it trusts: the pull
// requests and the dashboard it acts on are the ones its own user opened,
// and a box ticked in their bodies counts only when whoever changed the
// body may push to the repository (docs/security.md).

// identity caches a forge's answer to who the tool is: it does not
// change during a run.
type identity struct {
	mu    sync.Mutex
	login string
}

func (id *identity) get(ctx context.Context, ask func(context.Context) (string, error)) (string, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.login != "" {
		return id.login, nil
	}
	login, err := ask(ctx)
	if err != nil {
		return "", err
	}
	if login == "" {
		return "", errors.New("the forge names no user for the tool's credentials")
	}
	id.login = login
	return login, nil
}

// Mine reports whether the tool opened pr, acting as me: from a branch of
// the repository itself, by its own user. Logins are compared as GitHub
// and GitLab compare them, without case.
func Mine(pr PullRequest, me string) bool {
	return !pr.Fork && strings.EqualFold(pr.Author, me)
}

// MineIssue reports whether the tool opened is, acting as me.
func MineIssue(is Issue, me string) bool { return strings.EqualFold(is.Author, me) }

// Identity is the login the tool acts as on GitHub: the token's user
// (GET /user), or for a GitHub App its bot user, "<slug>[bot]". GitHub
// answers GET /user with 403 for an installation token (an App's, or a
// workflow's own GITHUB_TOKEN, whose bot is github-actions[bot]); for
// those GraphQL's viewer names the bot user.
func (g *GitHub) Identity(ctx context.Context) (string, error) {
	return g.identity.get(ctx, func(ctx context.Context) (string, error) {
		if g.cfg.AppID == 0 {
			var u *github.User
			err := g.do(ctx, "read the token's user", func(ctx context.Context, c *github.Client) (*github.Response, error) {
				var resp *github.Response
				var err error
				u, resp, err = c.Users.Get(ctx, "")
				return resp, err
			})
			if err == nil {
				return u.GetLogin(), nil
			}
			if !errors.Is(err, ErrForbidden) {
				return "", err
			}
		}
		return g.viewer(ctx)
	})
}

// viewer asks GitHub's GraphQL API who the token is. Its endpoint is
// /graphql beside the REST root on github.com, /api/graphql on GitHub
// Enterprise Server (whose REST root is /api/v3/): "../graphql" from the
// REST root is both.
func (g *GitHub) viewer(ctx context.Context) (string, error) {
	var out struct {
		Data struct {
			Viewer struct {
				Login string `json:"login"`
			} `json:"viewer"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	err := g.do(ctx, "ask GraphQL who the token is", func(ctx context.Context, c *github.Client) (*github.Response, error) {
		req, err := c.NewRequest(http.MethodPost, "../graphql", map[string]string{"query": "query { viewer { login } }"})
		if err != nil {
			return nil, err
		}
		return c.Do(ctx, req, &out)
	})
	if err != nil {
		return "", err
	}
	if len(out.Errors) > 0 {
		return "", g.scrub(fmt.Errorf("github: ask GraphQL who the token is: %s", out.Errors[0].Message))
	}
	return out.Data.Viewer.Login, nil
}

// UntrustedIssueEdits names who changed issue number's body since the
// tool wrote it without the right to push. On GitHub that is no one: only
// an issue's author and people with write access may edit its body
// (GitHub, "Moderating comments and conversations"; triage and read may
// not), and the tool trusts bodies only of what it opened.
func (g *GitHub) UntrustedIssueEdits(context.Context, int) ([]string, error) { return nil, nil }

// UntrustedPullEdits is UntrustedIssueEdits for a pull request's body, on
// GitHub no one by the same rule.
func (g *GitHub) UntrustedPullEdits(context.Context, int) ([]string, error) { return nil, nil }

// Identity is the username the tool acts as on GitLab: the token's user
// (GET /user), a project or group access token's bot user included.
func (g *GitLab) Identity(ctx context.Context) (string, error) {
	return g.identity.get(ctx, func(ctx context.Context) (string, error) {
		var u *gitlab.User
		err := g.do(ctx, "read the token's user", true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
			var resp *gitlab.Response
			var err error
			u, resp, err = g.c.Users.CurrentUser(o)
			return resp, err
		})
		if err != nil {
			return "", err
		}
		return u.Username, nil
	})
}

// UntrustedIssueEdits names who changed issue number's description since
// the tool last wrote it and may not push to the project. GitLab lets a
// Planner or a Reporter edit any issue's description, and neither may
// push; it records every change as a system note by its author ("changed
// the description", or "marked the checklist item … as completed" for a
// ticked box). The notes newer than the tool's own last change are read,
// and each author's role asked of the members API: a Developer and above
// may push.
func (g *GitLab) UntrustedIssueEdits(ctx context.Context, number int) ([]string, error) {
	return g.untrusted(ctx, fmt.Sprintf("issue #%d", number), func(opt gitlab.ListOptions, o gitlab.RequestOptionFunc) ([]*gitlab.Note, *gitlab.Response, error) {
		return g.c.Notes.ListIssueNotes(g.projectID(), int64(number), &gitlab.ListIssueNotesOptions{ListOptions: opt,
			OrderBy: gitlab.Ptr("created_at"), Sort: gitlab.Ptr("desc")}, o)
	})
}

// UntrustedPullEdits is UntrustedIssueEdits for a merge request's
// description. GitLab lets only a Developer and above edit one they did
// not open, but a custom role may differ: the rule is the same.
func (g *GitLab) UntrustedPullEdits(ctx context.Context, number int) ([]string, error) {
	return g.untrusted(ctx, fmt.Sprintf("merge request !%d", number), func(opt gitlab.ListOptions, o gitlab.RequestOptionFunc) ([]*gitlab.Note, *gitlab.Response, error) {
		return g.c.Notes.ListMergeRequestNotes(g.projectID(), int64(number), &gitlab.ListMergeRequestNotesOptions{ListOptions: opt,
			OrderBy: gitlab.Ptr("created_at"), Sort: gitlab.Ptr("desc")}, o)
	})
}

// descriptionChanged tells the system notes GitLab writes when a
// description changes: a whole edit, or a checklist item ticked or
// unticked ("marked the task …" before GitLab 15.8 named them so).
func descriptionChanged(n *gitlab.Note) bool {
	return n.System && (strings.HasPrefix(n.Body, "changed the description") ||
		strings.HasPrefix(n.Body, "marked the checklist item ") || strings.HasPrefix(n.Body, "marked the task "))
}

func (g *GitLab) untrusted(ctx context.Context, what string, list func(gitlab.ListOptions, gitlab.RequestOptionFunc) ([]*gitlab.Note, *gitlab.Response, error)) ([]string, error) {
	me, err := g.Identity(ctx)
	if err != nil {
		return nil, err
	}
	editors := map[int64]string{}
	opt := gitlab.ListOptions{PerPage: 100}
pages:
	for range maxPages {
		var notes []*gitlab.Note
		var resp *gitlab.Response
		err := g.do(ctx, "read the notes of "+what, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
			var err error
			notes, resp, err = list(opt, o)
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, n := range notes {
			if !descriptionChanged(n) {
				continue
			}
			if strings.EqualFold(n.Author.Username, me) {
				// The tool's own last change: what came before it was
				// written over.
				break pages
			}
			editors[n.Author.ID] = n.Author.Username
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	var out []string
	for id, name := range editors {
		may, err := g.mayPush(ctx, id, name)
		if err != nil {
			return nil, err
		}
		if !may {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// mayPush reports whether user id may push to the project: a member,
// inherited or invited, with the Developer role or above. A user who is
// no member may not.
func (g *GitLab) mayPush(ctx context.Context, id int64, name string) (bool, error) {
	var m *gitlab.ProjectMember
	err := g.do(ctx, "read the role of "+name, true, func(o gitlab.RequestOptionFunc) (*gitlab.Response, error) {
		var resp *gitlab.Response
		var err error
		m, resp, err = g.c.ProjectMembers.GetInheritedProjectMember(g.projectID(), id, o)
		return resp, err
	})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.AccessLevel >= gitlab.DeveloperPermissions, nil
}

// Identity is the local stand-in's user: none. Its records and issues
// are files under the repository's .git directory, which only those who
// may write the repository can write: all of them are the tool's.
func (l *Local) Identity(context.Context) (string, error) { return "", nil }

// UntrustedIssueEdits is no one on the local stand-in, by the same rule.
func (l *Local) UntrustedIssueEdits(context.Context, int) ([]string, error) { return nil, nil }

// UntrustedPullEdits is no one on the local stand-in, by the same rule.
func (l *Local) UntrustedPullEdits(context.Context, int) ([]string, error) { return nil, nil }
