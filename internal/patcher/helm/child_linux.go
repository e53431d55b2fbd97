package helm

import (
	"bytes"
	"errors"
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

// limitData has the kernel refuse this process private writable memory
// (the Go heap, stacks, the runtime's own) past data more than it has
// now: RLIMIT_DATA, which counts such mappings whether touched or not, so
// that one allocation cannot pass it either. The Go runtime then ends
// the process with a fatal error, "out of memory".
func limitData(data int64) error {
	if raceDetector {
		return nil // the heap watcher and the backstop hold
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var now int64 = -1
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("VmData:")); ok {
			f := bytes.Fields(v)
			if len(f) == 2 && string(f[1]) == "kB" {
				now, err = strconv.ParseInt(string(f[0]), 10, 64)
				if err != nil {
					return err
				}
				now <<= 10
			}
		}
	}
	if now < 0 {
		return errors.New("no VmData in /proc/self/status")
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_DATA, &cur); err != nil {
		return err
	}
	lim := uint64(now + data)
	if cur.Max < lim {
		lim = cur.Max // lower already: kept
	}
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: lim, Max: lim})
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

// maxRSS is the largest resident size an ended child reached.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10 // kilobytes on Linux
	}
	return 0
}
