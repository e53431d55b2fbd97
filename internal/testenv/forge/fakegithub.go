package forge

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// FakeGitHub answers the REST endpoints the GitHub forge uses, as GitHub
// documents them (status codes, error bodies, Link pagination, rate-limit
// headers, token checks), over a real bare repository of a GitServer: a
// pull request's head is a real branch, and merging one really merges it
// into main. Methods that are not HTTP handlers act as a person would on
// the website. It serves GitHub Enterprise's layout: the API under
// /api/v3/.
type FakeGitHub struct {
	// URL is the server's root; BaseURL() is the API's.
	URL string
	// Token is the personal token the API accepts.
	Token string
	// AppID and InstallationID name the one GitHub App installation;
	// AppKeyFile is its private key (PEM), for ghinstallation.
	AppID, InstallationID int64
	AppKeyFile            string

	owner, repo string
	git         *testenv.GitServer
	appKey      *rsa.PublicKey

	mu sync.Mutex
	// logins maps each token the API accepts to the login it acts as;
	// installation tokens are the App's, whose bot user is AppBot.
	logins       map[string]string
	installation map[string]bool
	// roles are the repository's collaborators and their roles (read,
	// triage, write, maintain, admin); anyone else may read only.
	roles    map[string]string
	pulls    []*fakePull
	issues   []*FakeIssue
	comments map[int][]string
	faults   []GitHubFault
	requests []string
	rate     int
}

// FakePull is a pull request as the fake keeps it.
type FakePull struct {
	Number      int
	Title, Body string
	Head, Base  string
	// State is open or closed; a merged one is closed and Merged.
	State               string
	Draft, Merged       bool
	MergeCommit         string
	Labels, Reviewers   []string
	Assignees           []string
	Created, Closed     time.Time
	MergedAt            time.Time
	Comments            []string
	MaintainerCanModify bool
	// Author is the login of who opened it (the API's user.login).
	Author string
	// Fork, when set, is the owner of the fork its head branch lives in
	// (head.repo.full_name is Fork/repo, head.label Fork:Head); empty for
	// a branch of the repository itself.
	Fork string
}

type fakePull struct{ FakePull }

// GitHubFault is an answer the fake gives instead of serving a request.
type GitHubFault struct {
	// Method, when set, limits the fault to requests of that method.
	Method string
	Status int
	Header http.Header
	Body   string
}

// NewFakeGitHub serves owner/repo, whose bare repository must exist on
// git (see testenv.GitServer.NewRepo). It stops when the test ends. It
// serves HTTPS when git does (testenv.NewGitServerTLS), trusted through
// git.CAFile: one certificate serves both.
func NewFakeGitHub(t testing.TB, git *testenv.GitServer, owner, repo string) *FakeGitHub {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("fake github: app key: %v", err)
	}
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(keyFile, pemBytes, 0o600); err != nil {
		t.Fatalf("fake github: app key: %v", err)
	}
	f := &FakeGitHub{
		Token: "ghp_fake" + randomHex(t, 12), AppID: 4242, InstallationID: 77, AppKeyFile: keyFile,
		owner: owner, repo: repo, git: git, appKey: &key.PublicKey,
		logins: map[string]string{}, installation: map[string]bool{}, comments: map[int][]string{}, rate: 5000,
		roles: map[string]string{TokenUser: "write", Maintainer: "maintain"},
	}
	f.logins[f.Token] = TokenUser
	git.AddToken(f.Token)
	srv := testenv.Serve(t, http.HandlerFunc(f.serveHTTP), git.CAFile != "")
	f.URL = srv.URL
	return f
}

// BaseURL is the API's root, as GitHubConfig.BaseURL takes it.
func (f *FakeGitHub) BaseURL() string { return f.URL + "/api/v3/" }

// Fail makes the next n requests (of fault.Method, when set) answer
// fault instead of being served.
func (f *FakeGitHub) Fail(n int, fault GitHubFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.faults = append(f.faults, fault)
	}
}

// PrimaryRateLimit is GitHub's answer when the hourly limit is spent.
func PrimaryRateLimit(reset time.Time) GitHubFault {
	return GitHubFault{Status: http.StatusForbidden,
		Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}, "X-Ratelimit-Used": {"5000"}},
		Body:   `{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`}
}

