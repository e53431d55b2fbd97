package kubeenv

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the child when the test binary dies, so
// that a test killed by its timeout leaves no etcd or API server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
