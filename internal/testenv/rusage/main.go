// Command rusage runs a command and reports what it cost: CPU time of every
// thread, user and system, and its peak resident memory. The end-to-end
// benchmarks start their children through it.
//
// A child started by a large process would otherwise report that process's
// peak as its own: os/exec starts children with CLONE_VM, and at exec Linux
// keeps the old address space's high-water mark in the child's ru_maxrss.
// Started from this small process, the child's peak is its own, give or
// take this process's few MiB.
//
// Usage: rusage PROGRAM [ARG...]. The command's standard streams are this
// process's; the cost is written to file descriptor 3 as
// "<cpu nanoseconds> <peak RSS in KiB>", and the exit code is the command's.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: rusage PROGRAM [ARG...]")
		return 2
	}
	report := os.NewFile(3, "report")
	if report == nil {
		fmt.Fprintln(os.Stderr, "rusage: file descriptor 3, for the report, is not open")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
		return 2
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "rusage: no resource usage")
		return 2
	}
	cpu := ru.Utime.Nano() + ru.Stime.Nano()
	if _, err := fmt.Fprintf(report, "%d %d\n", cpu, ru.Maxrss); err != nil {
		fmt.Fprintf(os.Stderr, "rusage: %v\n", err)
		return 2
	}
	return cmd.ProcessState.ExitCode()
}
