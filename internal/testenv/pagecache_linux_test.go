package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestEvict: a file just written is resident; evicted, none of it is, so
// the next process to map it reads it in.
func TestEvict(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &fs))
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs is the page cache: nothing to drop")
	}
	name := filepath.Join(dir, "bin")
	require.NoError(t, os.WriteFile(name, make([]byte, 4<<20), 0o755))
	resident := func() int {
		f, err := os.Open(name)
		require.NoError(t, err)
		defer f.Close()
		m, err := unix.Mmap(int(f.Fd()), 0, 4<<20, unix.PROT_READ, unix.MAP_SHARED)
		require.NoError(t, err)
		defer unix.Munmap(m)
		vec := make([]byte, (4<<20)/os.Getpagesize())
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatalf("mincore: %v", errno)
		}
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return n
	}
	require.Positive(t, resident(), "written, it is in the page cache")
	require.NoError(t, evict(name))
	require.Zero(t, resident())
}
