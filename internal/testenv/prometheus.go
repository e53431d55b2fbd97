package testenv

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Prometheus is a real Prometheus server started for one test, serving only
// the recordings it was started with.
type Prometheus struct {
	// URL is the server's base URL, http://127.0.0.1:PORT, without a
	// trailing slash.
	URL string

	logPath string
}

// Log returns everything promtool and the server have printed so far, for a
// test to show when it fails.
func (p *Prometheus) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("reading the prometheus log: %v", err)
	}
	return string(b)
}

// StartPrometheus starts a Prometheus server on 127.0.0.1 that serves the
// OpenMetrics recordings openMetricsFiles (plain, or gzipped when the name
// ends in .gz), backfilled with promtool as a user would load them, and stops
// it when the test ends. It returns once the server is ready and the
// recordings are queryable. Without prometheus or promtool on PATH the test
// is skipped (or fails under StrictEnv); a recording promtool rejects or a
// server that does not become ready fails the test with the tool's output.
func StartPrometheus(t testing.TB, openMetricsFiles ...string) *Prometheus {
	t.Helper()
	return startPrometheusTB(t, nil, openMetricsFiles)
}

// StartScrapingPrometheus starts a Prometheus server on 127.0.0.1, as
// StartPrometheus does, that scrapes targets (host:port) every second
// with their own labels kept (honor_labels, as a Pushgateway's scrape
// needs), and serves nothing else.
func StartScrapingPrometheus(t testing.TB, targets ...string) *Prometheus {
	t.Helper()
	return startPrometheusTB(t, targets, nil)
}

func startPrometheusTB(t testing.TB, targets, openMetricsFiles []string) *Prometheus {
	t.Helper()
	prometheus := LookPath(t, "prometheus")
	if prometheus == "" {
		return nil
	}
	promtool := LookPath(t, "promtool")
	if promtool == "" {
		return nil
	}

	// The directory is removed after the server is stopped, because cleanups
	// run last registered first.
	dir := t.TempDir()
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("creating the prometheus log: %v", err)
		return nil
	}
	t.Cleanup(func() { logFile.Close() })

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	srv, err := startPrometheus(ctx, promSetup{
		prometheus: prometheus,
		promtool:   promtool,
		dir:        dir,
		files:      openMetricsFiles,
		targets:    targets,
		log:        logFile,
	})
	if err != nil {
		t.Fatalf("starting prometheus for the test: %v", err)
		return nil
	}
	t.Cleanup(func() {
		if err := srv.stop(5 * time.Second); err != nil {
			t.Errorf("stopping prometheus: %v", err)
		}
		if t.Failed() {
			t.Logf("prometheus log, last lines:\n%s", srv.out.String())
		}
	})
	return &Prometheus{URL: srv.url, logPath: logPath}
}

// promSetup is what startPrometheus needs, kept apart from testing so that
// the steps read the same as the ones a script would take.
type promSetup struct {
	prometheus, promtool string // executables
	// dir holds the configuration and the TSDB; the caller removes it.
	dir   string
	files []string // OpenMetrics recordings, plain or .gz
	// targets are scraped every second, honouring their labels.
	targets []string
	// log receives promtool's and the server's output.
	log io.Writer
	// readyTimeout bounds the wait for the server; 30 s when zero.
	readyTimeout time.Duration
}

// promServer is a running Prometheus process.
type promServer struct {
	url string
	cmd *exec.Cmd
	// out keeps the end of the server's output for error messages.
	out *TailBuffer
	// done is closed once the process has exited, and waitErr set.
	done    chan struct{}
	waitErr error
}

