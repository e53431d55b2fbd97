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
	"slices"
	"strconv"
	"strings"
	"sync"
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
type Local struct {
	dir string

	mu     sync.Mutex
	loaded bool
	prs    map[int]PullRequest
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
	return out, nil
}

// load reads every record, once.
func (l *Local) load() error {
	if l.loaded {
		return nil
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // none written yet
		return fmt.Errorf("local pull requests: %w", err)
	}
	l.prs = map[int]PullRequest{}
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(l.dir, e.Name()))
		if err != nil {
			return fmt.Errorf("local pull requests: %w", err)
		}
		var pr PullRequest
		if err := json.Unmarshal(b, &pr); err != nil {
			return fmt.Errorf("local pull request %s: %w", e.Name(), err)
		}
		l.prs[pr.Number] = pr
	}
	l.loaded = true
	return nil
}

// Find lists the pull requests of branch, newest first.
func (l *Local) Find(_ context.Context, branch string) ([]PullRequest, error) {
	all, err := l.All()
	if err != nil {
		return nil, err
	}
	var out []PullRequest
	for _, pr := range slices.Backward(all) {
		if pr.Branch == branch {
			out = append(out, pr)
		}
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
	all, err := l.All()
	if err != nil {
		return PullRequest{}, err
	}
	for _, pr := range all {
		if pr.Branch == n.Branch && pr.State == Open {
			return PullRequest{}, fmt.Errorf("a pull request for %s is already open (#%d)", n.Branch, pr.Number)
		}
	}
	// One more than the highest number: records deleted by hand never
	// make a number come round again.
	next := 1
	for _, pr := range all {
		next = max(next, pr.Number+1)
	}
	pr := PullRequest{Number: next, Branch: n.Branch, Base: n.Base, Title: n.Title, Body: n.Body,
		State: Open, Labels: n.Labels, Draft: n.Draft}
	pr.URL = "file://" + filepath.ToSlash(l.path(pr.Number, ".md"))
	// Claim the number: a concurrent run, or a record left behind, must
	// not be overwritten.
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return PullRequest{}, fmt.Errorf("local pull requests: %w", err)
	}
	f, err := os.OpenFile(l.path(pr.Number, ".json"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return PullRequest{}, fmt.Errorf("local pull request #%d: %w", pr.Number, err)
	}
	f.Close()
	return pr, l.save(pr)
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

// save writes the record and the body, each through a temporary file, so
// that a killed run leaves either the old or the new version.
func (l *Local) save(pr PullRequest) error {
	b, err := json.MarshalIndent(pr, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("local pull requests: %w", err)
	}
	md := fmt.Sprintf("# %s\n\n<!-- #%d %s, branch %s into %s -->\n\n%s", pr.Title, pr.Number, pr.State, pr.Branch, pr.Base, pr.Body)
	for ext, data := range map[string][]byte{".json": append(b, '\n'), ".md": []byte(md)} {
		tmp := l.path(pr.Number, ext) + ".tmp" + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, l.path(pr.Number, ext)); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded {
		l.prs[pr.Number] = pr
	}
	return nil
}
