package forge

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Who acts on the fake GitHub. Every request carries a token, and every
// token acts as one login: the personal token as TokenUser, the App's
// installation tokens as its bot user, AppBot (GitHub names an App's bot
// user "<slug>[bot]"). People act through the methods that are not HTTP
// handlers, as Maintainer unless a method takes a login.
const (
	TokenUser  = "recommender-bot"
	AppSlug    = "gpu-rightsizing"
	AppBot     = AppSlug + "[bot]"
	Maintainer = "a-person"
)

// maxBodyChars is the longest issue or pull request body GitHub takes: a
// longer one is refused with 422, "body is too long (maximum is 65536
// characters)".
const maxBodyChars = 65536

// roleRank orders GitHub's repository roles (docs.github.com, "Repository
// roles for an organization"): read < triage < write < maintain < admin.
var roleRank = map[string]int{"read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// SetRole makes login a collaborator with role: read, triage, write,
// maintain or admin. Anyone else may only read.
func (f *FakeGitHub) SetRole(login, role string) {
	if roleRank[role] == 0 {
		panic("fake github: no role " + role)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roles[login] = role
}

// atLeast reports whether login's role is role or above. The App's bot
// writes: its installation has write permissions.
func (f *FakeGitHub) atLeast(login, role string) bool {
	if login == AppBot {
		return roleRank[role] <= roleRank["write"]
	}
	return roleRank[cmp.Or(f.roles[login], "read")] >= roleRank[role]
}

// mayEdit reports whether login may change the title or body of what
// author opened: the author may, and so may whoever has write access
// ("If you have write permissions to a repository, you can hide, edit, or
// delete comments", GitHub's "Moderating comments and conversations";
// the body is an issue's or pull request's first comment). Triage and
// read may not.
func (f *FakeGitHub) mayEdit(login, author string) bool {
	return strings.EqualFold(login, author) || f.atLeast(login, "write")
}

// label is a pull request's head label, "owner:branch", the owner being
// the fork's for a fork's branch.
func (f *FakeGitHub) label(p *fakePull) string {
	if p.Fork != "" {
		return p.Fork + ":" + p.Head
	}
	return f.owner + ":" + p.Head
}

// userJSON is a simple user as GitHub embeds one: login and type, Bot for
// an App's bot user.
func userJSON(login string) map[string]any {
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	return map[string]any{"login": login, "type": typ}
}

// OpenPull is a person's pull request, as OpenPullAs takes it.
type OpenPull struct {
	Head, Base, Title, Body string
	// Fork, when set, is the owner of the fork whose branch Head is.
	Fork string
}

// OpenPullAs opens a pull request as login would on the website, and
// returns its number. Anyone who can read the repository may open one
// between two of its branches, or from a fork; one pull request is open
// for each head and base.
func (f *FakeGitHub) OpenPullAs(login string, o OpenPull) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := f.owner + "/" + f.repo
	if _, err := f.git.GitErr(name, "rev-parse", "--verify", "refs/heads/"+o.Base); err != nil {
		return 0, fmt.Errorf("fake github: no base branch %s", o.Base)
	}
	if o.Fork == "" {
		if _, err := f.git.GitErr(name, "rev-parse", "--verify", "refs/heads/"+o.Head); err != nil {
			return 0, fmt.Errorf("fake github: no head branch %s", o.Head)
		}
	}
	if f.openFor(o.Fork, o.Head, o.Base) != nil {
		return 0, fmt.Errorf("fake github: a pull request already exists for %s:%s", cmp.Or(o.Fork, f.owner), o.Head)
	}
	p := &fakePull{FakePull{Number: f.nextNumber(), Title: o.Title, Body: o.Body, Head: o.Head, Base: o.Base, Fork: o.Fork,
		State: "open", Created: time.Now(), Author: login}}
	f.pulls = append(f.pulls, p)
	return p.Number, nil
}

// ClosePRAs closes pull request number unmerged as login: its author or
// anyone with triage or above may.
func (f *FakeGitHub) ClosePRAs(login string, number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pull(number)
	if p == nil || p.State != "open" {
		return fmt.Errorf("fake github: #%d is not open", number)
	}
	if !strings.EqualFold(login, p.Author) && !f.atLeast(login, "triage") {
		return fmt.Errorf("fake github: %s may not close #%d", login, number)
	}
	p.State, p.Closed = "closed", time.Now()
	return nil
}

// NewIssueAs opens an issue as login would on the website, and labels it
// when login may (triage and above apply labels).
func (f *FakeGitHub) NewIssueAs(login, title, body string, labels []string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := &FakeIssue{Number: f.nextNumber(), Title: title, Body: body, State: "open", Author: login, Created: time.Now()}
	if f.atLeast(login, "triage") {
		is.Labels = slices.Clone(labels)
	}
	f.issues = append(f.issues, is)
	return is.Number
}

// EditIssueBodyAs sets issue number's body as login would (ticking a
// checkbox does that): its author, or anyone with write access, may.
func (f *FakeGitHub) EditIssueBodyAs(login string, number int, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issue(number)
	if is == nil {
		return fmt.Errorf("fake github: no issue #%d", number)
	}
	if !f.mayEdit(login, is.Author) {
		return fmt.Errorf("fake github: %s may not edit issue #%d, opened by %s", login, number, is.Author)
	}
	if len([]rune(body)) > maxBodyChars {
		return fmt.Errorf("fake github: issue #%d: body is too long (maximum is %d characters)", number, maxBodyChars)
	}
	is.Body = body
	return nil
}

// user answers GET /user, "Get the authenticated user": the token's user.
// An installation token has no user: GitHub answers 403, "Resource not
// accessible by integration".
func (f *FakeGitHub) user(w http.ResponseWriter, tok string) {
	if f.installation[tok] {
		f.reply(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration",
			"documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user"})
		return
	}
	f.reply(w, http.StatusOK, userJSON(f.logins[tok]))
}

// graphql answers the one GraphQL query the tool asks, `viewer { login }`:
// the token's user, an App's bot user for an installation token. Any other
// query is answered as GitHub answers one it cannot run: 200 with errors.
func (f *FakeGitHub) graphql(w http.ResponseWriter, r *http.Request, who string) {
	var req struct {
		Query string `json:"query"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.fail(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if strings.Join(strings.Fields(req.Query), " ") != "query { viewer { login } }" {
		f.reply(w, http.StatusOK, map[string]any{"errors": []any{map[string]any{"message": "the fake answers only `query { viewer { login } }`"}}})
		return
	}
	f.reply(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": map[string]any{"login": who}}})
}
