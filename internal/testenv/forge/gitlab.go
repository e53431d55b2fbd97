package forge

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// FakeGitLabOptions says which project a FakeGitLab serves.
type FakeGitLabOptions struct {
	// Project is the project's full path, e.g. "group/sub/repo".
	Project string
	// Dir is the project's bare repository: merge requests' branches are
	// its branches, and merging writes to it.
	Dir string
	// CloneURL is what the project reports as http_url_to_repo; Dir when
	// empty (go-git clones a path).
	CloneURL string
	// Token is the access token the API accepts; a random one when empty.
	Token string
	// TLS serves HTTPS, verified by FakeGitLab.CAFile only.
	TLS bool
}

// FakeGitLab is a GitLab REST v4 API on 127.0.0.1 holding one project's
// merge requests, for the endpoints scm.GitLab uses, answered as GitLab
// documents them: JSON bodies, `{"message": …}` errors, pagination and
// rate-limit headers, PRIVATE-TOKEN or Bearer authentication, the project
// by URL-encoded path or ID. Branches live in a real bare repository, and
// merging merges there with git. Methods that are not HTTP handlers act
// as a person would in the web interface.
type FakeGitLab struct {
	// URL is the instance's base URL (the API is under /api/v4).
	URL   string
	Token string
	// CAFile verifies the server, with FakeGitLabOptions.TLS.
	CAFile string

	t       testing.TB
	git     string
	project fakeProject

	mu     sync.Mutex
	mrs    []*fakeMR
	issues []*FakeGitLabIssue
	users  map[string]int64
	// access is each member's role in the project, by user ID.
	access   map[int64]int
	faults   []GitLabFault
	requests []GitLabRequest
	notes    int64
	clock    time.Time
}

type fakeProject struct {
	ID       int64
	Path     string
	Dir      string
	CloneURL string
}

// FakeMergeRequest is a merge request as the fake holds it.
type FakeMergeRequest struct {
	IID          int64
	Title        string
	Description  string
	State        string // opened, closed or merged
	SourceBranch string
	TargetBranch string
	Labels       []string
	ReviewerIDs  []int64
	AssigneeIDs  []int64
	Notes        []string
	// Author is the username of who opened it (the API's author.username).
	Author string
	// Fork, when set, is the path of the fork its source branch lives in
	// (source_project_id is then the fork's, not the project's).
	Fork string
	// MergeCommit is the commit a merge made on the target branch.
	MergeCommit string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

type fakeMR struct {
	FakeMergeRequest
	id int64
	// sourceProject is source_project_id: the project's own ID, or a
	// fork's.
	sourceProject int64
	notes         []fakeNote
}

// GitLabFault is an answer the fake gives instead of the real one.
type GitLabFault struct {
	// Times is how many matching requests get it (at least one).
	Times  int
	Status int
	Header http.Header
	Body   string
	// Method and Path, when set, restrict it to requests with that method
	// and whose escaped path contains Path.
	Method, Path string
}

// GitLabRequest is one API request the fake answered.
type GitLabRequest struct {
	Method string
	// Path is the escaped path, with the query.
	Path   string
	Status int
}

// NewFakeGitLab serves project o.Project until the test ends.
func NewFakeGitLab(t testing.TB, o FakeGitLabOptions) *FakeGitLab {
	t.Helper()
	git := testenv.LookPath(t, "git")
	if o.Token == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		o.Token = "glpat-" + hex.EncodeToString(b)
	}
	f := &FakeGitLab{
		Token: o.Token,
		t:     t,
		git:   git,
		project: fakeProject{ID: 4242, Path: o.Project, Dir: o.Dir,
			CloneURL: cmp.Or(o.CloneURL, o.Dir)},
		users:  map[string]int64{GitLabBot: 1, Maintainer: 2},
		access: map[int64]int{1: AccessDeveloper, 2: AccessMaintainer},
		clock:  time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v4/projects/{id}", f.getProject)
	mux.HandleFunc("GET /api/v4/projects/{id}/merge_requests", f.listMRs)
	mux.HandleFunc("POST /api/v4/projects/{id}/merge_requests", f.createMR)
	mux.HandleFunc("GET /api/v4/projects/{id}/merge_requests/{iid}", f.getMR)
	mux.HandleFunc("PUT /api/v4/projects/{id}/merge_requests/{iid}", f.updateMR)
	mux.HandleFunc("PUT /api/v4/projects/{id}/merge_requests/{iid}/merge", f.mergeMR)
	mux.HandleFunc("POST /api/v4/projects/{id}/merge_requests/{iid}/notes", f.createNote)
	mux.HandleFunc("GET /api/v4/projects/{id}/issues", f.listIssues)
	mux.HandleFunc("POST /api/v4/projects/{id}/issues", f.createIssue)
	mux.HandleFunc("PUT /api/v4/projects/{id}/issues/{iid}", f.updateIssue)
	mux.HandleFunc("GET /api/v4/users", f.listUsers)
	mux.HandleFunc("GET /api/v4/user", f.currentUser)
	mux.HandleFunc("GET /api/v4/projects/{id}/members/all/{user}", f.getMember)
	mux.HandleFunc("GET /api/v4/projects/{id}/issues/{iid}/notes", f.listIssueNotes)
	mux.HandleFunc("GET /api/v4/projects/{id}/merge_requests/{iid}/notes", f.listMRNotes)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "404 Not Found"})
	})
	srv := testenv.Serve(t, f.middleware(mux), o.TLS)
	f.URL = srv.URL
	if o.TLS {
		f.CAFile = testenv.CAFile(t, srv)
	}
	return f
}

