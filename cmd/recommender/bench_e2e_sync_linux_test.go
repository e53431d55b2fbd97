package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncfs syncs the file system holding dir, as the tool does after
// writing many files.
func syncfs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
