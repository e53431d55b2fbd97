package scm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Local keeps pull requests as files in a directory, for offline use and
// the demo: each is a JSON record and its body as Markdown, numbered in
// order. The branches live in the git repository it stands beside.
//
// A Local reads the records once, at its first use, and keeps them as it
// writes them, so that a run's lookups cost no more than the records they
// look at: what another process writes meanwhile is not seen (a run makes
// a Local of its own; two runs at once cannot take the same number, see
// Open).
//
// Every file is written whole or not at all (atomic.go), so that a run
// killed at any point leaves records the next one reads. A record found
// half-written all the same (a crash of the machine on a file system that
// lost it, or a version of the tool before this one) is repaired from the
// Markdown file written beside it, or else set aside as NNNN.json.broken,
// its number never given again; either way the run goes on.
type Local struct {
	dir string

	mu     sync.Mutex
	loaded bool
	prs    map[int]PullRequest
	// byBranch are the numbers of each branch's records, in order, and
	// high the highest number of a record: Find and Open look at one
	// branch's records, not at every record a run has written.
	byBranch map[string][]int
	high     int
	// taken is the highest number a record set aside holds.
	taken int
	// unread are the records this Local wrote, kept without their body:
	// a run of 10,000 pull requests held 29 MB of bodies it never looked
	// at again. A lookup that returns one reads its body back.
	unread map[int]bool
}

// NewLocal keeps pull requests under dir, created when missing.
//
// The directory is created with the first pull request written: a run
// that writes none (a dry run) leaves nothing behind.
func NewLocal(dir string) (*Local, error) {
	return &Local{dir: dir}, nil
}

// Dir is where the pull requests are kept.
func (l *Local) Dir() string { return l.dir }