// Fail makes the next fault.Times matching requests answer fault.
func (f *FakeGitLab) Fail(fault GitLabFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fault.Times = max(fault.Times, 1)
	f.faults = append(f.faults, fault)
}

// Requests lists the API requests answered so far, in order.
func (f *FakeGitLab) Requests() []GitLabRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// Writes counts the API requests that could change something (POST, PUT,
// PATCH, DELETE), whatever they were answered.
func (f *FakeGitLab) Writes() int {
	n := 0
	for _, r := range f.Requests() {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			n++
		}
	}
	return n
}

// MergeRequests lists every merge request, oldest first.
func (f *FakeGitLab) MergeRequests() []FakeMergeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FakeMergeRequest, 0, len(f.mrs))
	for _, mr := range f.mrs {
		c := mr.FakeMergeRequest
		c.Labels, c.Notes = slices.Clone(c.Labels), nil
		for _, n := range mr.notes {
			if !n.System {
				c.Notes = append(c.Notes, n.Body)
			}
		}
		out = append(out, c)
	}
	return out
}

// MergeRequest returns merge request iid.
func (f *FakeGitLab) MergeRequest(iid int64) (FakeMergeRequest, bool) {
	for _, mr := range f.MergeRequests() {
		if mr.IID == iid {
			return mr, true
		}
	}
	return FakeMergeRequest{}, false
}

// Merge merges merge request iid into its target branch, as a person
// pressing Merge: a merge commit in the bare repository.
func (f *FakeGitLab) Merge(iid int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	mr := f.find(iid)
	if mr == nil {
		return fmt.Errorf("no merge request !%d", iid)
	}
	return f.merge(mr)
}

// Close closes merge request iid unmerged, as a person declining it.
func (f *FakeGitLab) Close(iid int64) error {
	return f.setState(iid, "close")
}

// Reopen reopens merge request iid.
func (f *FakeGitLab) Reopen(iid int64) error {
	return f.setState(iid, "reopen")
}

// Edit sets merge request iid's title and description, as the
// maintainer editing them.
func (f *FakeGitLab) Edit(iid int64, title, description string) error {
	return f.EditAs(Maintainer, iid, title, description)
}

func (f *FakeGitLab) setState(iid int64, event string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	mr := f.find(iid)
	if mr == nil {
		return fmt.Errorf("no merge request !%d", iid)
	}
	if _, msg := f.transition(mr, event); msg != "" {
		return fmt.Errorf("!%d: %s", iid, msg)
	}
	return nil
}

// transition applies a state_event; msg says why it was refused.
func (f *FakeGitLab) transition(mr *fakeMR, event string) (status int, msg string) {
	switch {
	case event == "close" && mr.State == "opened":
		mr.State = "closed"
	case event == "reopen" && mr.State == "closed":
		if other := f.openFor(mr.sourceProject, mr.SourceBranch, mr.TargetBranch); other != nil {
			return http.StatusConflict, fmt.Sprintf("Another open merge request already exists for this source branch: !%d", other.IID)
		}
		mr.State = "opened"
	case event == "close" || event == "reopen":
		// GitLab ignores an event that does not apply.
	default:
		return http.StatusBadRequest, "state_event does not have a valid value"
	}
	mr.UpdatedAt = f.tick()
	return 0, ""
}

