//go:build !linux

package workload

import "os"

// syncFS is fsyncEach where the platform has no syncfs.
func syncFS(rt *os.Root, tmps []string) error { return fsyncEach(rt, tmps) }
