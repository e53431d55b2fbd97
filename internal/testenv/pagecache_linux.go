package testenv

import (
	"os"

	"golang.org/x/sys/unix"
)

// evict writes the file name to disk and drops it from the page cache,
// so that the next process to map it reads it in as any program is read.
func evict(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	// Dirty pages are not dropped: write them first.
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
