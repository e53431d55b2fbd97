//go:build !linux

package helm

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a child's life
// to its parent's: the child ends when its pipes close.
func dieWithParent(*exec.Cmd) {}

// watchRSS waits for stop: only Linux tells a process's resident size
// without cgo; the heap bound and the time limit still hold.
func watchRSS(_ int, _ int64, stop <-chan struct{}, _ chan<- int64, _ func()) {
	<-stop
}