// tick is the fake's clock: every change a second later, so that the
// order of creation is the order of created_at.
func (f *FakeGitLab) tick() time.Time {
	f.clock = f.clock.Add(time.Second)
	return f.clock
}

func (f *FakeGitLab) find(iid int64) *fakeMR {
	for _, mr := range f.mrs {
		if mr.IID == iid {
			return mr
		}
	}
	return nil
}

// openFor is the open merge request from source of sourceProject into
// target: GitLab keeps one open for each.
func (f *FakeGitLab) openFor(sourceProject int64, source, target string) *fakeMR {
	for _, mr := range f.mrs {
		if mr.State == "opened" && mr.sourceProject == sourceProject && mr.SourceBranch == source && mr.TargetBranch == target {
			return mr
		}
	}
	return nil
}

// statusWriter remembers the status answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(s int) {
	w.status = s
	w.ResponseWriter.WriteHeader(s)
}

// middleware records the request, answers an injected fault, checks the
// token and sets the rate-limit headers GitLab sends with every answer.
func (f *FakeGitLab) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			p := r.URL.EscapedPath()
			if r.URL.RawQuery != "" {
				p += "?" + r.URL.RawQuery
			}
			f.requests = append(f.requests, GitLabRequest{Method: r.Method, Path: p, Status: sw.status})
		}()
		reset := time.Now().Truncate(time.Minute).Add(time.Minute)
		h := w.Header()
		h.Set("RateLimit-Limit", "2000")
		h.Set("RateLimit-Observed", "1")
		h.Set("RateLimit-Remaining", "1999")
		h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
		if fault, ok := f.fault(r); ok {
			for k, vs := range fault.Header {
				h[k] = vs
			}
			h.Set("Content-Type", "application/json")
			sw.WriteHeader(fault.Status)
			_, _ = sw.Write([]byte(fault.Body))
			return
		}
		token := r.Header.Get("PRIVATE-TOKEN")
		if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token == "" {
			token = bearer
		}
		if token != f.Token {
			writeJSON(sw, http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
			return
		}
		next.ServeHTTP(sw, r)
	})
}

