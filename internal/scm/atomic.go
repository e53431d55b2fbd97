package scm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The local stand-in's files are written so that a run killed at any
// point leaves each one whole, old or new: the data goes to a hidden
// temporary file beside it, is flushed to disk, and only then takes the
// file's name, and the directory is flushed so that the name survives a
// crash of the machine too.

// writeFile replaces path with data.
func writeFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// createFile writes path with data only when no file has that name: the
// whole file is linked into place, and the link fails when the name is
// taken, so that claiming a number and writing its record is one step. On
// a file system without hard links the name is claimed first and then
// written, flushed before it is read again.
func createFile(path string, data []byte) error {
	if err := claimFile(path, data); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// claimFile is createFile without flushing the directory: for a caller
// that writes another file there at once and flushes it then, so that
// one flush covers both names.
func claimFile(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	if err != nil {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tempPrefix starts the name of every temporary file: hidden, and named
// by no pattern the stand-in reads.
const tempPrefix = ".tmp-"

// writeTemp writes data to a new temporary file beside path, flushed to
// disk, and returns its name.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), tempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncDir flushes a directory's entries to disk. A platform that cannot
// (Windows opens no directory for writing) keeps what its file system
// keeps.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, fs.ErrInvalid) && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}

// staleTemp reports whether e is a temporary file a killed run left: one
// an hour old is no other run's, still being written.
func staleTemp(e fs.DirEntry, now time.Time) bool {
	if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
		return false
	}
	info, err := e.Info()
	return err == nil && now.Sub(info.ModTime()) > time.Hour
}