// All lists every pull request, oldest first.
func (l *Local) All() ([]PullRequest, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(); err != nil {
		return nil, err
	}
	out := slices.Collect(maps.Values(l.prs))
	slices.SortFunc(out, func(a, b PullRequest) int { return cmp.Compare(a.Number, b.Number) })
	for i := range out {
		if err := l.body(&out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// body reads back the body of pr when it was kept without it, l.mu held.
func (l *Local) body(pr *PullRequest) error {
	if !l.unread[pr.Number] {
		return nil
	}
	read, err := l.Get(pr.Number)
	if err != nil {
		return err
	}
	pr.Body = read.Body
	return nil
}

// localRecord is a record's name, its number four digits or more.
var localRecord = regexp.MustCompile(`^(\d{4,})\.json$`)

// load reads every record, once, repairing those it cannot read.
func (l *Local) load() error {
	if l.loaded {
		return nil
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // none written yet
		return fmt.Errorf("local pull requests: %w", err)
	}
	l.prs, l.byBranch, l.high = map[int]PullRequest{}, map[string][]int{}, 0
	now := time.Now()
	for _, e := range entries {
		if staleTemp(e, now) {
			_ = os.Remove(filepath.Join(l.dir, e.Name()))
			continue
		}
		if m := localBroken.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			l.taken = max(l.taken, n)
			continue
		}
		m := localRecord.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(l.dir, e.Name()))
		if err != nil {
			return fmt.Errorf("local pull requests: %w", err)
		}
		var pr PullRequest
		if err := json.Unmarshal(b, &pr); err != nil {
			if pr, err = l.repair(n); err != nil {
				return err
			}
			if pr.Number == 0 {
				continue
			}
		}
		l.keep(pr)
	}
	l.loaded = true
	return nil
}

// keep puts pr among the records read or written, l.mu held.
func (l *Local) keep(pr PullRequest) {
	old, had := l.prs[pr.Number]
	l.prs[pr.Number] = pr
	l.high = max(l.high, pr.Number)
	if had && old.Branch == pr.Branch {
		return
	}
	if had {
		l.byBranch[old.Branch] = slices.DeleteFunc(l.byBranch[old.Branch], func(n int) bool { return n == pr.Number })
	}
	ns := l.byBranch[pr.Branch]
	i, _ := slices.BinarySearch(ns, pr.Number)
	l.byBranch[pr.Branch] = slices.Insert(ns, i, pr.Number)
}

// localBroken is a record set aside by repair.
var localBroken = regexp.MustCompile(`^(\d{4,})\.json\.broken$`)

// localHeader is the line under a record's Markdown title (see save).
var localHeader = regexp.MustCompile(`^<!-- #(\d+) (open|closed|merged), branch (\S+) into (\S+) -->$`)

// repair deals with record n, which cannot be read: it is written again
// from its Markdown file, which says all of it but the labels and the
// draft, when that file is whole; else it is set aside, and the zero
// PullRequest returned.
func (l *Local) repair(n int) (PullRequest, error) {
	record := l.path(n, ".json")
	if b, err := os.ReadFile(l.path(n, ".md")); err == nil {
		if pr, ok := fromMarkdown(string(b)); ok && pr.Number == n {
			pr.URL = "file://" + filepath.ToSlash(l.path(n, ".md"))
			if err := l.writeRecord(pr, writeFile); err != nil {
				return PullRequest{}, fmt.Errorf("local pull request #%d: repair: %w", n, err)
			}
			return pr, nil
		}
	}
	if err := os.Rename(record, record+".broken"); err != nil {
		return PullRequest{}, fmt.Errorf("local pull request #%d: set aside: %w", n, err)
	}
	l.taken = max(l.taken, n)
	return PullRequest{}, nil
}

// fromMarkdown reads a record back from the Markdown file save writes.
func fromMarkdown(s string) (PullRequest, bool) {
	title, rest, _ := strings.Cut(s, "\n")
	title, ok := strings.CutPrefix(title, "# ")
	if !ok {
		return PullRequest{}, false
	}
	rest, ok = strings.CutPrefix(rest, "\n")
	header, body, found := strings.Cut(rest, "\n")
	m := localHeader.FindStringSubmatch(header)
	if !ok || !found || m == nil {
		return PullRequest{}, false
	}
	body, ok = strings.CutPrefix(body, "\n")
	n, err := strconv.Atoi(m[1])
	if !ok || err != nil {
		return PullRequest{}, false
	}
	return PullRequest{Number: n, State: State(m[2]), Branch: m[3], Base: m[4], Title: title, Body: body}, true
}

// Find lists the pull requests of branch, newest first.
func (l *Local) Find(_ context.Context, branch string) ([]PullRequest, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.load(); err != nil {
		return nil, err
	}
	var out []PullRequest
	for _, n := range slices.Backward(l.byBranch[branch]) {
		pr := l.prs[n]
		if err := l.body(&pr); err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// ListOpen lists the open pull requests whose branch starts with prefix.
func (l *Local) ListOpen(_ context.Context, prefix string) ([]PullRequest, error) {
	all, err := l.All()
	if err != nil {
		return nil, err
	}
	var out []PullRequest
	for _, pr := range all {
		if pr.State == Open && strings.HasPrefix(pr.Branch, prefix) {
			out = append(out, pr)
		}
	}
	return out, nil
}

// Open records a new pull request.
func (l *Local) Open(_ context.Context, n NewPullRequest) (PullRequest, error) {
	l.mu.Lock()
	if err := l.load(); err != nil {
		l.mu.Unlock()
		return PullRequest{}, err
	}
	for _, num := range l.byBranch[n.Branch] {
		if l.prs[num].State == Open {
			l.mu.Unlock()
			return PullRequest{}, fmt.Errorf("a pull request for %s is already open (#%d)", n.Branch, num)
		}
	}
	// One more than the highest number: records deleted by hand, or set
	// aside, never make a number come round again.
	next := max(l.taken, l.high) + 1
	l.mu.Unlock()
	pr := PullRequest{Number: next, Branch: n.Branch, Base: n.Base, Title: n.Title, Body: n.Body,
		State: Open, Labels: n.Labels, Draft: n.Draft}
	pr.URL = "file://" + filepath.ToSlash(l.path(pr.Number, ".md"))
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return PullRequest{}, fmt.Errorf("local pull requests: %w", err)
	}
	// The number is claimed with the whole record: a concurrent run, or
	// a record left behind, is not overwritten, and a kill leaves none
	// half-written. The Markdown file's flush of the directory keeps
	// both names.
	if err := l.writeRecord(pr, claimFile); err != nil {
		return PullRequest{}, fmt.Errorf("local pull request #%d: %w", pr.Number, err)
	}
	return pr, l.saveMarkdown(pr)
}

// Update changes a pull request's title and body.
func (l *Local) Update(_ context.Context, number int, title, body string) error {
	pr, err := l.Get(number)
	if err != nil {
		return err
	}
	pr.Title, pr.Body = title, body
	return l.save(pr)
}

// Relabel adds labels to a pull request and removes others; the record
// keeps them sorted.
func (l *Local) Relabel(_ context.Context, number int, add, remove []string) error {
	pr, err := l.Get(number)
	if err != nil {
		return err
	}
	labels := slices.DeleteFunc(append(slices.Clone(pr.Labels), add...), func(s string) bool { return slices.Contains(remove, s) })
	slices.Sort(labels)
	pr.Labels = slices.Compact(labels)
	return l.save(pr)
}

// Close closes a pull request, appending comment to it.
func (l *Local) Close(ctx context.Context, number int, comment string) error {
	return l.SetState(number, Closed, comment)
}

// SetState is what a person does: close, reopen or merge (after merging
// the branch with git). comment, when set, is appended to the body file.
func (l *Local) SetState(number int, s State, comment string) error {
	pr, err := l.Get(number)
	if err != nil {
		return err
	}
	pr.State = s
	if comment != "" {
		pr.Body += "\n\n---\n" + comment + "\n"
	}
	return l.save(pr)
}

// Get returns pull request number.
func (l *Local) Get(number int) (PullRequest, error) {
	b, err := os.ReadFile(l.path(number, ".json"))
	if errors.Is(err, os.ErrNotExist) {
		return PullRequest{}, fmt.Errorf("no local pull request #%d", number)
	}
	if err != nil {
		return PullRequest{}, err
	}
	var pr PullRequest
	if err := json.Unmarshal(b, &pr); err != nil {
		return PullRequest{}, fmt.Errorf("local pull request #%d: %w", number, err)
	}
	return pr, nil
}

func (l *Local) path(number int, ext string) string {
	return filepath.Join(l.dir, fmt.Sprintf("%04d", number)+ext)
}

// writeRecord writes pr's JSON record with write.
func (l *Local) writeRecord(pr PullRequest, write func(path string, data []byte) error) error {
	b, err := json.MarshalIndent(pr, "", "  ")
	if err != nil {
		return err
	}
	return write(l.path(pr.Number, ".json"), append(b, '\n'))
}

// save writes the record, then the body as Markdown, each whole (a killed
// run leaves either the old or the new version): the record is what a
// run reads; the Markdown is for people, and for repair.
func (l *Local) save(pr PullRequest) error {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("local pull requests: %w", err)
	}
	if err := l.writeRecord(pr, writeFile); err != nil {
		return fmt.Errorf("local pull request #%d: %w", pr.Number, err)
	}
	return l.saveMarkdown(pr)
}

// saveMarkdown writes the body as Markdown, once the record is written,
// and keeps the record among those read.
func (l *Local) saveMarkdown(pr PullRequest) error {
	md := fmt.Sprintf("# %s\n\n<!-- #%d %s, branch %s into %s -->\n\n%s", pr.Title, pr.Number, pr.State, pr.Branch, pr.Base, pr.Body)
	if err := writeFile(l.path(pr.Number, ".md"), []byte(md)); err != nil {
		return fmt.Errorf("local pull request #%d: %w", pr.Number, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded {
		if l.unread == nil {
			l.unread = map[int]bool{}
		}
		pr.Body, l.unread[pr.Number] = "", true
		l.keep(pr)
	}
	return nil
}
