//go:build !linux

package helm

import (
	"os"
	"os/exec"
)

// dieWithParent does nothing where the kernel cannot tie a child's life
// to its parent's: the child ends when its pipes close.
func dieWithParent(*exec.Cmd) {}

// limitSpace does nothing where the kernel has no bound on a process's
// address space that Go's mappings respect: the heap watcher and the time
// limit still hold.
func limitSpace(int64) error { return nil }

// watchRSS waits for stop: only Linux tells a process's resident size
// without cgo; the heap bound and the time limit still hold.
func watchRSS(_ int, _ int64, stop <-chan struct{}, _ chan<- int64, _ func()) {
	<-stop
}

// maxRSS is 0: the unit of Maxrss differs between the other systems.
func maxRSS(*os.ProcessState) int64 { return 0 }
