package forge

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GitLabBot is the user the fake GitLab's token acts as: the project
// access token's bot user, a Developer. People act through the methods
// that are not HTTP handlers, as Maintainer unless a method takes a
// username.
const GitLabBot = "recommender-bot"

// The access levels of GitLab's roles, as the members API reports them
// in access_level (docs.gitlab.com, "Group and project members API",
// "Roles").
const (
	AccessGuest      = 10
	AccessPlanner    = 15
	AccessReporter   = 20
	AccessDeveloper  = 30
	AccessMaintainer = 40
	AccessOwner      = 50
)

// maxDescription is the longest description GitLab takes: "Limited to
// 1,048,576 characters" (Issues and Merge requests APIs).
const maxDescription = 1 << 20

// AddMember adds username as a member of the project with access (one of
// the Access levels), and returns the user's ID.
func (f *FakeGitLab) AddMember(username string, access int) int64 {
	id := f.AddUser(username)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.access[id] = access
	return id
}

// AddUser adds a user that merge requests can name as reviewer or
// assignee, and returns its ID; a user added twice keeps its ID.
func (f *FakeGitLab) AddUser(username string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.users[username]; ok {
		return id
	}
	id := int64(100 + len(f.users))
	f.users[username] = id
	return id
}

// level is username's access level in the project, 0 for a non-member.
func (f *FakeGitLab) level(username string) int {
	return f.access[f.users[username]]
}

// userJSON is a user as GitLab embeds one (author, assignees).
func (f *FakeGitLab) userJSON(username string) map[string]any {
	return map[string]any{"id": f.users[username], "username": username, "name": username, "state": "active"}
}

// currentUser answers GET /user: the token's user.
func (f *FakeGitLab) currentUser(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writeJSON(w, http.StatusOK, f.userJSON(GitLabBot))
}

