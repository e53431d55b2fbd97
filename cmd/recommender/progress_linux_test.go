package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the program writes to the terminal
// side (its stderr), the test reads what it drew from the other.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("pseudo-terminal number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return s, m
}

// TestPlanProgressOnTerminal: plan with stderr on a real (pseudo-)terminal
// draws its counter there, and erases it before the logs' lines; stdout
// gets none of it.
func TestPlanProgressOnTerminal(t *testing.T) {
	term, reader := openPTY(t)
	drawn := make(chan string)
	go func() {
		var b bytes.Buffer
		_, err := io.Copy(&b, reader)
		if err != nil && !errors.Is(err, unix.EIO) && !errors.Is(err, os.ErrClosed) {
			b.WriteString("read error: " + err.Error())
		}
		drawn <- b.String()
	}()
	var out bytes.Buffer
	code := Main([]string{"plan", "--repo", "../../examples/quickstart", "--metrics-file", "../../examples/quickstart/metrics.om",
		"--log-level", "info"}, &out, term)
	require.Equal(t, exitOK, code)
	term.Close() // the reader sees EIO once the terminal side is closed
	got := <-drawn
	require.Contains(t, got, "reading the repository")
	require.Contains(t, got, "querying usage 1/")
	require.Contains(t, got, "\x1b[K", "the line is redrawn in place")
	require.Contains(t, got, "plan ready", "the logs are text on a terminal")
	require.NotContains(t, out.String(), "\r")
	// A log line never follows the counter on its line.
	for _, line := range strings.Split(got, "\n") {
		if i := strings.Index(line, "time="); i > 0 {
			require.True(t, strings.HasSuffix(line[:i], "\x1b[K"), "a log line starts on a clean line: %q", line)
		}
	}
}