// startPrometheus backfills the recordings into a TSDB under s.dir, writes a
// configuration with nothing to scrape, and starts a server on a free
// loopback port, returning once it is ready and the data is queryable.
func startPrometheus(ctx context.Context, s promSetup) (*promServer, error) {
	db, err := filepath.Abs(filepath.Join(s.dir, "data"))
	if err != nil {
		return nil, fmt.Errorf("locating the TSDB directory: %w", err)
	}
	if err := os.MkdirAll(db, 0o755); err != nil {
		return nil, fmt.Errorf("creating the TSDB directory: %w", err)
	}
	for i, file := range s.files {
		if err := backfill(ctx, s, file, db, i); err != nil {
			return nil, err
		}
	}
	last, err := lastSampleTime(db)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(s.dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte(promConfigFor(s.targets)), 0o644); err != nil {
		return nil, fmt.Errorf("writing the prometheus configuration: %w", err)
	}

	timeout := s.readyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		srv, err := launch(s, config, db, port)
		if err != nil {
			return nil, err
		}
		readyCtx, cancel := context.WithTimeout(ctx, timeout)
		err = srv.waitReady(readyCtx, db, last)
		cancel()
		if err == nil {
			return srv, nil
		}
		_ = srv.stop(5 * time.Second)
		if !errors.Is(err, ErrPortTaken) || attempt == BindAttempts {
			return nil, fmt.Errorf("%w\nprometheus output, last lines:\n%s", err, srv.out.String())
		}
		fmt.Fprintf(s.log, "testenv: port %d was taken, trying another\n", port)
	}
}

// promConfig scrapes nothing, not even the server itself, so the server
// holds exactly the backfilled samples.
const promConfig = `# Written by internal/testenv: nothing is scraped, so the server serves
# only the blocks backfilled from the recordings.
global:
  scrape_interval: 1m
scrape_configs: []
`

// promConfigFor is promConfig, or with targets a configuration that
// scrapes them every second and keeps the labels they expose.
func promConfigFor(targets []string) string {
	if len(targets) == 0 {
		return promConfig
	}
	quoted := make([]string, len(targets))
	for i, t := range targets {
		quoted[i] = strconv.Quote(t)
	}
	return `# Written by internal/testenv: the test's targets, scraped every second.
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: targets
    honor_labels: true
    static_configs:
      - targets: [` + strings.Join(quoted, ", ") + `]
`
}

// backfill loads one recording into db with promtool, which needs a plain
// file: a gzipped one is decompressed next to the TSDB first.
func backfill(ctx context.Context, s promSetup, file, db string, i int) error {
	plain := file
	if strings.HasSuffix(file, ".gz") {
		plain = filepath.Join(s.dir, fmt.Sprintf("recording-%d.om", i))
		if err := gunzip(file, plain); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, s.promtool, "tsdb", "create-blocks-from", "openmetrics", plain, db)
	out, err := cmd.CombinedOutput()
	fmt.Fprintf(s.log, "testenv: promtool backfill of %s:\n%s", file, out)
	if err != nil {
		return fmt.Errorf("backfilling %s with promtool: %w\n%s", file, err, Tail(string(out), 2000))
	}
	return nil
}

func gunzip(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening the recording: %w", err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("decompressing %s: %w", src, err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("creating the decompressed copy of %s: %w", src, err)
	}
	defer func() {
		if cerr := out.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("writing the decompressed copy of %s: %w", src, cerr)
		}
	}()
	if _, err := io.Copy(out, zr); err != nil {
		return fmt.Errorf("decompressing %s: %w", src, err)
	}
	return nil
}

// lastSampleTime returns the time of the newest backfilled sample, read from
// the blocks' meta.json (whose maxTime is exclusive, in milliseconds), or
// the zero time when there are no blocks.
func lastSampleTime(db string) (time.Time, error) {
	metas, err := filepath.Glob(filepath.Join(db, "*", "meta.json"))
	if err != nil {
		return time.Time{}, fmt.Errorf("listing the backfilled blocks: %w", err)
	}
	var maxT int64
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			return time.Time{}, fmt.Errorf("reading a block's meta.json: %w", err)
		}
		var meta struct {
			MaxTime int64 `json:"maxTime"`
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			return time.Time{}, fmt.Errorf("decoding %s: %w", m, err)
		}
		maxT = max(maxT, meta.MaxTime)
	}
	if maxT == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(maxT - 1).UTC(), nil
}

