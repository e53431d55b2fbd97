package checkout

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// MaxTreeSize and MaxTreeFiles bound what ReadTree reads: a Helm chart is
// a few hundred kilobytes, and a bound keeps a directory named by a
// repository's manifests from exhausting memory.
const (
	MaxTreeSize  = 32 << 20
	MaxTreeFiles = 4096
)

// ErrLinkedDir: a symlink inside a tree leads to a directory. It is not
// followed (a link may loop), and skipping it would make the tree, a
// chart, silently miss files: the read fails, naming the link.
var ErrLinkedDir = errors.New("a symlink to a directory, which is not followed")

// ErrNoTree: the Files were not read from a file system, so a directory's
// other files cannot be read.
var ErrNoTree = errors.New("the checkout's files were not read from a directory")

// ReadTree reads every regular file below dir of the checkout Read read,
// whatever its extension: a Helm chart's templates, helpers and NOTES,
// which Read skips. See the package function ReadTree.
func (s *Files) ReadTree(dir string) (map[string][]byte, error) {
	if s.fsys == nil {
		return nil, ErrNoTree
	}
	return ReadTree(s.fsys, dir)
}

// ReadFile reads one more file of the checkout, by the rules of Read (a
// regular file inside the root, at most MaxFileSize): a file a manifest
// names that is not YAML, such as a kustomize generator's source.
func (s *Files) ReadFile(name string) ([]byte, error) {
	if s.fsys == nil {
		return nil, ErrNoTree
	}
	return ReadFile(s.fsys, name)
}

// ReadTree reads every regular file below dir of fsys, by the rules of
// Read for what is safe to read: dot directories are skipped, symlinks
// are followed inside fsys only (to files: a link to a directory fails
// the read with ErrLinkedDir), only regular files are read, each at most MaxFileSize, all
// together at most MaxTreeSize and MaxTreeFiles. Paths in the result are
// slash-separated and relative to dir. Unlike Read, it fails on the first
// file it cannot read: a chart with a missing part does not render.
func ReadTree(fsys fs.FS, dir string) (map[string][]byte, error) {
	target, fi, err := resolve(fsys, dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "read tree", Path: dir, Err: errors.New("not a directory")}
	}
	out := map[string][]byte{}
	total := 0
	err = fs.WalkDir(fsys, target, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != target && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		rel := strings.TrimPrefix(p, target+"/")
		if target == "." {
			rel = p
		}
		if len(out) >= MaxTreeFiles {
			return fmt.Errorf("%w: more than %d files below %s", ErrTooLarge, MaxTreeFiles, dir)
		}
		name := p
		if d.Type()&fs.ModeSymlink != 0 {
			t, fi, err := resolve(fsys, p)
			if err != nil {
				return &fs.PathError{Op: "read", Path: p, Err: err}
			}
			if fi.IsDir() {
				return &fs.PathError{Op: "read", Path: p, Err: ErrLinkedDir}
			}
			name = t
		}
		b, err := readFile(fsys, name, MaxFileSize)
		if err != nil {
			return &fs.PathError{Op: "read", Path: p, Err: err}
		}
		if total += len(b); total > MaxTreeSize {
			return fmt.Errorf("%w: more than %d bytes below %s", ErrTooLarge, MaxTreeSize, dir)
		}
		out[path.Clean(rel)] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
