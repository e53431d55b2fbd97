// Package checkout is the one reader of a repository's YAML files. Policy
// loading and workload discovery both consume what it reads, so the rules
// about what is read, and how safely, live here once (docs/design.md §10,
// invariants 7 and 8):
//
//   - directories whose names start with a dot (.git, .github) are
//     skipped, except the root itself, and so is a Helm chart's templates
//     directory (a directory named templates beside a regular file
//     Chart.yaml): its files are not YAML until rendered;
//   - YAML files are *.yaml and *.yml, the extension in any case;
//   - symlinks are followed inside the checkout only; a file reached
//     through one is read once, under the path it leads to; links to
//     directories are not followed;
//   - only regular files are read, checked again on the opened file, and
//     none larger than MaxFileSize; all of them together no more than
//     TotalBound, since a run parses and holds them;
//   - a name with a control character is not read, and is a Problem;
//   - anything that cannot be read is a Problem, never a reason to stop.
//
// It works on any fs.FS that can tell symlinks apart (fs.ReadLinkFS): a
// working tree through OpenDir, or a Git tree at a commit.
package checkout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/located"
)

// MaxFileSize bounds every file read; manifests and policies are far
// smaller, and a bound keeps a huge or endless file from exhausting memory.
const MaxFileSize = 8 << 20

// MaxTotalSize bounds the YAML files Read reads together when the process
// has no memory limit (GOMEMLIMIT): see TotalBound.
const MaxTotalSize = 64 << 20

// parsedFactor is the memory YAML takes once parsed, against its size:
// kyaml's nodes are about forty times the text (15.6 MB of small
// ConfigMaps took 539 MiB of heap in discovery, 646 MB resident).
const parsedFactor = 40

// TotalBound is how much YAML a run may read of a repository, all files
// together: a run parses what it reads, and holds much of it, so the
// bound follows the memory the process may use. Under a memory limit
// (GOMEMLIMIT, which the chart sets from the container's) it is that
// limit over parsedFactor, and never below MaxFileSize: 8 MiB under the
// chart's default 320 MiB. Without one it is MaxTotalSize. Kustomize's
// builds and Helm's renders are held to it too.
func TotalBound() int64 {
	lim := debug.SetMemoryLimit(-1)
	if lim <= 0 || lim == math.MaxInt64 {
		return MaxTotalSize
	}
	return min(MaxTotalSize, max(lim/parsedFactor, MaxFileSize))
}

// maxLinks bounds the symlinks followed to resolve one path, as the
// operating systems do (ELOOP).
const maxLinks = 40

// Sentinel errors of problems and of Select.
var (
	// ErrOutsideRoot: a symlink or path leads outside the checkout.
	ErrOutsideRoot = errors.New("symlink leads outside the checkout")
	// ErrNotRegular: a FIFO, device or socket, which is never read.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: a file larger than the size bound, or a checkout
	// whose files together pass theirs.
	ErrTooLarge = errors.New("file too large")
	// ErrControlName: a name with a control character, which would
	// reach messages, pull requests and terminals: not read.
	ErrControlName = errors.New("a control character in the name: not read")
	// ErrSkipped: a path inside a directory the reader skips.
	ErrSkipped = errors.New("inside a directory that is not read (a dot directory or a Helm chart's templates)")
)

// Files is what Read found.
type Files struct {
	// Files are sorted by Path.
	Files []File
	// Problems are what could not be read, sorted by Path.
	Problems []Problem

	// fsys resolves the paths given to Select.
	fsys fs.FS
}

// File is one YAML file.
type File struct {
	// Path is slash-separated and relative to the root. A file reached
	// through symlinks is named by the path they lead to.
	Path string
	// Links are the symlinks that lead to it, sorted.
	Links []string
	Data  []byte
}

// Problem is a file or directory that was not read. As an error it is the
// located.Error at its path, which errors.As finds like any other located
// problem. (Files.Problems becomes []*located.Error itself once the
// patcher's discovery reads File rather than Path.)
type Problem struct {
	Path string // slash-separated, relative to the root
	Err  error
}

