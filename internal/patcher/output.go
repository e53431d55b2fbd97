package patcher

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff renders the change as a unified diff with a/Path and b/Path headers
// and 3 lines of context. Line endings are kept as they are (a CRLF file
// shows CRLF lines), and a last line without a line break is followed by
// git's "\ No newline at end of file".
func (f File) Diff() string {
	d := difflib.UnifiedDiff{
		A:        diffLines(f.Old),
		B:        diffLines(f.New),
		FromFile: diffName("a/" + f.Path),
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

// Write writes every changed file under root: each to a temporary file in
// the same directory, then renamed over the original, keeping its mode.
// A file whose content is no longer Old is not overwritten.
func (r *Result) Write(root string) error {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("open checkout: %w", err)
	}
	defer rt.Close()
	for _, f := range r.Files {
		if err := writeFile(rt, f); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	return nil
}

func writeFile(rt *os.Root, f File) error {
	name := filepath.FromSlash(f.Path)
	fi, err := rt.Stat(name)
	if err != nil {
		return err
	}
	cur, err := rt.ReadFile(name)
	if err != nil {
		return err
	}
	if !bytes.Equal(cur, f.Old) {
		return fmt.Errorf("the file changed since it was read")
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	dir, base := path.Split(f.Path)
	tmp := filepath.FromSlash(dir + "." + strings.TrimPrefix(base, ".") + "." + hex.EncodeToString(rnd[:]) + ".tmp")
	w, err := rt.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
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
		err = rt.Chmod(tmp, fi.Mode().Perm())
	}
	if err == nil {
		err = rt.Rename(tmp, name)
	}
	if err != nil {
		_ = rt.Remove(tmp)
		return err
	}
	return nil
}