// SecondaryRateLimit is GitHub's answer to too many requests at once.
func SecondaryRateLimit(retryAfter time.Duration) GitHubFault {
	return GitHubFault{Status: http.StatusForbidden,
		Header: http.Header{"Retry-After": {strconv.Itoa(int(retryAfter / time.Second))}},
		Body:   `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}
}

// StatusFault answers status with GitHub's usual body for it.
func StatusFault(status int) GitHubFault {
	msg := map[int]string{
		http.StatusUnauthorized:        "Bad credentials",
		http.StatusForbidden:           "Resource not accessible by personal access token",
		http.StatusNotFound:            "Not Found",
		http.StatusUnprocessableEntity: "Validation Failed",
		http.StatusBadGateway:          "Server Error",
		http.StatusServiceUnavailable:  "Service Unavailable",
	}[status]
	if msg == "" {
		msg = http.StatusText(status)
	}
	return GitHubFault{Status: status, Body: fmt.Sprintf(`{"message":%q,"documentation_url":"https://docs.github.com/rest"}`, msg)}
}

// Requests lists the requests served or failed, as "METHOD /path".
func (f *FakeGitHub) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// Writes counts the requests that could change something: every method
// but GET and HEAD, except the App's token exchange.
func (f *FakeGitHub) Writes() int {
	n := 0
	for _, r := range f.Requests() {
		if !strings.HasPrefix(r, "GET ") && !strings.HasPrefix(r, "HEAD ") && !strings.Contains(r, "/access_tokens") {
			n++
		}
	}
	return n
}

// Pulls lists every pull request, oldest first.
func (f *FakeGitHub) Pulls() []FakePull {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []FakePull
	for _, p := range f.pulls {
		c := p.FakePull
		c.Comments = slices.Clone(f.comments[p.Number])
		out = append(out, c)
	}
	return out
}

// Pull is pull request number.
func (f *FakeGitHub) Pull(number int) (FakePull, bool) {
	for _, p := range f.Pulls() {
		if p.Number == number {
			return p, true
		}
	}
	return FakePull{}, false
}

// Merge merges pull request number into its base in the bare repository,
// as a person pressing the button would.
func (f *FakeGitHub) Merge(number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.merge(number)
	return err
}

// ClosePR closes pull request number unmerged, as a person declining it.
func (f *FakeGitHub) ClosePR(number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pull(number)
	if p == nil || p.State != "open" {
		return fmt.Errorf("fake github: #%d is not open", number)
	}
	p.State, p.Closed = "closed", time.Now()
	return nil
}

// Reopen reopens pull request number, closed unmerged.
func (f *FakeGitHub) Reopen(number int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pull(number)
	if p == nil || p.State != "closed" || p.Merged {
		return fmt.Errorf("fake github: #%d is not closed unmerged", number)
	}
	if f.openFor(p.Fork, p.Head, p.Base) != nil {
		return fmt.Errorf("fake github: another pull request is open for %s", p.Head)
	}
	p.State = "open"
	return nil
}

// Edit changes pull request number's title and body as the maintainer
// would.
func (f *FakeGitHub) Edit(number int, title, body string) error {
	return f.EditAs(Maintainer, number, title, body)
}

// EditAs changes pull request number's title and body as login would on
// the website: its author, or a collaborator with write access, may.
func (f *FakeGitHub) EditAs(login string, number int, title, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pull(number)
	if p == nil {
		return fmt.Errorf("fake github: no #%d", number)
	}
	if !f.mayEdit(login, p.Author) {
		return fmt.Errorf("fake github: %s may not edit #%d, opened by %s", login, number, p.Author)
	}
	if len([]rune(body)) > maxBodyChars {
		return fmt.Errorf("fake github: #%d: body is too long (maximum is %d characters)", number, maxBodyChars)
	}
	p.Title, p.Body = title, body
	return nil
}

func (f *FakeGitHub) pull(number int) *fakePull {
	for _, p := range f.pulls {
		if p.Number == number {
			return p
		}
	}
	return nil
}

// openFor is the open pull request from head (of fork, "" for the
// repository itself) into base: GitHub keeps one open for each pair.
func (f *FakeGitHub) openFor(fork, head, base string) *fakePull {
	for _, p := range f.pulls {
		if p.Fork == fork && p.Head == head && p.Base == base && p.State == "open" {
			return p
		}
	}
	return nil
}

// merge is a true merge commit made with plumbing, as a bare repository
// allows: the merged tree, a commit with both parents, and main moved
// only if it still is where it was read.
func (f *FakeGitHub) merge(number int) (string, error) {
	p := f.pull(number)
	if p == nil || p.State != "open" {
		return "", fmt.Errorf("fake github: #%d is not open", number)
	}
	name := f.owner + "/" + f.repo
	msg := fmt.Sprintf("Merge pull request #%d from %s/%s\n\n%s", number, f.owner, p.Head, p.Title)
	commit, err := mergeBranch(func(args ...string) (string, error) { return f.git.GitErr(name, args...) }, p.Base, p.Head, msg)
	if err != nil {
		return "", fmt.Errorf("fake github: #%d: %w", number, err)
	}
	now := time.Now()
	p.State, p.Merged, p.MergeCommit, p.Closed, p.MergedAt = "closed", true, commit, now, now
	return commit, nil
}

func (f *FakeGitHub) serveHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.rate = max(f.rate-1, 1)
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(f.rate))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")

	if i := slices.IndexFunc(f.faults, func(ft GitHubFault) bool { return ft.Method == "" || ft.Method == r.Method }); i >= 0 {
		ft := f.faults[i]
		f.faults = slices.Delete(f.faults, i, i+1)
		for k, vs := range ft.Header {
			h[http.CanonicalHeaderKey(k)] = vs
		}
		w.WriteHeader(ft.Status)
		fmt.Fprint(w, ft.Body)
		return
	}

	// GitHub Enterprise Server serves REST under /api/v3 and GraphQL at
	// /api/graphql.
	path, ok := strings.CutPrefix(r.URL.Path, "/api/v3")
	if r.URL.Path == "/api/graphql" {
		path, ok = "/graphql", true
	}
	if !ok {
		f.fail(w, http.StatusNotFound, "Not Found")
		return
	}
	seg := strings.Split(strings.Trim(path, "/"), "/")
	if len(seg) == 4 && seg[0] == "app" && seg[1] == "installations" && seg[3] == "access_tokens" && r.Method == http.MethodPost {
		f.accessToken(w, r, seg[2])
		return
	}
	who, tok, ok := f.caller(r)
	if !ok {
		f.fail(w, http.StatusUnauthorized, "Bad credentials")
		return
	}
	if r.Method == http.MethodPost && path == "/graphql" {
		f.graphql(w, r, who)
		return
	}
	if r.Method == http.MethodGet && path == "/user" {
		f.user(w, tok)
		return
	}
	if len(seg) < 3 || seg[0] != "repos" || seg[1] != f.owner || seg[2] != f.repo {
		f.fail(w, http.StatusNotFound, "Not Found")
		return
	}
	route := r.Method + " " + strings.Join(seg[3:], "/")
	num := 0
	if len(seg) >= 5 {
		var err error
		if num, err = strconv.Atoi(seg[4]); err != nil {
			f.fail(w, http.StatusNotFound, "Not Found")
			return
		}
		route = r.Method + " " + seg[3] + "/{n}"
		if len(seg) > 5 {
			route = r.Method + " " + seg[3] + "/{n}/" + strings.Join(seg[5:], "/")
		}
	}
	if name, ok := strings.CutPrefix(route, "DELETE issues/{n}/labels/"); ok {
		// GitHub answers the labels left, or 404 "Label does not exist"
		// when the issue does not carry it.
		if p := f.pullOr404(w, num); p != nil {
			i := slices.Index(p.Labels, name)
			if i < 0 {
				f.fail(w, http.StatusNotFound, "Label does not exist")
				return
			}
			p.Labels = slices.Delete(p.Labels, i, i+1)
			f.reply(w, http.StatusOK, labelsJSON(p.Labels))
		}
		return
	}
	switch route {
	case "GET ":
		f.reply(w, http.StatusOK, f.repoJSON())
	case "GET pulls":
		f.list(w, r)
	case "POST pulls":
		f.create(w, r, who)
	case "PATCH pulls/{n}":
		f.edit(w, r, num, who)
	case "PUT pulls/{n}/merge":
		f.mergeEndpoint(w, num)
	case "POST pulls/{n}/requested_reviewers":
		var req struct{ Reviewers []string }
		if p := f.pullOr404(w, num); p != nil && f.decode(w, r, &req) {
			p.Reviewers = append(p.Reviewers, req.Reviewers...)
			f.reply(w, http.StatusCreated, f.pullJSON(p))
		}
	case "GET issues":
		f.listIssues(w, r)
	case "POST issues":
		f.createIssue(w, r, who)
	case "GET issues/{n}":
		f.getIssue(w, num)
	case "PATCH issues/{n}":
		f.editIssue(w, r, num, who)
	case "POST issues/{n}/labels":
		var labels []string
		if p := f.pullOr404(w, num); p != nil && f.decode(w, r, &labels) {
			for _, l := range labels {
				if !slices.Contains(p.Labels, l) {
					p.Labels = append(p.Labels, l)
				}
			}
			f.reply(w, http.StatusOK, labelsJSON(p.Labels))
		}
	case "POST issues/{n}/assignees":
		var req struct{ Assignees []string }
		if p := f.pullOr404(w, num); p != nil && f.decode(w, r, &req) {
			p.Assignees = append(p.Assignees, req.Assignees...)
			f.reply(w, http.StatusCreated, map[string]any{"number": p.Number, "state": p.State, "title": p.Title})
		}
	case "POST issues/{n}/comments":
		var req struct{ Body string }
		if p := f.pullOr404(w, num); p != nil && f.decode(w, r, &req) {
			f.comments[num] = append(f.comments[num], req.Body)
			f.reply(w, http.StatusCreated, map[string]any{"id": len(f.comments[num]), "body": req.Body})
		}
	default:
		f.fail(w, http.StatusNotFound, "Not Found")
	}
}

// caller is the request's token, sent as "token X" or "Bearer X", and the
// login it acts as; false when the API does not accept it.
func (f *FakeGitHub) caller(r *http.Request) (who, tok string, ok bool) {
	a := r.Header.Get("Authorization")
	for _, scheme := range []string{"token ", "Bearer ", "bearer "} {
		if tok, found := strings.CutPrefix(a, scheme); found {
			who, ok := f.logins[tok]
			return who, tok, ok
		}
	}
	return "", "", false
}

// accessToken exchanges the App's JWT (RS256, signed with its key) for
// an installation token, which git accepts too.
func (f *FakeGitHub) accessToken(w http.ResponseWriter, r *http.Request, id string) {
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !f.validJWT(jwt) {
		f.fail(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	if id != strconv.FormatInt(f.InstallationID, 10) {
		f.fail(w, http.StatusNotFound, "Not Found")
		return
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		f.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	tok := fmt.Sprintf("ghs_fake%x", b)
	f.logins[tok], f.installation[tok] = AppBot, true
	f.git.AddToken(tok)
	f.reply(w, http.StatusCreated, map[string]any{
		"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"permissions":          map[string]string{"pull_requests": "write", "contents": "write", "issues": "write"},
		"repository_selection": "selected",
	})
}

func (f *FakeGitHub) validJWT(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(f.appKey, crypto.SHA256, sum[:], sig) != nil {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Exp int64           `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return false
	}
	iss := strings.Trim(string(claims.Iss), `"`)
	return iss == strconv.FormatInt(f.AppID, 10) && time.Unix(claims.Exp, 0).After(time.Now())
}

