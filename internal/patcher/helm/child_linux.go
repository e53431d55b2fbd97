package helm

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// dieWithParent has the kernel kill the render child when the tool dies.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// watchRSS reads the child's resident size every 10ms until stop, and
// past limit reports it on over and kills the child.
func watchRSS(pid int, limit int64, stop <-chan struct{}, over chan<- int64, kill func()) {
	path := "/proc/" + strconv.Itoa(pid) + "/statm"
	page := int64(os.Getpagesize())
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		fields := bytes.Fields(b)
		if len(fields) < 2 {
			continue
		}
		pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
		if err == nil && pages*page > limit {
			over <- pages * page
			kill()
			return
		}
	}
}
