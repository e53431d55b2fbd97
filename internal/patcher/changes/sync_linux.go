package changes

import (
	"os"

	"golang.org/x/sys/unix"
)

// haveSyncFS: syncFS syncs the whole file system.
const haveSyncFS = true

// syncFS flushes the checkout's whole file system with one syncfs: for
// many files, one call instead of one fsync each.
func syncFS(rt *os.Root, _ []string) error {
	d, err := rt.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
