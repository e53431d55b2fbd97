//go:build !linux

package changes

import "os"

// haveSyncFS: syncFS syncs only the files it is given.
const haveSyncFS = false

// syncFS is fsyncEach where the platform has no syncfs.
func syncFS(rt *os.Root, tmps []string) error { return fsyncEach(rt, tmps) }
