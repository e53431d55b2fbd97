package scm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// The base's working tree is written here, not by go-git's checkout.
// go-git refuses a whole checkout for one name with a control character,
// which git writes, with "directory not found" and no name: every run of
// such a repository failed. Here such a name is written as git writes it,
// and the checkout's reader leaves the file out as a problem naming it.
// The names that are attacks stay refused, naming the path: ".", "..",
// an empty name or one holding a slash or NUL, and .git in any spelling a
// file system folds to it. Everything is written through an os.Root, so
// that no symlink of the tree leads a write outside the directory.

// errBadName is a tree entry's name that is never written.
var errBadName = errors.New("a name git refuses to check out")

// maxLinkTarget bounds a symlink's target, as the file systems do.
const maxLinkTarget = 4096

// writeWorktree writes the tree of commit into dir, which must be empty.
func writeWorktree(s storer.EncodedObjectStorer, commit plumbing.Hash, dir string) error {
	c, err := object.GetCommit(s, commit)
	if err != nil {
		return err
	}
	t, err := object.GetTree(s, c.TreeHash)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return writeTree(s, root, t, "")
}

func writeTree(s storer.EncodedObjectStorer, root *os.Root, t *object.Tree, dir string) error {
	for _, e := range t.Entries {
		p := dir + e.Name
		if !safeName(e.Name) {
			return fmt.Errorf("the base commit's path %q: %w", p, errBadName)
		}
		var err error
		switch e.Mode {
		case filemode.Dir:
			var sub *object.Tree
			if sub, err = object.GetTree(s, e.Hash); err == nil {
				if err = root.Mkdir(p, 0o755); err == nil {
					err = writeTree(s, root, sub, p+"/")
				}
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			perm := os.FileMode(0o644)
			if e.Mode == filemode.Executable {
				perm = 0o755
			}
			err = writeBlob(s, root, e.Hash, p, perm)
		case filemode.Symlink:
			err = writeLink(s, root, e.Hash, p)
		case filemode.Submodule:
			// As git leaves a submodule it does not clone: its directory.
			err = root.Mkdir(p, 0o755)
		default:
			err = fmt.Errorf("mode %v", e.Mode)
		}
		if err != nil {
			return fmt.Errorf("check out %q: %w", p, err)
		}
	}
	return nil
}

func writeBlob(s storer.EncodedObjectStorer, root *os.Root, h plumbing.Hash, p string, perm os.FileMode) error {
	b, err := object.GetBlob(s, h)
	if err != nil {
		return err
	}
	r, err := b.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	// O_EXCL: a name a tree holds twice is no tree git wrote.
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeLink(s storer.EncodedObjectStorer, root *os.Root, h plumbing.Hash, p string) error {
	b, err := object.GetBlob(s, h)
	if err != nil {
		return err
	}
	if b.Size > maxLinkTarget {
		return fmt.Errorf("a symlink's target longer than %d bytes", maxLinkTarget)
	}
	r, err := b.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	target, err := io.ReadAll(io.LimitReader(r, maxLinkTarget))
	if err != nil {
		return err
	}
	return root.Symlink(string(target), p)
}

// safeName reports whether a tree entry's name may be written: not empty,
// ".", "..", nor holding a slash or NUL, and no spelling of .git that
// Linux, macOS (case and ignorable code points folded) or Windows
// (trailing dots and spaces, the 8.3 name, streams) would take for it.
func safeName(n string) bool {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\x00") {
		return false
	}
	folded := strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
			return -1
		}
		return r
	}, strings.ToLower(n))
	if i := strings.IndexByte(folded, ':'); i >= 0 {
		folded = folded[:i]
	}
	folded = strings.TrimRight(folded, ". ")
	return folded != ".git" && folded != "git~1"
}
