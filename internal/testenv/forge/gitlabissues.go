package forge

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FakeGitLabIssue is an issue as the fake GitLab keeps it. Issues have
// their own IIDs, apart from merge requests', as on GitLab.
type FakeGitLabIssue struct {
	IID         int64
	Title       string
	Description string
	// State is opened or closed.
	State  string
	Labels []string
	// Author is the username of who opened it (the API's
	// author.username).
	Author    string
	CreatedAt time.Time
	// Edits counts the changes made through the API after creation.
	Edits int

	notes []fakeNote
}

// Issues lists every issue, oldest first.
func (f *FakeGitLab) Issues() []FakeGitLabIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FakeGitLabIssue, 0, len(f.issues))
	for _, is := range f.issues {
		c := *is
		c.Labels = slices.Clone(is.Labels)
		out = append(out, c)
	}
	return out
}

// NewIssue opens an issue as the maintainer would in the web interface.
func (f *FakeGitLab) NewIssue(title, description string, labels []string) int64 {
	return f.NewIssueAs(Maintainer, title, description, labels)
}

// EditIssueDescription sets issue iid's description as the maintainer
// editing it (ticking a checkbox does that).
func (f *FakeGitLab) EditIssueDescription(iid int64, description string) error {
	return f.EditIssueDescriptionAs(Maintainer, iid, description)
}

func (f *FakeGitLab) issue(iid int64) *FakeGitLabIssue {
	for _, is := range f.issues {
		if is.IID == iid {
			return is
		}
	}
	return nil
}

// listIssues answers GET /projects/:id/issues as GitLab documents it:
// state opened, closed or all (the default); labels, a comma-separated
// list every one of which an issue must carry; author_username; order_by
// created_at, sort desc by default; offset pagination.
func (f *FakeGitLab) listIssues(w http.ResponseWriter, r *http.Request) {
	if !f.lockProject(w, r) {
		return
	}
	defer f.mu.Unlock()
	q := r.URL.Query()
	state := cmp.Or(q.Get("state"), "all")
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var sel []*FakeGitLabIssue
	for _, is := range f.issues {
		if (state != "all" && is.State != state) || (q.Has("author_username") && is.Author != q.Get("author_username")) {
			continue
		}
		if slices.ContainsFunc(want, func(l string) bool { return !slices.Contains(is.Labels, strings.TrimSpace(l)) }) {
			continue
		}
		sel = append(sel, is)
	}
	slices.SortStableFunc(sel, func(a, b *FakeGitLabIssue) int {
		c := cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.IID, b.IID))
		if q.Get("sort") != "asc" {
			c = -c
		}
		return c
	})
	from, to := gitlabPage(w, r, len(sel))
	out := []map[string]any{}
	for _, is := range sel[from:to] {
		out = append(out, f.issueJSON(is))
	}
	writeJSON(w, http.StatusOK, out)
}

// issueRequest is the JSON body of a create or update request.
type issueRequest struct {
	Title       *string         `json:"title"`
	Description *string         `json:"description"`
	Labels      json.RawMessage `json:"labels"`
	StateEvent  string          `json:"state_event"`
}

// createIssue answers POST /projects/:id/issues: 201 with the issue, 400
// without a title.
func (f *FakeGitLab) createIssue(w http.ResponseWriter, r *http.Request) {
	var req issueRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !f.lockProject(w, r) {
		return
	}
	defer f.mu.Unlock()
	if req.Title == nil || *req.Title == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "title is missing"})
		return
	}
	if req.Description != nil && tooLong(w, *req.Description) {
		return
	}
	is := &FakeGitLabIssue{IID: int64(len(f.issues) + 1), Title: *req.Title, State: "opened", Author: GitLabBot, CreatedAt: f.tick()}
	if req.Description != nil {
		is.Description = *req.Description
	}
	is.Labels, _ = mrRequest{Labels: req.Labels}.labels()
	f.issues = append(f.issues, is)
	writeJSON(w, http.StatusCreated, f.issueJSON(is))
}

// updateIssue answers PUT /projects/:id/issues/:issue_iid.
func (f *FakeGitLab) updateIssue(w http.ResponseWriter, r *http.Request) {
	var req issueRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !f.lockProject(w, r) {
		return
	}
	defer f.mu.Unlock()
	iid, _ := strconv.ParseInt(r.PathValue("iid"), 10, 64)
	is := f.issue(iid)
	if is == nil {
		writeMessage(w, http.StatusNotFound, "404 Not found")
		return
	}
	if req.Description != nil && tooLong(w, *req.Description) {
		return
	}
	switch req.StateEvent {
	case "":
	case "close":
		is.State = "closed"
	case "reopen":
		is.State = "opened"
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "state_event does not have a valid value"})
		return
	}
	if req.Title != nil {
		is.notes = f.titleNote(is.notes, GitLabBot, is.Title, *req.Title)
		is.Title = *req.Title
	}
	if req.Description != nil {
		is.notes = f.descriptionNotes(is.notes, GitLabBot, is.Description, *req.Description)
		is.Description = *req.Description
	}
	if l, ok := (mrRequest{Labels: req.Labels}).labels(); ok {
		is.Labels = l
	}
	is.Edits++
	writeJSON(w, http.StatusOK, f.issueJSON(is))
}

func (f *FakeGitLab) issueJSON(is *FakeGitLabIssue) map[string]any {
	labels := is.Labels
	if labels == nil {
		labels = []string{}
	}
	return map[string]any{
		"id": 7000 + is.IID, "iid": is.IID, "project_id": f.project.ID,
		"title": is.Title, "description": is.Description, "state": is.State, "labels": labels,
		"author":     f.userJSON(is.Author),
		"created_at": is.CreatedAt.Format(time.RFC3339Nano), "updated_at": is.CreatedAt.Format(time.RFC3339Nano),
		"web_url":    fmt.Sprintf("%s/%s/-/issues/%d", f.URL, f.project.Path, is.IID),
		"references": map[string]any{"short": fmt.Sprintf("#%d", is.IID)},
	}
}
