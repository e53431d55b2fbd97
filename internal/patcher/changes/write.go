package changes

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// WriteFile writes f.New over f.Path under root, unless the file on disk
// is no longer f.Old: then it is left as it is and the error wraps
// ErrChangedOnDisk. See WriteFiles.
func WriteFile(root string, f File) error {
	return WriteFiles(root, []File{f})[0]
}

// WriteFiles writes each file's new bytes over its path under root, unless
// the file on disk is no longer the one it was made from: then that file is
// left as it is and its error wraps ErrChangedOnDisk. errs[i] is nil when
// files[i] was written.
//
// Each file's bytes go to a temporary file beside it, with its mode, which
// is then renamed over it: a reader, or a run killed half-way, sees the old
// file or the new one, never part of it. For many files the work is done
// in three passes, each on GOMAXPROCS goroutines: every temporary file
// written, their bytes made durable (past a few files, with one sync of the
// file system rather than one fsync per file), then every rename, made
// durable after by syncing each directory once (past a few directories,
// by one more sync of the file system). (What changes between the comparison and the rename, a few
// system calls apart, is lost: the check is for an editor or a git
// checkout that ran since the plan was made, not for a writer racing it.)
func WriteFiles(root string, files []File) []error {
	errs, _ := writeFiles(root, files, false)
	return errs
}

// WriteAll is WriteFiles, all or nothing: when any file has changed on
// disk or its temporary file cannot be written, every temporary file is
// removed, no file is replaced and written is false; errs[i] is then what
// kept files[i] from being written, nil for a file that could have been.
// It checks each file as it writes its temporary file, so that each is
// read once.
func WriteAll(root string, files []File) (errs []error, written bool) {
	return writeFiles(root, files, true)
}

// writeFiles is WriteFiles, and WriteAll when all is set.
func writeFiles(root string, files []File, all bool) ([]error, bool) {
	errs := make([]error, len(files))
	rt, err := os.OpenRoot(root)
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("open checkout: %w", err)
		}
		return errs, false
	}
	defer rt.Close()
	tmps := make([]string, len(files))
	parallel(len(files), func(i int) {
		tmps[i], errs[i] = writeTemp(rt, files[i])
	})
	if all && slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		for i, tmp := range tmps {
			if tmp != "" {
				_ = rt.Remove(tmp)
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("write %s: %w", files[i].Path, errs[i])
			}
		}
		return errs, false
	}
	if err := syncTemps(rt, tmps); err != nil {
		for i, tmp := range tmps {
			if tmp != "" {
				_ = rt.Remove(tmp)
				errs[i] = err
			}
		}
	}
	parallel(len(files), func(i int) {
		if errs[i] == nil {
			errs[i] = place(rt, files[i], tmps[i])
		}
	})
	syncDirs(rt, files, errs)
	for i, f := range files {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("write %s: %w", f.Path, errs[i])
		}
	}
	return errs, true
}

// syncDirs makes the renames durable, which they are once their
// directories are: each directory synced for a few, past that one sync
// of the file system (on Linux; each directory elsewhere). Best effort,
// as the files are in place either way.
func syncDirs(rt *os.Root, files []File, errs []error) {
	dirs := map[string]bool{}
	for i, f := range files {
		if errs[i] == nil {
			dirs[path.Dir(f.Path)] = true
		}
	}
	if haveSyncFS && len(dirs) > fewFiles && syncFS(rt, nil) == nil {
		return
	}
	for dir := range dirs {
		if d, err := rt.Open(filepath.FromSlash(dir)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
}

// syncTemps makes the temporary files' bytes durable before any rename,
// so that a crash never leaves a renamed file without its content: each
// file's own fsync for a few, one sync of the file system for many.
func syncTemps(rt *os.Root, tmps []string) error {
	n := 0
	for _, tmp := range tmps {
		if tmp != "" {
			n++
		}
	}
	if n <= fewFiles {
		return fsyncEach(rt, tmps)
	}
	return syncFS(rt, tmps)
}

// fewFiles is the most files synced one by one.
const fewFiles = 8

func fsyncEach(rt *os.Root, tmps []string) error {
	for _, tmp := range tmps {
		if tmp == "" {
			continue
		}
		f, err := rt.OpenFile(tmp, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parallel runs do(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, do func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(n, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// openDir opens the directory that holds p, a slash path under rt, so that
// every step on the file after is one system call on its name, not one
// more walk of the path through rt for each. done releases it.
func openDir(rt *os.Root, p string) (d *os.Root, name string, done func(), err error) {
	dir, name := path.Split(p)
	if dir == "" {
		return rt, name, func() {}, nil
	}
	if d, err = rt.OpenRoot(filepath.FromSlash(dir)); err != nil {
		return nil, "", nil, err
	}
	return d, name, func() { d.Close() }, nil
}

// checkIn compares the file name in its directory d with what f was
// made from, and returns the mode a replacement gets.
func checkIn(d *os.Root, name string, f File) (os.FileMode, error) {
	if f.Created {
		if _, err := d.Lstat(name); err == nil {
			return 0, fmt.Errorf("%w: it exists now", ErrChangedOnDisk)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		return 0o644, nil
	}
	fi, err := d.Lstat(name)
	if err != nil {
		return 0, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// A rename would replace the link with a file, cutting it from
		// the file it shares its content with.
		return 0, fmt.Errorf("%w: a symbolic link; not replaced", splice.ErrUnsupported)
	}
	if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: not a regular file any more", ErrChangedOnDisk)
	}
	cur, err := d.ReadFile(name)
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(cur, f.Old) {
		return 0, ErrChangedOnDisk
	}
	return fi.Mode().Perm(), nil
}

// writeTemp checks f against the disk and writes its new bytes, with the
// mode the file has, to a temporary file beside it, whose path it returns.
func writeTemp(rt *os.Root, f File) (string, error) {
	d, name, done, err := openDir(rt, f.Path)
	if err != nil {
		return "", err
	}
	defer done()
	mode, err := checkIn(d, name, f)
	if err != nil {
		return "", err
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	tmp := "." + strings.TrimPrefix(name, ".") + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	w, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return "", err
	}
	_, err = w.Write(f.New)
	if err == nil {
		// The umask may have taken bits of mode away.
		err = w.Chmod(mode)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = d.Remove(tmp)
		return "", err
	}
	dir, _ := path.Split(f.Path)
	return filepath.FromSlash(dir + tmp), nil
}

// place puts the temporary file tmp where f goes: renamed over the file it
// replaces, or linked to a new name, which fails if someone created it
// meanwhile (a rename would replace their file).
func place(rt *os.Root, f File, tmp string) error {
	d, name, done, err := openDir(rt, f.Path)
	if err != nil {
		_ = rt.Remove(tmp)
		return err
	}
	defer done()
	tmp = filepath.Base(tmp)
	if f.Created {
		if err = d.Link(tmp, name); err == nil {
			_ = d.Remove(tmp)
		} else if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%w: it exists now", ErrChangedOnDisk)
		}
	} else {
		err = d.Rename(tmp, name)
	}
	if err != nil {
		_ = d.Remove(tmp)
	}
	return err
}