func (p Problem) Error() string { return p.asLocated().Error() }
func (p Problem) Unwrap() error { return p.asLocated() }

func (p Problem) asLocated() *located.Error { return &located.Error{File: p.Path, Err: p.Err} }

// Options tunes Read.
type Options struct {
	// MaxFileSize bounds each file; 0 means MaxFileSize.
	MaxFileSize int64
	// MaxTotalSize bounds all files together; 0 means TotalBound().
	MaxTotalSize int64
}

// Read reads every YAML file of fsys once, by the rules of the package.
// What cannot be read is a Problem. The error is for a cancelled ctx, or
// for YAML files that pass MaxTotalSize together (ErrTooLarge): reading
// only part of a repository could leave out the policy that governs a
// workload, so nothing is read.
func Read(ctx context.Context, fsys fs.FS, opts Options) (*Files, error) {
	r := &reader{fsys: fsys, max: opts.MaxFileSize, total: opts.MaxTotalSize, byPath: map[string]int{}, failed: map[string]bool{}}
	if r.max <= 0 {
		r.max = MaxFileSize
	}
	if r.total <= 0 {
		r.total = TotalBound()
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return r.visit(p, d, err)
	})
	if err != nil {
		return nil, err
	}
	for _, l := range r.links {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.follow(l); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(r.out.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	slices.SortStableFunc(r.out.Problems, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	for i := range r.out.Files {
		slices.Sort(r.out.Files[i].Links)
	}
	r.out.fsys = fsys
	return &r.out, nil
}

type reader struct {
	fsys fs.FS
	max  int64
	// links are the symlinks the walk met, resolved once it is done, so
	// that a link to a file found directly adds a name to it instead of
	// a second read.
	links []string
	// total bounds the bytes of all files, and size counts them.
	total, size int64
	out         Files
	byPath      map[string]int  // index in out.Files
	failed      map[string]bool // paths already reported
}

// visit is the walk's step at p: a directory skipped or entered, a YAML
// file read, a symlink kept for later, anything else a problem. The error
// ends the walk.
func (r *reader) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		// The root or a directory that cannot be listed, or an entry
		// gone since: whatever it holds is not read, and says so.
		r.problem(p, err)
		if d != nil && d.IsDir() && p != "." {
			return fs.SkipDir
		}
		return nil
	}
	if d.IsDir() {
		if p != "." && skipDir(r.fsys, p) {
			return fs.SkipDir
		}
		if hasControl(d.Name()) {
			r.problem(p, ErrControlName)
			return fs.SkipDir
		}
		return nil
	}
	if !isYAML(d.Name()) {
		return nil
	}
	if hasControl(d.Name()) {
		r.problem(p, ErrControlName)
		return nil
	}
	switch t := d.Type(); {
	case t.IsRegular():
		return r.read(p, p)
	case t&fs.ModeSymlink != 0:
		r.links = append(r.links, p)
	default:
		r.problem(p, ErrNotRegular)
	}
	return nil
}

// follow reads the file symlink l leads to.
func (r *reader) follow(l string) error {
	target, fi, err := resolve(r.fsys, l)
	switch {
	case err != nil:
		r.problem(l, err)
	case fi.IsDir():
		// Links to directories are not followed: the walk would
		// otherwise meet the same files twice, or loop.
	case !fi.Mode().IsRegular():
		r.problem(l, ErrNotRegular)
	default:
		return r.read(target, l)
	}
	return nil
}

