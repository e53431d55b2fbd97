package testenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Pushgateway is a real Prometheus Pushgateway (Debian's
// prometheus-pushgateway) started for one test: batch jobs push their
// metrics to it, and a Prometheus scrapes them from it.
type Pushgateway struct {
	// URL is its base URL, http://127.0.0.1:PORT, without a trailing
	// slash.
	URL string
	// Addr is its host:port, for a Prometheus to scrape.
	Addr string
	out  *TailBuffer
}

// Log returns the end of what the Pushgateway printed.
func (p *Pushgateway) Log() string { return p.out.String() }

// StartPushgateway starts a Pushgateway on a free loopback port, with
// nothing persisted (Debian's default file is shared), and stops it when the test ends. It returns once the
// Pushgateway answers /-/ready. Without prometheus-pushgateway on PATH
// the test is skipped, or fails under StrictEnv; the Debian package's own
// service plays no part.
func StartPushgateway(t testing.TB) *Pushgateway {
	t.Helper()
	bin := LookPath(t, "prometheus-pushgateway")
	if bin == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
			return nil
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		out := NewTailBuffer(8 << 10)
		// Debian's build persists to /var/lib/prometheus by default: an
		// empty file name keeps everything in memory, so that no test
		// sees another's metrics.
		cmd := exec.Command(bin, "--web.listen-address="+addr, "--persistence.file=")
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
			return nil
		}
		done := make(chan struct{})
		var waitErr error
		go func() {
			waitErr = cmd.Wait()
			close(done)
		}()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		p := &Pushgateway{URL: "http://" + addr, Addr: addr, out: out}
		err = p.waitReady(ctx, done, func() error { return waitErr })
		if err == nil {
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("pushgateway output, last lines:\n%s", out.String())
				}
			})
			return p
		}
		stop()
		if !errors.Is(err, ErrPortTaken) || attempt == BindAttempts {
			t.Fatalf("starting the pushgateway: %v\noutput, last lines:\n%s", err, out.String())
			return nil
		}
	}
}

// waitReady polls /-/ready until it answers 200, the process exits or ctx
// ends.
func (p *Pushgateway) waitReady(ctx context.Context, done <-chan struct{}, waitErr func() error) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := getCtx(ctx, client, p.URL+"/-/ready"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// The answer may come from another process that won the
				// port: ours is still running.
				select {
				case <-done:
				default:
					return nil
				}
			}
		}
		select {
		case <-done:
			if strings.Contains(p.out.String(), "address already in use") {
				return ErrPortTaken
			}
			return fmt.Errorf("the pushgateway exited before it was ready: %w", cmp.Or(waitErr(), ErrExitedCleanly))
		case <-ctx.Done():
			return fmt.Errorf("waiting for the pushgateway at %s: %w", p.URL, ctx.Err())
		case <-tick.C:
		}
	}
}