func (f *FakeGitHub) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var out []*fakePull
	for _, p := range f.pulls {
		if state != "all" && p.State != state {
			continue
		}
		// head filters by "user or organization:branch", the label: a
		// fork's pull requests carry the fork owner's name.
		if head := q.Get("head"); head != "" && head != f.label(p) {
			continue
		}
		if base := q.Get("base"); base != "" && base != p.Base {
			continue
		}
		out = append(out, p)
	}
	if q.Get("direction") == "desc" || (q.Get("direction") == "" && (q.Get("sort") == "" || q.Get("sort") == "created")) {
		slices.Reverse(out)
	}
	from, to := paginate(w, r, len(out))
	body := []map[string]any{}
	for _, p := range out[from:to] {
		body = append(body, f.pullJSON(p))
	}
	f.reply(w, http.StatusOK, body)
}

func (f *FakeGitHub) create(w http.ResponseWriter, r *http.Request, who string) {
	var req struct {
		Title, Head, Base, Body string
		Draft                   bool
		MaintainerCanModify     bool `json:"maintainer_can_modify"`
	}
	if !f.decode(w, r, &req) {
		return
	}
	name := f.owner + "/" + f.repo
	head := strings.TrimPrefix(req.Head, f.owner+":")
	invalid := func(field, code, msg string) {
		e := map[string]string{"resource": "PullRequest", "field": field, "code": code}
		if msg != "" {
			e["message"] = msg
		}
		f.reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []any{e},
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"})
	}
	switch {
	case req.Title == "":
		invalid("title", "missing_field", "")
		return
	case req.Base == "":
		invalid("base", "missing_field", "")
		return
	}
	if _, err := f.git.GitErr(name, "rev-parse", "--verify", "refs/heads/"+req.Base); err != nil {
		invalid("base", "invalid", "")
		return
	}
	if _, err := f.git.GitErr(name, "rev-parse", "--verify", "refs/heads/"+head); err != nil || head == "" {
		invalid("head", "invalid", "")
		return
	}
	if p := f.openFor("", head, req.Base); p != nil {
		invalid("", "custom", fmt.Sprintf("A pull request already exists for %s:%s.", f.owner, head))
		return
	}
	if len([]rune(req.Body)) > maxBodyChars {
		invalid("body", "custom", fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars))
		return
	}
	if n, _ := f.git.GitErr(name, "rev-list", "--count", req.Base+".."+head); strings.TrimSpace(n) == "0" {
		invalid("", "custom", fmt.Sprintf("No commits between %s and %s", req.Base, head))
		return
	}
	p := &fakePull{FakePull{Number: f.nextNumber(), Title: req.Title, Body: req.Body, Head: head, Base: req.Base,
		State: "open", Draft: req.Draft, Created: time.Now(), MaintainerCanModify: req.MaintainerCanModify, Author: who}}
	f.pulls = append(f.pulls, p)
	w.Header().Set("Location", fmt.Sprintf("%s/api/v3/repos/%s/%s/pulls/%d", f.URL, f.owner, f.repo, p.Number))
	f.reply(w, http.StatusCreated, f.pullJSON(p))
}

