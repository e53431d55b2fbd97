package scm

import (
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// objectsDir is the objects directory of a repository on disk, "" for
// any other storage.
func objectsDir(s storer.EncodedObjectStorer) string {
	fss, ok := s.(*filesystem.Storage)
	if !ok {
		return ""
	}
	root := fss.Filesystem().Root()
	if root == "" {
		return ""
	}
	return filepath.Join(root, "objects")
}

// loosePath is where git keeps h as a loose object under objects.
func loosePath(objects string, h plumbing.Hash) string {
	s := h.String()
	return filepath.Join(objects, s[:2], s[2:])
}

// linkObject puts the object file from at to. An object already there is
// the same object: it is left as it is.
func linkObject(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	err := os.Link(from, to)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	// Not linkable (another file system, or one without links): a copy.
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return putObjectFile(to, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// putObjectFile writes a loose object file at to through write: beside
// it first, then read-only and renamed into place, so that a reader never
// sees part of an object.
func putObjectFile(to string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(to), "tmp_obj_")
	if err != nil {
		return err
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), to)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// store writes obj into the clone and returns its hash. In a repository
// on disk it is a loose object deflated at zlib's best speed, as git
// writes loose objects by default (core.loosecompression): go-git's own
// writer deflates at the default level, three times the CPU for the trees
// a commit rewrites, which are mostly hashes that do not compress.
func (r *Repo) store(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	dir := objectsDir(r.repo.Storer)
	if dir == "" {
		return r.repo.Storer.SetEncodedObject(obj)
	}
	h := obj.Hash()
	to := loosePath(dir, h)
	if _, err := os.Lstat(to); err == nil {
		return h, nil
	}
	rd, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer rd.Close()
	err = putObjectFile(to, func(w io.Writer) error {
		// A compressor is a few hundred kilobytes of tables: one per
		// object would be most of what a commit allocates.
		zw, _ := r.deflaters.Get().(*zlib.Writer)
		if zw == nil {
			var err error
			if zw, err = zlib.NewWriterLevel(w, zlib.BestSpeed); err != nil {
				return err
			}
		} else {
			zw.Reset(w)
		}
		defer r.deflaters.Put(zw)
		if _, err := fmt.Fprintf(zw, "%s %d\x00", obj.Type(), obj.Size()); err != nil {
			return err
		}
		if _, err := io.Copy(zw, rd); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}