func (f *FakeGitLab) fault(r *http.Request) (GitLabFault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.faults {
		x := &f.faults[i]
		if (x.Method != "" && x.Method != r.Method) || !strings.Contains(r.URL.EscapedPath(), x.Path) {
			continue
		}
		fault := *x
		if x.Times--; x.Times == 0 {
			f.faults = slices.Delete(f.faults, i, i+1)
		}
		return fault, true
	}
	return GitLabFault{}, false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeMessage(w http.ResponseWriter, status int, msg any) {
	writeJSON(w, status, map[string]any{"message": msg})
}

// lockProject takes the lock and checks the project named in the path;
// false means the 404 was answered and the lock released.
func (f *FakeGitLab) lockProject(w http.ResponseWriter, r *http.Request) bool {
	id := r.PathValue("id")
	if id != strconv.FormatInt(f.project.ID, 10) && !strings.EqualFold(id, f.project.Path) {
		writeMessage(w, http.StatusNotFound, "404 Project Not Found")
		return false
	}
	f.mu.Lock()
	return true
}

// lockMR is lockProject and the merge request named in the path; nil
// means the 404 was answered and the lock released.
func (f *FakeGitLab) lockMR(w http.ResponseWriter, r *http.Request) *fakeMR {
	if !f.lockProject(w, r) {
		return nil
	}
	iid, _ := strconv.ParseInt(r.PathValue("iid"), 10, 64)
	mr := f.find(iid)
	if mr == nil {
		f.mu.Unlock()
		writeMessage(w, http.StatusNotFound, "404 Not found")
	}
	return mr
}

func (f *FakeGitLab) getProject(w http.ResponseWriter, r *http.Request) {
	if !f.lockProject(w, r) {
		return
	}
	defer f.mu.Unlock()
	p := f.project
	name := p.Path[strings.LastIndex(p.Path, "/")+1:]
	writeJSON(w, http.StatusOK, map[string]any{
		"id": p.ID, "name": name, "path": name, "path_with_namespace": p.Path,
		"default_branch": "main", "http_url_to_repo": p.CloneURL,
		"web_url": f.URL + "/" + p.Path, "visibility": "private",
	})
}

func (f *FakeGitLab) mrJSON(mr *fakeMR, heads map[string]string) map[string]any {
	users := func(ids []int64) []map[string]any {
		out := []map[string]any{}
		for _, id := range ids {
			for name, uid := range f.users {
				if uid == id {
					out = append(out, map[string]any{"id": id, "username": name, "name": name, "state": "active"})
				}
			}
		}
		return out
	}
	var merged any
	if mr.MergeCommit != "" {
		merged = mr.MergeCommit
	}
	labels := mr.Labels
	if labels == nil {
		labels = []string{}
	}
	// A fork's source branch is in the fork, not in this repository.
	sha := heads[mr.SourceBranch]
	if mr.Fork != "" {
		sha = ""
	}
	userNotes := 0
	for _, n := range mr.notes {
		if !n.System {
			userNotes++
		}
	}
	return map[string]any{
		"id": mr.id, "iid": mr.IID, "project_id": f.project.ID,
		"source_project_id": mr.sourceProject, "target_project_id": f.project.ID,
		"title": mr.Title, "description": mr.Description, "state": mr.State,
		"source_branch": mr.SourceBranch, "target_branch": mr.TargetBranch,
		"labels": labels, "draft": isDraft(mr.Title),
		"work_in_progress": isDraft(mr.Title),
		"reviewers":        users(mr.ReviewerIDs), "assignees": users(mr.AssigneeIDs),
		"author":     f.userJSON(mr.Author),
		"created_at": mr.CreatedAt.Format(time.RFC3339Nano), "updated_at": mr.UpdatedAt.Format(time.RFC3339Nano),
		"merge_commit_sha": merged, "sha": sha,
		"user_notes_count": userNotes,
		"web_url":          fmt.Sprintf("%s/%s/-/merge_requests/%d", f.URL, f.project.Path, mr.IID),
		"references":       map[string]any{"short": fmt.Sprintf("!%d", mr.IID)},
	}
}

var draftRE = regexp.MustCompile(`(?i)^\s*(\[draft\]|\(draft\)|draft:|draft\s+-\s+)`)

func isDraft(title string) bool { return draftRE.MatchString(title) }

func (f *FakeGitLab) listMRs(w http.ResponseWriter, r *http.Request) {
	if !f.lockProject(w, r) {
		return
	}
	defer f.mu.Unlock()
	q := r.URL.Query()
	state := cmp.Or(q.Get("state"), "all")
	var sel []*fakeMR
	for _, mr := range f.mrs {
		if (state != "all" && mr.State != state) ||
			(q.Has("source_branch") && mr.SourceBranch != q.Get("source_branch")) ||
			(q.Has("target_branch") && mr.TargetBranch != q.Get("target_branch")) {
			continue
		}
		sel = append(sel, mr)
	}
	key := func(mr *fakeMR) time.Time { return mr.CreatedAt }
	if q.Get("order_by") == "updated_at" {
		key = func(mr *fakeMR) time.Time { return mr.UpdatedAt }
	}
	slices.SortStableFunc(sel, func(a, b *fakeMR) int {
		c := cmp.Or(key(a).Compare(key(b)), cmp.Compare(a.id, b.id))
		if q.Get("sort") != "asc" {
			c = -c
		}
		return c
	})
	from, to := gitlabPage(w, r, len(sel))
	out := []map[string]any{}
	heads := f.heads()
	for _, mr := range sel[from:to] {
		out = append(out, f.mrJSON(mr, heads))
	}
	writeJSON(w, http.StatusOK, out)
}

// gitlabPage reads page and per_page as GitLab does (20 a page by
// default, 100 at most), sets the offset pagination headers and the Link
// header of a list of total items, and says which of them the page holds.
func gitlabPage(w http.ResponseWriter, r *http.Request, total int) (from, to int) {
	q := r.URL.Query()
	page, perPage := atoiOr(q.Get("page"), 1), atoiOr(q.Get("per_page"), 20)
	perPage = min(max(perPage, 1), 100)
	page = max(page, 1)
	pages := max((total+perPage-1)/perPage, 1)
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(perPage))
	h.Set("X-Total", strconv.Itoa(total))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	link := func(rel string, p int) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(perPage))
		u.RawQuery = v.Encode()
		return fmt.Sprintf(`<%s>; rel="%s"`, u.String(), rel)
	}
	var links []string
	if page > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(page-1))
		links = append(links, link("prev", page-1))
	}
	if page < pages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		links = append(links, link("next", page+1))
	}
	links = append(links, link("first", 1), link("last", pages))
	h.Set("Link", strings.Join(links, ", "))
	return min((page-1)*perPage, total), min(page*perPage, total)
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

