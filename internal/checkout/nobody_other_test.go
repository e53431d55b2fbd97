//go:build !linux

package checkout_test

import "testing"

// asNobody is Linux only: elsewhere, root's test reads nothing as root.
func asNobody(t *testing.T) {
	t.Helper()
	t.Skip("running as another user is done on Linux only")
}
