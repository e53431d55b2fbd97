package checkout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is a working tree on disk as an fs.FS. Everything is opened through
// an os.Root, so no path or symlink can lead outside the directory; on
// Linux a name with no symlink on the way is opened in one call beneath
// it (openPlain). Files are opened without blocking, so a FIFO cannot
// hang a run.
type Dir struct {
	path string
	root *os.Root
	fsys fs.FS
	// dir is the directory open beside the Root, for openPlain.
	dir *os.File
}

var (
	_ fs.ReadDirFS  = (*Dir)(nil)
	_ fs.ReadLinkFS = (*Dir)(nil)
)

// OpenDir opens the working tree at name. A name that is itself a symlink
// is resolved once, here: the rules of Read then apply to what is inside
// the directory it leads to.
func OpenDir(name string) (*Dir, error) {
	real, err := filepath.EvalSymlinks(name)
	if err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
	}
	dir, err := os.Open(real)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("open checkout: %w", err)
	}
	return &Dir{path: real, root: r, fsys: r.FS(), dir: dir}, nil
}

// Path is the absolute path of the directory, with symlinks resolved.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error {
	err := d.root.Close()
	if d.dir != nil {
		err = errors.Join(err, d.dir.Close())
	}
	return err
}

// Open opens name for reading without blocking.
func (d *Dir) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if f, ok := openPlain(d.dir, name); ok {
		return f, nil
	}
	f, err := d.root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadDir lists the directory name, sorted by file name.
func (d *Dir) ReadDir(name string) ([]fs.DirEntry, error) {
	if fs.ValidPath(name) {
		if f, ok := openPlain(d.dir, name); ok {
			es, err := f.ReadDir(-1)
			f.Close()
			if err == nil {
				slices.SortFunc(es, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
				return es, nil
			}
		}
	}
	return fs.ReadDir(d.fsys, name)
}

// ReadLink returns the target of the symlink name, as written.
func (d *Dir) ReadLink(name string) (string, error) { return fs.ReadLink(d.fsys, name) }

// Lstat describes name without following a final symlink.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(d.fsys, name) }