// mrRequest is the JSON body of a create or update request.
type mrRequest struct {
	Title        *string         `json:"title"`
	Description  *string         `json:"description"`
	SourceBranch string          `json:"source_branch"`
	TargetBranch *string         `json:"target_branch"`
	Labels       json.RawMessage `json:"labels"`
	AddLabels    json.RawMessage `json:"add_labels"`
	RemoveLabels json.RawMessage `json:"remove_labels"`
	ReviewerIDs  []int64         `json:"reviewer_ids"`
	AssigneeIDs  []int64         `json:"assignee_ids"`
	AssigneeID   *int64          `json:"assignee_id"`
	StateEvent   string          `json:"state_event"`
}

// labels reads labels as GitLab takes them: a comma-separated string or
// an array.
func (m mrRequest) labels() ([]string, bool) {
	if len(m.Labels) == 0 || string(m.Labels) == "null" {
		return nil, false
	}
	var list []string
	if err := json.Unmarshal(m.Labels, &list); err != nil {
		var s string
		_ = json.Unmarshal(m.Labels, &s)
		list = strings.Split(s, ",")
	}
	var out []string
	for _, l := range list {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	// A description may hold 1,048,576 characters: room for them escaped.
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(v); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "400 Bad request - " + err.Error()})
		return false
	}
	return true
}

func (f *FakeGitLab) createMR(w http.ResponseWriter, r *http.Request) {
	var req mrRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !f.lockProject(w, r) {
		return
	}
	defer f.mu.Unlock()
	target := ""
	if req.TargetBranch != nil {
		target = *req.TargetBranch
	}
	switch {
	case req.Title == nil || *req.Title == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title is missing"})
		return
	case req.SourceBranch == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "source_branch is missing"})
		return
	case target == "":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "target_branch is missing"})
		return
	case f.revParse(req.SourceBranch) == "":
		writeMessage(w, http.StatusUnprocessableEntity, []string{fmt.Sprintf("Source branch %q does not exist", req.SourceBranch)})
		return
	case f.revParse(target) == "":
		writeMessage(w, http.StatusUnprocessableEntity, []string{fmt.Sprintf("Target branch %q does not exist", target)})
		return
	}
	if req.Description != nil && tooLong(w, *req.Description) {
		return
	}
	if other := f.openFor(f.project.ID, req.SourceBranch, target); other != nil {
		writeMessage(w, http.StatusConflict, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", other.IID)})
		return
	}
	now := f.tick()
	mr := &fakeMR{id: int64(9000 + len(f.mrs) + 1), FakeMergeRequest: FakeMergeRequest{
		IID: int64(len(f.mrs) + 1), Title: *req.Title, State: "opened",
		SourceBranch: req.SourceBranch, TargetBranch: target,
		ReviewerIDs: req.ReviewerIDs, AssigneeIDs: req.AssigneeIDs,
		CreatedAt: now, UpdatedAt: now, Author: GitLabBot,
	}, sourceProject: f.project.ID}
	if req.AssigneeID != nil {
		mr.AssigneeIDs = append(mr.AssigneeIDs, *req.AssigneeID)
	}
	if req.Description != nil {
		mr.Description = *req.Description
	}
	mr.Labels, _ = req.labels()
	f.mrs = append(f.mrs, mr)
	writeJSON(w, http.StatusCreated, f.mrJSON(mr, f.heads()))
}

func (f *FakeGitLab) getMR(w http.ResponseWriter, r *http.Request) {
	mr := f.lockMR(w, r)
	if mr == nil {
		return
	}
	defer f.mu.Unlock()
	writeJSON(w, http.StatusOK, f.mrJSON(mr, f.heads()))
}