// read reads name, reached as via (name itself or a symlink to it), unless
// it was read or refused already. The error is for the files passing
// their total bound with this one.
func (r *reader) read(name, via string) error {
	if i, ok := r.byPath[name]; ok {
		if via != name {
			r.out.Files[i].Links = append(r.out.Files[i].Links, via)
		}
		return nil
	}
	if r.failed[name] {
		return nil
	}
	b, err := readFile(r.fsys, name, r.max)
	if err != nil {
		r.failed[name] = true
		r.problem(name, err)
		return nil
	}
	if r.size += int64(len(b)); r.size > r.total {
		return &located.Error{File: name, Err: fmt.Errorf("%w: the checkout's YAML files pass %d MiB together here (a run parses and holds them: %s)",
			ErrTooLarge, r.total>>20, totalHint(r.total))}
	}
	f := File{Path: name, Data: b}
	if via != name {
		f.Links = []string{via}
	}
	r.byPath[name] = len(r.out.Files)
	r.out.Files = append(r.out.Files, f)
	return nil
}

// totalHint says how to raise a total bound: through the memory limit it
// follows, when it does.
func totalHint(total int64) string {
	if total == TotalBound() && total < MaxTotalSize {
		return "the bound is a fortieth of the memory limit, GOMEMLIMIT; raise the job's memory limit to raise it"
	}
	return "the bound keeps the run within memory"
}

func (r *reader) problem(p string, err error) {
	// A path error about the path itself says it twice: keep the cause.
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == p {
		err = pe.Err
	}
	r.out.Problems = append(r.out.Problems, Problem{Path: p, Err: err})
}

// ReadFile reads one file of fsys by the rules of Read: symlinks are
// followed inside fsys only, and the file must be regular and at most
// MaxFileSize bytes. The patcher reads the files it edits with it.
func ReadFile(fsys fs.FS, name string) ([]byte, error) {
	// With no symlink on the way there is nothing to resolve.
	if d, ok := fsys.(*Dir); ok && fs.ValidPath(name) {
		if b, ok, err := readPlain(d.dir, name, MaxFileSize); ok {
			return b, err
		}
	}
	target, fi, err := resolve(fsys, name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	return readFile(fsys, target, MaxFileSize)
}

// readFile reads name, which Lstat found to be a regular file. It is
// checked again on the opened file, since it may have changed in between.
func readFile(fsys fs.FS, name string, max int64) ([]byte, error) {
	if d, ok := fsys.(*Dir); ok && fs.ValidPath(name) {
		if b, ok, err := readPlain(d.dir, name, max); ok {
			return b, err
		}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, max)
}

// readOpen reads the open file f, which must be regular, up to max bytes.
func readOpen(f fs.File, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	if fi.Size() > max {
		return nil, tooLarge(max)
	}
	return readSized(f, fi.Size(), max)
}

// readSized reads r to its end, size bytes by its stat, at most max.
// The size is a hint: the file may grow while it is read, so the bound
// is enforced on what is read too. The buffer is the size and one byte,
// to see the end without growing: a run holds every file it reads, and
// bytes.Buffer's spare 512 bytes took half again the YAML of a
// repository of small files.
func readSized(r io.Reader, size, max int64) ([]byte, error) {
	b := make([]byte, 0, size+1)
	r = io.LimitReader(r, max+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(b)) > max {
		return nil, tooLarge(max)
	}
	return b, nil
}

// tooLarge is the error of a file past max bytes; made only when needed,
// not formatted for every file read.
func tooLarge(max int64) error { return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max) }

