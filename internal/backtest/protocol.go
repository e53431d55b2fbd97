package backtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The protocol (docs/backtest/protocol.md) freezes, by sha256, the policy
// files a backtest may judge, before their results exist. Git history is
// its record: a file is frozen by the commit that first put its hash in
// the protocol, and the results that judge it must descend from that
// commit. Scoring checks the first half of that (CheckFrozen); the test of
// the committed results checks the second (CheckResultsFollow).

// Frozen is one policy file judged under the protocol: what it hashed to
// and the commit that froze it.
type Frozen struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Commit string `json:"commit"`
}

// ProtocolRecord is what results.json says of the protocol a run followed.
type ProtocolRecord struct {
	File     string   `json:"file"`
	Policies []Frozen `json:"policies"`
}

// History is what the protocol's check asks of version control.
type History interface {
	// Committed reports whether file is tracked and the same as at HEAD.
	Committed(ctx context.Context, file string) (bool, error)
	// FirstCommitWith is the oldest commit of HEAD's history whose file
	// holds text, or "" when none does.
	FirstCommitWith(ctx context.Context, file, text string) (string, error)
	// LastCommitOf is the newest commit of HEAD's history that changed
	// file, or "" when none did.
	LastCommitOf(ctx context.Context, file string) (string, error)
	// IsAncestor reports whether commit a is b or an ancestor of it.
	IsAncestor(ctx context.Context, a, b string) (bool, error)
}

// frozenLine is one line of a protocol's sha256 block, as sha256sum
// writes it: the hash, two spaces (or a space and '*'), the path.
var frozenLine = regexp.MustCompile(`^([0-9a-f]{64}) [ *](\S.*)$`)

// ParseFrozen reads the sha256 of every line of the protocol's fenced
// blocks whose info string is "sha256"; each hash maps to its path. An
// error names the line that is not in sha256sum's format.
func ParseFrozen(name string, text []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	in := false
	for line := 1; sc.Scan(); line++ {
		l := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in && strings.TrimSpace(strings.TrimPrefix(l, "```")) == "sha256"
		case in && strings.TrimSpace(l) != "":
			m := frozenLine.FindStringSubmatch(l)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: %q is not \"<sha256>  <path>\"", name, line, l)
			}
			out[m[1]] = m[2]
		}
	}
	if in {
		return nil, fmt.Errorf("%s: a sha256 block is not closed", name)
	}
	return out, sc.Err()
}