func (f *FakeGitLab) updateMR(w http.ResponseWriter, r *http.Request) {
	var req mrRequest
	if !decodeBody(w, r, &req) {
		return
	}
	mr := f.lockMR(w, r)
	if mr == nil {
		return
	}
	defer f.mu.Unlock()
	if req.Description != nil && tooLong(w, *req.Description) {
		return
	}
	if req.StateEvent != "" {
		if status, msg := f.transition(mr, req.StateEvent); msg != "" {
			writeMessage(w, status, []string{msg})
			return
		}
	}
	if req.Title != nil {
		mr.notes = f.titleNote(mr.notes, GitLabBot, mr.Title, *req.Title)
		mr.Title = *req.Title
	}
	if req.Description != nil {
		mr.notes = f.descriptionNotes(mr.notes, GitLabBot, mr.Description, *req.Description)
		mr.Description = *req.Description
	}
	if req.TargetBranch != nil {
		mr.TargetBranch = *req.TargetBranch
	}
	if l, ok := req.labels(); ok {
		mr.Labels = l
	}
	// add_labels and remove_labels change the labels the merge request
	// has, leaving the others; labels, when also given, replaces first.
	if add, ok := (mrRequest{Labels: req.AddLabels}).labels(); ok {
		mr.Labels = append(mr.Labels, add...)
		slices.Sort(mr.Labels)
		mr.Labels = slices.Compact(mr.Labels)
	}
	if remove, ok := (mrRequest{Labels: req.RemoveLabels}).labels(); ok {
		mr.Labels = slices.DeleteFunc(mr.Labels, func(l string) bool { return slices.Contains(remove, l) })
	}
	if req.ReviewerIDs != nil {
		mr.ReviewerIDs = req.ReviewerIDs
	}
	if req.AssigneeIDs != nil {
		mr.AssigneeIDs = req.AssigneeIDs
	}
	mr.UpdatedAt = f.tick()
	writeJSON(w, http.StatusOK, f.mrJSON(mr, f.heads()))
}

func (f *FakeGitLab) mergeMR(w http.ResponseWriter, r *http.Request) {
	mr := f.lockMR(w, r)
	if mr == nil {
		return
	}
	defer f.mu.Unlock()
	if mr.State != "opened" {
		writeMessage(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
		return
	}
	if isDraft(mr.Title) {
		writeMessage(w, http.StatusMethodNotAllowed, "405 Method Not Allowed")
		return
	}
	if err := f.merge(mr); err != nil {
		writeMessage(w, http.StatusNotAcceptable, "Branch cannot be merged")
		return
	}
	writeJSON(w, http.StatusOK, f.mrJSON(mr, f.heads()))
}

func (f *FakeGitLab) createNote(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Body string `json:"body"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	mr := f.lockMR(w, r)
	if mr == nil {
		return
	}
	defer f.mu.Unlock()
	if req.Body == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body is missing"})
		return
	}
	mr.notes = f.note(mr.notes, GitLabBot, req.Body, false)
	writeJSON(w, http.StatusCreated, f.noteJSON(mr.notes[len(mr.notes)-1], "MergeRequest", mr.id, mr.IID))
}

func (f *FakeGitLab) listUsers(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []map[string]any{}
	name := r.URL.Query().Get("username")
	if id, ok := f.users[name]; ok {
		out = append(out, map[string]any{"id": id, "username": name, "name": name, "state": "active"})
	}
	writeJSON(w, http.StatusOK, out)
}

// merge makes a merge commit of mr's source branch on its target branch
// in the bare repository, with git's merge machinery (no work tree), and
// marks mr merged. The caller holds the lock.
func (f *FakeGitLab) merge(mr *fakeMR) error {
	if mr.State != "opened" {
		return fmt.Errorf("!%d is %s", mr.IID, mr.State)
	}
	msg := fmt.Sprintf("Merge branch '%s' into '%s'\n\n%s\n\nSee merge request %s!%d", mr.SourceBranch, mr.TargetBranch, mr.Title, f.project.Path, mr.IID)
	commit, err := mergeBranch(f.runGit, mr.TargetBranch, mr.SourceBranch, msg)
	if err != nil {
		return fmt.Errorf("!%d cannot be merged: %w", mr.IID, err)
	}
	mr.State, mr.MergeCommit, mr.UpdatedAt = "merged", commit, f.tick()
	return nil
}

// heads maps every branch to its commit, read in one git process: the
// commit a merge request's source branch holds is in every answer.
func (f *FakeGitLab) heads() map[string]string {
	out := map[string]string{}
	refs, err := f.runGit("for-each-ref", "--format=%(refname:lstrip=2) %(objectname)", "refs/heads/")
	if err != nil {
		return out
	}
	for line := range strings.Lines(refs) {
		if name, sha, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			out[name] = sha
		}
	}
	return out
}

// revParse is the commit branch points at, "" when it does not exist.
func (f *FakeGitLab) revParse(branch string) string {
	out, err := f.runGit("rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

func (f *FakeGitLab) runGit(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.git, append([]string{"-C", f.project.Dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=A Person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=A Person", "GIT_COMMITTER_EMAIL=person@example.com")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s%s", args[0], err, stderr.String(), out)
	}
	return strings.TrimSpace(string(out)), nil
}