func (f *FakeGitHub) edit(w http.ResponseWriter, r *http.Request, num int, who string) {
	var req struct {
		Title, Body, State *string
	}
	p := f.pullOr404(w, num)
	if p == nil || !f.decode(w, r, &req) {
		return
	}
	if (req.Title != nil || req.Body != nil) && !f.mayEdit(who, p.Author) {
		f.fail(w, http.StatusForbidden, "Resource not accessible by personal access token")
		return
	}
	if req.Body != nil && len([]rune(*req.Body)) > maxBodyChars {
		f.reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]string{"resource": "PullRequest", "field": "body", "code": "custom",
				"message": fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars)}}})
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		f.reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]string{"resource": "PullRequest", "field": "state", "code": "invalid"}}})
		return
	}
	if req.Title != nil {
		p.Title = *req.Title
	}
	if req.Body != nil {
		p.Body = *req.Body
	}
	if req.State != nil && *req.State != p.State && !p.Merged {
		if *req.State == "open" && f.openFor(p.Fork, p.Head, p.Base) != nil {
			f.fail(w, http.StatusUnprocessableEntity, "A pull request already exists for "+f.owner+":"+p.Head+".")
			return
		}
		p.State = *req.State
		if p.State == "closed" {
			p.Closed = time.Now()
		}
	}
	f.reply(w, http.StatusOK, f.pullJSON(p))
}

