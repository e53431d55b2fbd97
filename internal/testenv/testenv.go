// Package testenv helps tests that drive real external tools (promtool,
// prometheus, git, sshd) find them, and runs real servers for tests: a
// Prometheus server, with a fault-injecting proxy in front of it, for tests
// of the metrics client; a smart-HTTP git server (GitServer, over HTTPS
// with a CA file from NewGitServerTLS; Serve for any handler) and an SSH
// server in front of its bare repositories (SSHServer); an exporter's
// scrape read (ParseText) or made into a recording (OpenMetricsRecording).
// Its sub-packages hold the rest and share its helpers (Missing, FreePort,
// TailBuffer):
// forge the fake GitHub and GitLab APIs over the git server, kubeenv a real
// kube-apiserver and etcd with Flux's controllers and kube-state-metrics.
//
// A developer without a tool gets a skip that says how to install it; CI and
// `make test` set RECOMMENDER_TEST_STRICT, which turns the skip into a
// failure, so that a missing tool can never pass for a green run.
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
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

// Missing skips the test for want of what the test set-up script builds,
// or fails it under StrictEnv.
func Missing(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv(StrictEnv) != "" {
		t.Fatalf("%s is needed and %s is set: %v (run `make test-deps` to build it)", what, StrictEnv, err)
		return
	}
	t.Skipf("%s not found, skipping: %v (run `make test-deps` to build it, once; set %s=1 to fail instead)", what, err, StrictEnv)
}

// BindAttempts is how many free ports are tried: a port found free can be
// taken by another process before the server binds it.
const BindAttempts = 4

// ErrPortTaken means the chosen port went to another process first.
var ErrPortTaken = errors.New("the port was taken before prometheus could bind it")

// ErrExitedCleanly stands for the wait error of a server that exited with
// status 0: before it was ready, that is a failure too.
var ErrExitedCleanly = errors.New("exit status 0")

// FreePort asks the kernel for a free loopback port. The listener is closed
// before the server binds the port, so the caller retries if it is lost.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// TailBuffer keeps the last max bytes written to it: a server's output,
// kept to say why it failed.
type TailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

// NewTailBuffer returns a TailBuffer that keeps the last size bytes.
func NewTailBuffer(size int) *TailBuffer { return &TailBuffer{max: size} }

// Write keeps p, dropping what falls beyond the last max bytes.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Tail returns the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
