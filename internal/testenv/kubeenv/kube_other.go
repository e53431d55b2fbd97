//go:build !linux

package kubeenv

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death signal:
// the cleanups of the test stop the children.
func dieWithParent(*exec.Cmd) {}
