package checkout

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is a working tree on disk as an fs.FS. Everything is opened through
// an os.Root, so no path or symlink can lead outside the directory, and
// files are opened without blocking, so a FIFO cannot hang a run.
type Dir struct {
	path string
	root *os.Root
	fsys fs.FS
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
	return &Dir{path: real, root: r, fsys: r.FS()}, nil
}

// Path is the absolute path of the directory, with symlinks resolved.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Open opens name for reading without blocking.
func (d *Dir) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := d.root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadDir lists the directory name, sorted by file name.
func (d *Dir) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(d.fsys, name) }

// ReadLink returns the target of the symlink name, as written.
func (d *Dir) ReadLink(name string) (string, error) { return fs.ReadLink(d.fsys, name) }

// Lstat describes name without following a final symlink.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(d.fsys, name) }
