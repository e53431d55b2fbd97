package forge

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// FakeIssue is an issue as the fake GitHub keeps it. Issues and pull
// requests share one sequence of numbers, as on GitHub.
type FakeIssue struct {
	Number      int
	Title, Body string
	// State is open or closed.
	State  string
	Labels []string
	// Author is the login of who opened it (the API's user.login).
	Author  string
	Created time.Time
	// Edits counts the changes made through the API after creation.
	Edits int
}

// Issues lists every issue (not pull request), oldest first.
func (f *FakeGitHub) Issues() []FakeIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FakeIssue, 0, len(f.issues))
	for _, is := range f.issues {
		c := *is
		c.Labels = slices.Clone(is.Labels)
		out = append(out, c)
	}
	return out
}

// NewIssue opens an issue as the maintainer would on the website.
func (f *FakeGitHub) NewIssue(title, body string, labels []string) int {
	return f.NewIssueAs(Maintainer, title, body, labels)
}

// EditIssueBody sets issue number's body as the maintainer editing it
// (ticking a checkbox does that).
func (f *FakeGitHub) EditIssueBody(number int, body string) error {
	return f.EditIssueBodyAs(Maintainer, number, body)
}

// nextNumber is the number the next issue or pull request gets.
func (f *FakeGitHub) nextNumber() int { return len(f.pulls) + len(f.issues) + 1 }

func (f *FakeGitHub) issue(number int) *FakeIssue {
	for _, is := range f.issues {
		if is.Number == number {
			return is
		}
	}
	return nil
}

// listIssues answers GET /repos/{owner}/{repo}/issues as GitHub documents
// it: state open (default), closed or all; labels, a comma-separated list
// every one of which an item must carry; creator; sort created with
// direction desc by default; pull requests listed too, each with a
// pull_request key; Link pagination.
func (f *FakeGitHub) listIssues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	type item struct {
		number int
		json   map[string]any
	}
	var items []item
	keep := func(st string, labels []string, author string) bool {
		if state != "all" && st != state {
			return false
		}
		if c := q.Get("creator"); c != "" && c != author {
			return false
		}
		for _, l := range want {
			if !slices.Contains(labels, strings.TrimSpace(l)) {
				return false
			}
		}
		return true
	}
	for _, is := range f.issues {
		if keep(is.State, is.Labels, is.Author) {
			items = append(items, item{is.Number, f.issueJSON(is)})
		}
	}
	for _, p := range f.pulls {
		if keep(p.State, p.Labels, p.Author) {
			j := f.issueJSON(&FakeIssue{Number: p.Number, Title: p.Title, Body: p.Body, State: p.State, Labels: p.Labels,
				Author: p.Author, Created: p.Created})
			j["pull_request"] = map[string]any{"url": fmt.Sprintf("%s/api/v3/repos/%s/%s/pulls/%d", f.URL, f.owner, f.repo, p.Number)}
			items = append(items, item{p.Number, j})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return a.number - b.number })
	if q.Get("direction") != "asc" {
		slices.Reverse(items)
	}
	from, to := paginate(w, r, len(items))
	body := []map[string]any{}
	for _, it := range items[from:to] {
		body = append(body, it.json)
	}
	f.reply(w, http.StatusOK, body)
}

// createIssue answers POST /repos/{owner}/{repo}/issues: 201 with the
// issue, opened by the caller; 422 without a title or with a body too
// long. "Only users with push access can set labels for new issues.
// Labels are silently dropped otherwise."
func (f *FakeGitHub) createIssue(w http.ResponseWriter, r *http.Request, who string) {
	var req struct {
		Title  string
		Body   string
		Labels []string
	}
	if !f.decode(w, r, &req) {
		return
	}
	if req.Title == "" {
		f.reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]string{"resource": "Issue", "field": "title", "code": "missing_field"}}})
		return
	}
	if len([]rune(req.Body)) > maxBodyChars {
		f.reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]string{"resource": "Issue", "field": "body", "code": "custom",
				"message": fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars)}}})
		return
	}
	is := &FakeIssue{Number: f.nextNumber(), Title: req.Title, Body: req.Body, State: "open", Author: who, Created: time.Now()}
	if !f.atLeast(who, "write") {
		req.Labels = nil
	}
	for _, l := range req.Labels {
		if !slices.Contains(is.Labels, l) {
			is.Labels = append(is.Labels, l)
		}
	}
	f.issues = append(f.issues, is)
	w.Header().Set("Location", fmt.Sprintf("%s/api/v3/repos/%s/%s/issues/%d", f.URL, f.owner, f.repo, is.Number))
	f.reply(w, http.StatusCreated, f.issueJSON(is))
}

func (f *FakeGitHub) getIssue(w http.ResponseWriter, num int) {
	if is := f.issue(num); is != nil {
		f.reply(w, http.StatusOK, f.issueJSON(is))
		return
	}
	f.fail(w, http.StatusNotFound, "Not Found")
}

// editIssue answers PATCH /repos/{owner}/{repo}/issues/{number}: title,
// body and state as given, when the caller may edit them (its author, or
// write access); an issue number that is a pull request's edits the pull
// request, as on GitHub.
func (f *FakeGitHub) editIssue(w http.ResponseWriter, r *http.Request, num int, who string) {
	var req struct {
		Title, Body, State *string
	}
	is := f.issue(num)
	if is == nil {
		if f.pull(num) != nil {
			f.edit(w, r, num, who)
			return
		}
		f.fail(w, http.StatusNotFound, "Not Found")
		return
	}
	if !f.decode(w, r, &req) {
		return
	}
	if (req.Title != nil || req.Body != nil) && !f.mayEdit(who, is.Author) {
		f.fail(w, http.StatusForbidden, "Resource not accessible by personal access token")
		return
	}
	if req.Body != nil && len([]rune(*req.Body)) > maxBodyChars {
		f.reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]string{"resource": "Issue", "field": "body", "code": "custom",
				"message": fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars)}}})
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		f.reply(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []any{map[string]string{"resource": "Issue", "field": "state", "code": "invalid"}}})
		return
	}
	if req.Title != nil {
		is.Title = *req.Title
	}
	if req.Body != nil {
		is.Body = *req.Body
	}
	if req.State != nil {
		is.State = *req.State
	}
	is.Edits++
	f.reply(w, http.StatusOK, f.issueJSON(is))
}

func (f *FakeGitHub) issueJSON(is *FakeIssue) map[string]any {
	name := f.owner + "/" + f.repo
	return map[string]any{
		"id": 5000 + is.Number, "number": is.Number, "state": is.State, "title": is.Title, "body": is.Body,
		"url":        fmt.Sprintf("%s/api/v3/repos/%s/issues/%d", f.URL, name, is.Number),
		"html_url":   fmt.Sprintf("%s/%s/issues/%d", f.URL, name, is.Number),
		"labels":     labelsJSON(is.Labels),
		"user":       userJSON(is.Author),
		"created_at": is.Created.UTC().Format(time.RFC3339), "updated_at": is.Created.UTC().Format(time.RFC3339),
	}
}