// launch starts the server without waiting for it.
func launch(s promSetup, config, db string, port int) (*promServer, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out := NewTailBuffer(8 << 10)
	cmd := exec.Command(s.prometheus,
		"--config.file="+config,
		"--storage.tsdb.path="+db,
		"--web.listen-address="+addr,
		// Retention is counted back from the newest block, and recordings
		// can span more than the default 15 days: keep everything.
		"--storage.tsdb.retention.time=100y",
	)
	cmd.Stdout = io.MultiWriter(s.log, out)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.prometheus, err)
	}
	srv := &promServer{url: "http://" + addr, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		srv.waitErr = cmd.Wait()
		close(srv.done)
	}()
	return srv, nil
}

// waitReady waits until the server answers /-/ready, is the one serving db
// (and not another process that won the port), and answers a query at the
// time of the last sample, if there is one, with data.
func (srv *promServer) waitReady(ctx context.Context, db string, last time.Time) error {
	client := &http.Client{Timeout: 2 * time.Second}
	poll := func(what string, ok func() (bool, error)) error {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			done, err := ok()
			if err != nil || done {
				return err
			}
			select {
			case <-srv.done:
				if strings.Contains(srv.out.String(), "address already in use") {
					return ErrPortTaken
				}
				return fmt.Errorf("prometheus exited before %s: %w", what, cmp.Or(srv.waitErr, ErrExitedCleanly))
			case <-ctx.Done():
				return fmt.Errorf("waiting for prometheus at %s %s: %w", srv.url, what, ctx.Err())
			case <-tick.C:
			}
		}
	}

	err := poll("it was ready", func() (bool, error) {
		resp, err := getCtx(ctx, client, srv.url+"/-/ready")
		if err != nil {
			return false, nil // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return err
	}

	var flags struct {
		Data map[string]string `json:"data"`
	}
	if err := getJSON(ctx, client, srv.url+"/api/v1/status/flags", &flags); err != nil {
		return err
	}
	if got := flags.Data["storage.tsdb.path"]; got != db {
		return fmt.Errorf("%w: the server on %s serves %q", ErrPortTaken, srv.url, got)
	}

	if last.IsZero() {
		return nil
	}
	q := url.Values{
		"query": {`count({__name__!=""})`},
		"time":  {strconv.FormatFloat(float64(last.UnixMilli())/1000, 'f', 3, 64)},
	}
	return poll("the recordings were queryable at "+last.Format(time.RFC3339), func() (bool, error) {
		var r struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		if err := getJSON(ctx, client, srv.url+"/api/v1/query?"+q.Encode(), &r); err != nil {
			return false, err
		}
		return len(r.Data.Result) > 0, nil
	})
}

func getCtx(ctx context.Context, client *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

// getJSON decodes the answer of a GET that must succeed.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	resp, err := getCtx(ctx, client, u)
	if err != nil {
		return fmt.Errorf("asking prometheus: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the answer to GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("decoding the answer to GET %s: %w", u, err)
	}
	return nil
}

// stop asks the server to shut down and kills it if it has not within grace.
func (srv *promServer) stop(grace time.Duration) error {
	select {
	case <-srv.done:
		return nil
	default:
	}
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling prometheus (pid %d): %w", srv.cmd.Process.Pid, err)
	}
	select {
	case <-srv.done:
		return nil
	case <-time.After(grace):
	}
	if err := srv.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing prometheus (pid %d): %w", srv.cmd.Process.Pid, err)
	}
	<-srv.done
	return fmt.Errorf("prometheus (pid %d) did not stop within %v of SIGTERM and was killed", srv.cmd.Process.Pid, grace)
}
