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

// limitSpace has the kernel refuse this process address space past
// space more than it has now: RLIMIT_AS. A reservation counts when it is
// made, so one huge allocation fails at once, and the Go runtime ends the
// process with a fatal error, "out of memory". RLIMIT_DATA does not hold
// against Go: the runtime reserves the heap without access, then maps it
// writable in place (MAP_FIXED), and Linux does not count against the
// limit the pages such a mapping replaces. Under RLIMIT_DATA, 11 of 120
// hostile renders at a load of 4 got past it: 4 ended in a SIGSEGV in
// the collector, whose next small mapping was refused, and 7 grew past
// 256 MiB resident. Under RLIMIT_AS, none of 240.
func limitSpace(space int64) error {
	if raceDetector {
		return nil // the heap watcher and the backstop hold
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var now int64 = -1
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte("VmSize:")); ok {
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
		return errors.New("no VmSize in /proc/self/status")
	}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &cur); err != nil {
		return err
	}
	lim := uint64(now + space + threadStacks())
	if cur.Max < lim {
		lim = cur.Max // lower already: kept
	}
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
}

// threadStacks is the address space left for the stacks of threads the
// runtime may start after the bound is set: none without cgo. With cgo,
// each is a pthread, whose stack is mapped at RLIMIT_STACK's size (8 MiB
// unless set; past 64 MiB or unbounded, taken as 8 MiB). A loaded
// machine has the runtime start threads for blocked system calls.
func threadStacks() int64 {
	if !cgoThreads {
		return 0
	}
	const threads, fallback = 16, 8 << 20
	var st syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &st); err != nil || st.Cur > 64<<20 {
		return threads * fallback
	}
	return threads * int64(st.Cur)
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
