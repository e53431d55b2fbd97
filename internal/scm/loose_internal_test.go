//go:build linux

package scm

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLinkObject(t *testing.T) {
	src := filepath.Join(t.TempDir(), "ab", "cdef")
	require.NoError(t, os.MkdirAll(filepath.Dir(src), 0o755))
	require.NoError(t, os.WriteFile(src, []byte("object"), 0o444))

	t.Run("linked", func(t *testing.T) {
		to := filepath.Join(t.TempDir(), "objects", "ab", "cdef")
		require.NoError(t, linkObject(src, to))
		a, err := os.Stat(src)
		require.NoError(t, err)
		b, err := os.Stat(to)
		require.NoError(t, err)
		require.True(t, os.SameFile(a, b))
		require.NoError(t, linkObject(src, to), "an object already there is left as it is")
	})
	t.Run("copied across file systems", func(t *testing.T) {
		// /dev/shm is a tmpfs where there is one: a link to it fails
		// with EXDEV.
		shm, err := os.MkdirTemp("/dev/shm", "loose")
		if err != nil {
			t.Skip("no /dev/shm")
		}
		t.Cleanup(func() { os.RemoveAll(shm) })
		var a, b syscall.Stat_t
		require.NoError(t, syscall.Stat(src, &a))
		require.NoError(t, syscall.Stat(shm, &b))
		if a.Dev == b.Dev {
			t.Skip("/dev/shm is on the same file system")
		}
		to := filepath.Join(shm, "objects", "ab", "cdef")
		require.NoError(t, linkObject(src, to))
		got, err := os.ReadFile(to)
		require.NoError(t, err)
		require.Equal(t, "object", string(got))
		fi, err := os.Stat(to)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o444), fi.Mode().Perm())
		es, err := os.ReadDir(filepath.Dir(to))
		require.NoError(t, err)
		require.Len(t, es, 1, "no temporary file left")
	})
}