func (f *FakeGitHub) mergeEndpoint(w http.ResponseWriter, num int) {
	p := f.pullOr404(w, num)
	if p == nil {
		return
	}
	commit, err := f.merge(num)
	if err != nil {
		f.fail(w, http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	}
	f.reply(w, http.StatusOK, map[string]any{"sha": commit, "merged": true, "message": "Pull Request successfully merged"})
}

func (f *FakeGitHub) pullOr404(w http.ResponseWriter, num int) *fakePull {
	p := f.pull(num)
	if p == nil {
		f.fail(w, http.StatusNotFound, "Not Found")
	}
	return p
}

func (f *FakeGitHub) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		f.fail(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func (f *FakeGitHub) repoJSON() map[string]any {
	return map[string]any{
		"id": 1, "name": f.repo, "full_name": f.owner + "/" + f.repo, "private": true,
		"owner":     map[string]any{"login": f.owner},
		"html_url":  f.URL + "/" + f.owner + "/" + f.repo,
		"clone_url": f.git.RepoURL(f.owner + "/" + f.repo), "default_branch": "main",
		"permissions": map[string]bool{"admin": false, "push": true, "pull": true},
	}
}

func (f *FakeGitHub) pullJSON(p *fakePull) map[string]any {
	name := f.owner + "/" + f.repo
	sha := func(branch string) string {
		out, _ := f.git.GitErr(name, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
		return strings.TrimSpace(out)
	}
	ts := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC3339)
	}
	var mergedAt any
	if p.Merged {
		mergedAt = ts(p.MergedAt)
	}
	repo := map[string]any{"name": f.repo, "full_name": name, "owner": map[string]any{"login": f.owner}}
	// A fork's head is in the fork: head.repo names it, head.label
	// carries its owner, and its commit is not in this repository.
	head := map[string]any{"ref": p.Head, "label": f.label(p), "sha": sha(p.Head), "repo": repo}
	if p.Fork != "" {
		head["sha"] = ""
		head["repo"] = map[string]any{"name": f.repo, "full_name": p.Fork + "/" + f.repo, "owner": map[string]any{"login": p.Fork}, "fork": true}
	}
	users := func(names []string) []map[string]any {
		out := []map[string]any{}
		for _, n := range names {
			out = append(out, map[string]any{"login": n})
		}
		return out
	}
	return map[string]any{
		"id": 1000 + p.Number, "number": p.Number, "state": p.State, "title": p.Title, "body": p.Body, "draft": p.Draft,
		"url":      fmt.Sprintf("%s/api/v3/repos/%s/pulls/%d", f.URL, name, p.Number),
		"html_url": fmt.Sprintf("%s/%s/pull/%d", f.URL, name, p.Number),
		"head":     head,
		"base":     map[string]any{"ref": p.Base, "label": f.owner + ":" + p.Base, "sha": sha(p.Base), "repo": repo},
		"merged":   p.Merged, "merged_at": mergedAt, "merge_commit_sha": p.MergeCommit,
		"created_at": ts(p.Created), "updated_at": ts(p.Created), "closed_at": ts(p.Closed),
		"labels": labelsJSON(p.Labels), "requested_reviewers": users(p.Reviewers), "assignees": users(p.Assignees),
		"user":                  userJSON(p.Author),
		"maintainer_can_modify": p.MaintainerCanModify,
	}
}

func labelsJSON(labels []string) []map[string]any {
	out := []map[string]any{}
	for i, l := range labels {
		out = append(out, map[string]any{"id": i + 1, "name": l, "color": "ededed"})
	}
	return out
}

func (f *FakeGitHub) reply(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *FakeGitHub) fail(w http.ResponseWriter, status int, msg string) {
	f.reply(w, status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// paginate reads page and per_page as GitHub does (30 a page by default,
// 100 at most), sets the Link header of a list of n items, and says which
// of them the page holds.
func paginate(w http.ResponseWriter, r *http.Request, n int) (from, to int) {
	q := r.URL.Query()
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	last := max((n+perPage-1)/perPage, 1)
	link := func(p int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(perPage))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	return min((page-1)*perPage, n), min(page*perPage, n)
}
