package helm

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

const threadsChildEnv = "GPU_RIGHTSIZING_RECOMMENDER_THREADS_CHILD"

// TestBoundLeavesRoomForThreads starts a process, with a render child's
// environment, that sets the child's bound and then starts twenty
// threads, as a loaded machine has a child's runtime do for blocked
// system calls. In a cgo build, each thread's stack (8 MiB) and, unless
// the environment says otherwise, its own malloc arena (64 MiB) take
// address space the bound counts: without room for them, the runtime
// ends the process at the fifth thread.
func TestBoundLeavesRoomForThreads(t *testing.T) {
	if os.Getenv(threadsChildEnv) == "1" {
		threadsChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoundLeavesRoomForThreads$")
	cmd.Env = []string{threadsChildEnv + "=1", mallocArenas}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the bounded process failed (cgo: %v): %v\n%s", cgoThreads, err, firstLines(out.String(), 5))
	}
}

// threadsChild is TestBoundLeavesRoomForThreads's process.
func threadsChild() {
	if err := limitSpace(RenderMemory); err != nil {
		os.Exit(exitLimit)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	for range 20 {
		go func() {
			runtime.LockOSThread() // this goroutine's thread is its own until it ends
			started <- struct{}{}
			<-release
		}()
	}
	for range 20 {
		<-started
	}
	sink := make([]byte, 16<<20)
	sink[len(sink)-1] = 1
	close(release)
}

// firstLines is at most n lines of s.
func firstLines(s string, n int) string {
	var b bytes.Buffer
	for l := range bytes.Lines([]byte(s)) {
		if n == 0 {
			break
		}
		b.Write(l)
		n--
	}
	return b.String()
}
