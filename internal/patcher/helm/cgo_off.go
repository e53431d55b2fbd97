//go:build !cgo

package helm

// cgoThreads: without cgo, a thread's stack comes from the Go heap.
const cgoThreads = false