// PolicyFiles lists the files a policies spec (NAME=PATH or PATH) loads:
// the file, or every YAML file under the directory.
func PolicyFiles(spec string) ([]string, error) {
	_, path, ok := strings.Cut(spec, "=")
	if !ok {
		path = spec
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != path && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if ext := strings.ToLower(filepath.Ext(p)); d.Type().IsRegular() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// ErrNotFrozen is a policy file the protocol does not freeze, or does not
// freeze in the history of what is being scored.
var ErrNotFrozen = errors.New("not frozen by the protocol")

// CheckFrozen checks that the protocol file is committed as it is, and
// that every policy file's sha256 is frozen in it by a commit that is an
// ancestor of HEAD, and returns each file with that commit.
func CheckFrozen(ctx context.Context, h History, protocol string, policies []string) (*ProtocolRecord, error) {
	ok, err := h.Committed(ctx, protocol)
	if err != nil {
		return nil, fmt.Errorf("protocol %s: %w", protocol, err)
	}
	if !ok {
		return nil, fmt.Errorf("protocol %s is not committed as it is: commit it before scoring what it governs", protocol)
	}
	text, err := os.ReadFile(protocol)
	if err != nil {
		return nil, err
	}
	frozen, err := ParseFrozen(protocol, text)
	if err != nil {
		return nil, err
	}
	rec := &ProtocolRecord{File: filepath.ToSlash(protocol)}
	for _, p := range policies {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		hash := hex.EncodeToString(sum[:])
		if _, ok := frozen[hash]; !ok {
			return nil, fmt.Errorf("policy file %s (sha256 %s): %w in %s: freeze it in an amendment, commit that, then score it", p, hash, ErrNotFrozen, protocol)
		}
		commit, err := h.FirstCommitWith(ctx, protocol, hash)
		if err != nil {
			return nil, fmt.Errorf("protocol %s: %w", protocol, err)
		}
		if commit == "" {
			return nil, fmt.Errorf("policy file %s (sha256 %s): %w in the history of HEAD", p, hash, ErrNotFrozen)
		}
		rec.Policies = append(rec.Policies, Frozen{Path: filepath.ToSlash(p), SHA256: hash, Commit: commit})
	}
	return rec, nil
}

// CheckResultsFollow checks a committed results file against the protocol
// record it holds: every policy it judged was frozen by a commit that is
// an ancestor of the commit that last wrote the results (HEAD when they
// are not committed yet), and that commit's protocol holds its hash. The
// record's protocol path is relative to root, where the run ran.
func CheckResultsFollow(ctx context.Context, h History, root, results string, rec *ProtocolRecord) error {
	if rec == nil || len(rec.Policies) == 0 {
		return fmt.Errorf("%s names no protocol: run the backtest with --protocol", results)
	}
	at := "HEAD"
	if ok, err := h.Committed(ctx, results); err != nil {
		return err
	} else if ok {
		if at, err = h.LastCommitOf(ctx, results); err != nil {
			return err
		}
	}
	for _, p := range rec.Policies {
		ok, err := h.IsAncestor(ctx, p.Commit, at)
		if err != nil {
			return fmt.Errorf("%s: policy %s: %w", results, p.Path, err)
		}
		if !ok {
			return fmt.Errorf("%s: policy %s was frozen in %s, which is not an ancestor of the results (%s): %w", results, p.Path, p.Commit, at, ErrNotFrozen)
		}
		file := filepath.FromSlash(rec.File)
		if !filepath.IsAbs(file) {
			file = filepath.Join(root, file)
		}
		first, err := h.FirstCommitWith(ctx, file, p.SHA256)
		if err != nil {
			return err
		}
		if first != p.Commit {
			return fmt.Errorf("%s: policy %s: the protocol froze sha256 %s in %q, the results say %q: %w", results, p.Path, p.SHA256, first, p.Commit, ErrNotFrozen)
		}
	}
	return nil
}

// Git answers History with the git command, in the work tree that holds
// Dir.
type Git struct{ Dir string }

var _ History = Git{}

func (g Git) run(ctx context.Context, args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", g.Dir}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

// abs gives git a path it resolves the same from any directory.
func abs(file string) (string, error) { return filepath.Abs(file) }

func (g Git) Committed(ctx context.Context, file string) (bool, error) {
	f, err := abs(file)
	if err != nil {
		return false, err
	}
	if _, err := g.run(ctx, "ls-files", "--error-unmatch", "--", f); err != nil {
		return false, nil
	}
	st, err := g.run(ctx, "status", "--porcelain", "--", f)
	return st == "", err
}

func (g Git) FirstCommitWith(ctx context.Context, file, text string) (string, error) {
	f, err := abs(file)
	if err != nil {
		return "", err
	}
	// -S lists the commits that changed how often text occurs; the
	// oldest put it there first.
	out, err := g.run(ctx, "log", "--reverse", "--format=%H", "-S"+text, "HEAD", "--", f)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(first), nil
}

func (g Git) LastCommitOf(ctx context.Context, file string) (string, error) {
	f, err := abs(file)
	if err != nil {
		return "", err
	}
	out, err := g.run(ctx, "log", "-1", "--format=%H", "HEAD", "--", f)
	return strings.TrimSpace(out), err
}

func (g Git) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", g.Dir, "merge-base", "--is-ancestor", a, b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil
	}
	return false, fmt.Errorf("git merge-base --is-ancestor %s %s: %w: %s", a, b, err, strings.TrimSpace(stderr.String()))
}

// sortedFiles lists the policy files of every spec, each once.
func sortedFiles(specs []string) ([]string, error) {
	var files []string
	for _, s := range specs {
		fs, err := PolicyFiles(s)
		if err != nil {
			return nil, fmt.Errorf("policies %s: %w", s, err)
		}
		for _, f := range fs {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	return files, nil
}
