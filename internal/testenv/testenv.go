// Package testenv helps tests that drive real external tools (promtool,
// prometheus, git) find them, and runs a real Prometheus server, with a
// fault-injecting proxy in front of it, for tests of the metrics client.
//
// A developer without a tool gets a skip that says how to install it; CI and
// `make test` set RECOMMENDER_TEST_STRICT, which turns the skip into a
// failure, so that a missing tool can never pass for a green run.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// StrictEnv names the environment variable that, when non-empty, makes a
// missing tool fail the test instead of skipping it.
const StrictEnv = "RECOMMENDER_TEST_STRICT"

// LookPath returns the path of the executable name, searched for in PATH.
// When it is missing, the test is skipped, or fails if StrictEnv is set.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv(StrictEnv) != "" {
		t.Fatalf("%s is needed and %s is set: %v (run `make test-deps` to install the test tools)", name, StrictEnv, err)
		return ""
	}
	t.Skipf("%s not found, skipping: %v (run `make test-deps` to install the test tools; set %s=1 to fail instead)", name, err, StrictEnv)
	return ""
}