// hasControl reports whether a name holds a control character.
func hasControl(name string) bool {
	return strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// isYAML reports whether a file is read: *.yaml and *.yml in any case,
// and Kustomization, the one name kustomize reads as YAML without an
// extension.
func isYAML(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".yaml" || ext == ".yml" || path.Base(name) == "Kustomization"
}

// skipDir reports whether the directory p (not the root) is skipped: a dot
// directory, or a Helm chart's templates.
func skipDir(fsys fs.FS, p string) bool {
	name := path.Base(p)
	if strings.HasPrefix(name, ".") {
		return true
	}
	if name == "templates" {
		fi, err := fs.Lstat(fsys, path.Join(path.Dir(p), "Chart.yaml"))
		return err == nil && fi.Mode().IsRegular()
	}
	return false
}

// resolve returns the path name leads to inside fsys, following every
// symlink on the way as the operating system would, and what is there
// (not following a final symlink, since there is none left). A link that
// climbs above the root or is absolute leads outside: an absolute target
// names the host's files, not the checkout's, and would mean another file
// in a Git tree or another clone.
func resolve(fsys fs.FS, name string) (string, fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return "", nil, &fs.PathError{Op: "resolve", Path: name, Err: fs.ErrInvalid}
	}
	var done []string
	todo := strings.Split(name, "/")
	links := 0
	var fi fs.FileInfo
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", nil, ErrOutsideRoot
			}
			done = done[:len(done)-1]
			fi = nil
			continue
		}
		p := strings.Join(append(done, c), "/")
		var err error
		if fi, err = fs.Lstat(fsys, p); err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !fi.IsDir() {
				return "", nil, &fs.PathError{Op: "resolve", Path: p, Err: errors.New("not a directory")}
			}
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", nil, &fs.PathError{Op: "resolve", Path: name, Err: errors.New("too many levels of symbolic links")}
		}
		t, err := fs.ReadLink(fsys, p)
		if err != nil {
			return "", nil, err
		}
		if t == "" || path.IsAbs(t) || filepath.IsAbs(t) || filepath.VolumeName(t) != "" {
			return "", nil, ErrOutsideRoot
		}
		todo = append(strings.Split(filepath.ToSlash(t), "/"), todo...)
		fi = nil
	}
	target := strings.Join(done, "/")
	if target == "" {
		target = "."
	}
	if fi == nil {
		var err error
		if fi, err = fs.Stat(fsys, target); err != nil {
			return "", nil, err
		}
	}
	return target, fi, nil
}

// Select returns the files and problems at or under paths, which are
// relative to the root (slash- or OS-separated); none means all of them.
// Each path is resolved inside the checkout, following symlinks, so a
// symlink to a directory selects the files of the directory it leads to.
// The error is for a path that leaves the checkout, does not exist or lies
// where Read does not look.
func (s *Files) Select(paths ...string) (*Files, error) {
	if len(paths) == 0 {
		return s, nil
	}
	var targets []string
	for _, p := range paths {
		clean := filepath.Clean(p)
		if filepath.IsAbs(p) || !filepath.IsLocal(clean) && clean != "." {
			return nil, fmt.Errorf("path %q must be relative to the checkout and stay inside it", p)
		}
		target := filepath.ToSlash(clean)
		if s.fsys != nil {
			t, fi, err := resolve(s.fsys, target)
			if errors.Is(err, ErrOutsideRoot) {
				return nil, fmt.Errorf("path %q must be relative to the checkout and stay inside it: %w", p, err)
			}
			if err != nil {
				return nil, fmt.Errorf("path %q: %w", p, err)
			}
			target = t
			if skipped(s.fsys, target, fi.IsDir()) {
				return nil, fmt.Errorf("path %q: %w", p, ErrSkipped)
			}
		}
		targets = append(targets, target)
	}
	under := func(p string) bool {
		for _, t := range targets {
			if t == "." || p == t || strings.HasPrefix(p, t+"/") {
				return true
			}
		}
		return false
	}
	out := &Files{fsys: s.fsys}
	for _, f := range s.Files {
		if under(f.Path) || slices.ContainsFunc(f.Links, under) {
			out.Files = append(out.Files, f)
		}
	}
	for _, p := range s.Problems {
		if under(p.Path) {
			out.Problems = append(out.Problems, p)
		}
	}
	return out, nil
}

// skipped reports whether Read skips p, a path without symlinks: whether
// p, when a directory, or one of the directories it lies in is skipped.
func skipped(fsys fs.FS, p string, isDir bool) bool {
	if p == "." {
		return false
	}
	parts := strings.Split(p, "/")
	if !isDir {
		parts = parts[:len(parts)-1]
	}
	for i := range parts {
		if skipDir(fsys, strings.Join(parts[:i+1], "/")) {
			return true
		}
	}
	return false
}