// getMember answers GET /projects/:id/members/all/:user_id, a member
// "including inherited and invited members": its access_level, or 404
// for a user who is not one.
func (f *FakeGitLab) getMember(w http.ResponseWriter, r *http.Request) {
	if !f.lockProject(w, r) {
		return
	}
	defer f.mu.Unlock()
	id, _ := strconv.ParseInt(r.PathValue("user"), 10, 64)
	level, ok := f.access[id]
	if !ok {
		writeMessage(w, http.StatusNotFound, "404 Not found")
		return
	}
	for name, uid := range f.users {
		if uid == id {
			m := f.userJSON(name)
			m["access_level"] = level
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
}

// fakeNote is a note (comment) on an issue or merge request, or a system
// note GitLab writes of a change: "changed the description", "marked the
// checklist item **…** as completed", "changed title from …".
type fakeNote struct {
	ID     int64
	Body   string
	Author string
	System bool
	At     time.Time
}

// note appends a note by author to notes. The caller holds the lock.
func (f *FakeGitLab) note(notes []fakeNote, author, body string, system bool) []fakeNote {
	f.notes++
	return append(notes, fakeNote{ID: f.notes, Body: body, Author: author, System: system, At: f.tick()})
}

// titleNote is GitLab's system note of a title changed by who.
func (f *FakeGitLab) titleNote(notes []fakeNote, who, old, now string) []fakeNote {
	if old == now {
		return notes
	}
	return f.note(notes, who, fmt.Sprintf("changed title from **%s** to **%s**", old, now), true)
}

// descriptionNotes are GitLab's system notes of a description changed by
// who: one for each checklist item ticked or unticked when that is all
// that changed (what ticking a box in the web interface does), else
// "changed the description"; none when nothing changed.
func (f *FakeGitLab) descriptionNotes(notes []fakeNote, who, old, now string) []fakeNote {
	if old == now {
		return notes
	}
	a, b := strings.Split(old, "\n"), strings.Split(now, "\n")
	var toggled []string
	if len(a) == len(b) {
		for i := range a {
			if a[i] == b[i] {
				continue
			}
			item, done, ok := toggle(a[i], b[i])
			if !ok {
				toggled = nil
				break
			}
			state := "incomplete"
			if done {
				state = "completed"
			}
			toggled = append(toggled, fmt.Sprintf("marked the checklist item **%s** as %s", item, state))
		}
	}
	if len(toggled) == 0 {
		return f.note(notes, who, "changed the description", true)
	}
	for _, n := range toggled {
		notes = f.note(notes, who, n, true)
	}
	return notes
}

// toggle says whether line b is line a with its checkbox ticked or
// unticked, and the item's text.
func toggle(a, b string) (item string, done, ok bool) {
	for _, box := range [][2]string{{"[ ]", "[x]"}, {"[ ]", "[X]"}, {"[x]", "[ ]"}, {"[X]", "[ ]"}} {
		i := strings.Index(a, box[0])
		if i >= 0 && b == a[:i]+box[1]+a[i+3:] && strings.TrimLeft(a[:i], " \t-*+") == "" {
			return strings.TrimSpace(a[i+3:]), box[1] != "[ ]", true
		}
	}
	return "", false, false
}

func (f *FakeGitLab) noteJSON(n fakeNote, typ string, id, iid int64) map[string]any {
	return map[string]any{
		"id": n.ID, "type": nil, "body": n.Body, "author": f.userJSON(n.Author), "system": n.System,
		"created_at": n.At.Format(time.RFC3339Nano), "updated_at": n.At.Format(time.RFC3339Nano),
		"noteable_id": id, "noteable_type": typ, "noteable_iid": iid, "project_id": f.project.ID,
		"resolvable": false, "internal": false, "confidential": false,
	}
}

// listNotes answers a list of notes as GitLab's Notes API documents it:
// system notes among them, sort desc by default, order_by created_at (or
// updated_at, the same here), offset pagination.
func (f *FakeGitLab) listNotes(w http.ResponseWriter, r *http.Request, notes []fakeNote, typ string, id, iid int64) {
	sel := slices.Clone(notes)
	if r.URL.Query().Get("sort") != "asc" {
		slices.Reverse(sel)
	}
	from, to := gitlabPage(w, r, len(sel))
	out := []map[string]any{}
	for _, n := range sel[from:to] {
		out = append(out, f.noteJSON(n, typ, id, iid))
	}
	writeJSON(w, http.StatusOK, out)
}

// listIssueNotes answers GET /projects/:id/issues/:issue_iid/notes.
func (f *FakeGitLab) listIssueNotes(w http.ResponseWriter, r *http.Request) {
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
	f.listNotes(w, r, is.notes, "Issue", 7000+is.IID, is.IID)
}

// listMRNotes answers GET /projects/:id/merge_requests/:merge_request_iid/notes.
func (f *FakeGitLab) listMRNotes(w http.ResponseWriter, r *http.Request) {
	mr := f.lockMR(w, r)
	if mr == nil {
		return
	}
	defer f.mu.Unlock()
	f.listNotes(w, r, mr.notes, "MergeRequest", mr.id, mr.IID)
}

// tooLong answers 400 for a description over GitLab's limit.
func tooLong(w http.ResponseWriter, description string) bool {
	if len([]rune(description)) <= maxDescription {
		return false
	}
	writeMessage(w, http.StatusBadRequest, map[string]any{"description": []string{fmt.Sprintf("is too long (maximum is %d characters)", maxDescription)}})
	return true
}

// NewIssueAs opens an issue as username would in the web interface;
// its labels are kept when username may set them (Planner and above).
func (f *FakeGitLab) NewIssueAs(username, title, description string, labels []string) int64 {
	f.AddUser(username)
	f.mu.Lock()
	defer f.mu.Unlock()
	is := &FakeGitLabIssue{IID: int64(len(f.issues) + 1), Title: title, Description: description, State: "opened",
		Author: username, CreatedAt: f.tick()}
	if f.level(username) >= AccessPlanner {
		is.Labels = slices.Clone(labels)
	}
	f.issues = append(f.issues, is)
	return is.IID
}

// EditIssueDescriptionAs sets issue iid's description as username would
// (ticking a checkbox does that), with the system notes GitLab writes of
// it. Its author may, and so may a Planner, a Reporter and above: GitLab
// lets them update issues they did not open, which is why the tool asks
// who ticked a box.
func (f *FakeGitLab) EditIssueDescriptionAs(username string, iid int64, description string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issue(iid)
	if is == nil {
		return fmt.Errorf("no issue #%d", iid)
	}
	if username != is.Author && f.level(username) < AccessPlanner {
		return fmt.Errorf("fake gitlab: %s may not edit issue #%d", username, iid)
	}
	if len([]rune(description)) > maxDescription {
		return fmt.Errorf("fake gitlab: issue #%d: description is too long (maximum is %d characters)", iid, maxDescription)
	}
	is.notes = f.descriptionNotes(is.notes, username, is.Description, description)
	is.Description = description
	return nil
}

// EditAs sets merge request iid's title and description as username
// would, with the system notes GitLab writes of it: its author, or a
// Developer and above, may.
func (f *FakeGitLab) EditAs(username string, iid int64, title, description string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	mr := f.find(iid)
	if mr == nil {
		return fmt.Errorf("no merge request !%d", iid)
	}
	if username != mr.Author && f.level(username) < AccessDeveloper {
		return fmt.Errorf("fake gitlab: %s may not edit merge request !%d", username, iid)
	}
	mr.notes = f.titleNote(mr.notes, username, mr.Title, title)
	mr.notes = f.descriptionNotes(mr.notes, username, mr.Description, description)
	mr.Title, mr.Description, mr.UpdatedAt = title, description, f.tick()
	return nil
}

// OpenMR is a person's merge request, as OpenMRAs takes it.
type OpenMR struct {
	Source, Target, Title, Description string
	// Fork, when set, is the path of the fork whose branch Source is.
	Fork string
}

// OpenMRAs opens a merge request as username would, and returns its IID:
// from a branch of the project (a Developer and above), or from a fork's
// branch of the same name or any other (anyone who can fork). One is open
// for each source project, source branch and target branch.
func (f *FakeGitLab) OpenMRAs(username string, o OpenMR) (int64, error) {
	f.AddUser(username)
	f.mu.Lock()
	defer f.mu.Unlock()
	source := f.project.ID
	if o.Fork != "" {
		// A fork's ID: GitLab's projects are numbered instance-wide.
		source = f.project.ID + 1000 + int64(len(o.Fork))
	} else {
		if f.level(username) < AccessDeveloper {
			return 0, fmt.Errorf("fake gitlab: %s may not open a merge request from the project's branches", username)
		}
		if f.revParse(o.Source) == "" {
			return 0, fmt.Errorf("fake gitlab: no branch %s", o.Source)
		}
	}
	if f.revParse(o.Target) == "" {
		return 0, fmt.Errorf("fake gitlab: no branch %s", o.Target)
	}
	if other := f.openFor(source, o.Source, o.Target); other != nil {
		return 0, fmt.Errorf("fake gitlab: another open merge request already exists for this source branch: !%d", other.IID)
	}
	now := f.tick()
	mr := &fakeMR{id: int64(9000 + len(f.mrs) + 1), sourceProject: source, FakeMergeRequest: FakeMergeRequest{
		IID: int64(len(f.mrs) + 1), Title: o.Title, Description: o.Description, State: "opened",
		SourceBranch: o.Source, TargetBranch: o.Target, CreatedAt: now, UpdatedAt: now, Author: username, Fork: o.Fork,
	}}
	f.mrs = append(f.mrs, mr)
	return mr.IID, nil
}
