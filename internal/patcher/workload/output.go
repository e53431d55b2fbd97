package workload

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
	"strconv"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/pmezard/go-difflib/difflib"
)

// Diff renders the change as a unified diff with a/Path and b/Path headers
// and 3 lines of context. Line endings are kept as they are (a CRLF file
// shows CRLF lines), and a last line without a line break is followed by
// git's "\ No newline at end of file".
func (f File) Diff() string {
	from := diffName("a/" + f.Path)
	if f.Created {
		from = "/dev/null"
	}
	d := difflib.UnifiedDiff{
		A:        diffLines(f.Old),
		B:        diffLines(f.New),
		FromFile: from,
		ToFile:   diffName("b/" + f.Path),
		Context:  3,
	}
	s, err := difflib.GetUnifiedDiffString(d)
	if err != nil {
		return fmt.Sprintf("diff %q: %v\n", f.Path, err)
	}
	return s
}

// diffName writes a file name for a diff header the way git does with
// core.quotePath: quoted with escapes when it holds a control or other
// unprintable character, a quote, a backslash or a space. A line break
// in a raw name would end the header and start a forged line of the
// diff; quoted, the name stays one line and reads back exactly.
func diffName(name string) string {
	q := strconv.Quote(name)
	if q[1:len(q)-1] != name || strings.ContainsRune(name, ' ') {
		return q
	}
	return name
}

// diffLines splits b after each LF, keeping the line endings. A last line
// without one gets git's marker, so that it compares unequal to the same
// line with a line break.
func diffLines(b []byte) []string {
	var lines []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, string(b)+"\n\\ No newline at end of file\n")
			break
		}
		lines = append(lines, string(b[:i+1]))
		b = b[i+1:]
	}
	return lines
}

// Write writes every changed file under root, as WriteFile does. A file
// that cannot be written does not stop the others: the error joins one
// error per file that was not written.
func (r *Result) Write(root string) error {
	var errs []error
	for _, f := range r.Files {
		errs = append(errs, WriteFile(root, f))
	}
	return errors.Join(errs...)
}

// WriteFile writes f.New over f.Path under root, unless the file on disk
// is no longer f.Old: then it is left as it is and the error wraps
// ErrChangedOnDisk. The new bytes go to a temporary file in the same
// directory, with the file's mode, which is then renamed over the
// original, so a reader sees the old file or the new one, never half of
// it. (What changes between the comparison and the rename, a few system
// calls apart, is lost: the check is for an editor or a git checkout
// that ran since the plan was made, not for a writer racing it.)
func WriteFile(root string, f File) error {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("open checkout: %w", err)
	}
	defer rt.Close()
	if err := writeFile(rt, f); err != nil {
		return fmt.Errorf("write %s: %w", f.Path, err)
	}
	return nil
}

// CheckFile reports whether WriteFile would write f: the file on disk is
// still the one the plan read (or, for a new file, still absent). Writing
// a plan checks every file first, so that one changed file leaves the
// whole plan unwritten rather than half of an edit on disk.
func CheckFile(root string, f File) error {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("open checkout: %w", err)
	}
	defer rt.Close()
	if _, err := check(rt, f); err != nil {
		return fmt.Errorf("write %s: %w", f.Path, err)
	}
	return nil
}

// check compares the file on disk with what f was made from, and returns
// the mode a replacement gets.
func check(rt *os.Root, f File) (os.FileMode, error) {
	name := filepath.FromSlash(f.Path)
	if f.Created {
		if _, err := rt.Lstat(name); err == nil {
			return 0, fmt.Errorf("%w: it exists now", ErrChangedOnDisk)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		return 0o644, nil
	}
	fi, err := rt.Lstat(name)
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
	cur, err := rt.ReadFile(name)
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(cur, f.Old) {
		return 0, ErrChangedOnDisk
	}
	return fi.Mode().Perm(), nil
}

func writeFile(rt *os.Root, f File) error {
	name := filepath.FromSlash(f.Path)
	mode, err := check(rt, f)
	if err != nil {
		return err
	}
	// New bytes go to a temporary file renamed into place, new files too:
	// a reader, or a run killed half-way, sees the old file or the new
	// one, never part of it.
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	dir, base := path.Split(f.Path)
	tmp := filepath.FromSlash(dir + "." + strings.TrimPrefix(base, ".") + "." + hex.EncodeToString(rnd[:]) + ".tmp")
	w, err := rt.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = w.Write(f.New)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rt.Chmod(tmp, mode)
	}
	if err == nil && f.Created {
		// A new name: Link fails if someone created it meanwhile, where
		// a rename would replace their file.
		if err = rt.Link(tmp, name); err == nil {
			_ = rt.Remove(tmp)
		} else if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%w: it exists now", ErrChangedOnDisk)
		}
	} else if err == nil {
		err = rt.Rename(tmp, name)
	}
	if err != nil {
		_ = rt.Remove(tmp)
		return err
	}
	return nil
}
