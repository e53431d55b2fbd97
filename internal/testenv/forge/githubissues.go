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
	State   string
	Labels  []string
	Author  string
	Created time.Time
	// Edits counts the changes made through the API after creation.
	Edits int
}

// The bot's login on the fake: every issue and pull request the API
// creates is its.
const fakeBot = "gpu-rightsizing[bot]"

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

// NewIssue opens an issue as a person would on the website.
func (f *FakeGitHub) NewIssue(title, body string, labels []string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := &FakeIssue{Number: f.nextNumber(), Title: title, Body: body, State: "open", Labels: slices.Clone(labels),
		Author: "a-person", Created: time.Now()}
	f.issues = append(f.issues, is)
	return is.Number
}

// EditIssueBody sets issue number's body as a person editing it (ticking
// a checkbox does that).
func (f *FakeGitHub) EditIssueBody(number int, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issue(number)
	if is == nil {
		return fmt.Errorf("fake github: no issue #%d", number)
	}
	is.Body = body
	return nil
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
		if keep(p.State, p.Labels, fakeBot) {
			j := f.issueJSON(&FakeIssue{Number: p.Number, Title: p.Title, Body: p.Body, State: p.State, Labels: p.Labels,
				Author: fakeBot, Created: p.Created})
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
// issue, 422 without a title.
func (f *FakeGitHub) createIssue(w http.ResponseWriter, r *http.Request) {
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
	is := &FakeIssue{Number: f.nextNumber(), Title: req.Title, Body: req.Body, State: "open", Author: fakeBot, Created: time.Now()}
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
// body and state as given; an issue number that is a pull request's edits
// the pull request, as on GitHub.
func (f *FakeGitHub) editIssue(w http.ResponseWriter, r *http.Request, num int) {
	var req struct {
		Title, Body, State *string
	}
	is := f.issue(num)
	if is == nil {
		if f.pull(num) != nil {
			f.edit(w, r, num)
			return
		}
		f.fail(w, http.StatusNotFound, "Not Found")
		return
	}
	if !f.decode(w, r, &req) {
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
		"user":       map[string]any{"login": is.Author},
		"created_at": is.Created.UTC().Format(time.RFC3339), "updated_at": is.Created.UTC().Format(time.RFC3339),
	}
}
