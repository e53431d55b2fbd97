package helm

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
)

// A chart's templates are programs from the repository: `range until
// 1000000000`, `repeat 2000000000 "x"` or forty levels of double include
// run for as long and take as much memory as they like, and Go can stop
// neither a goroutine nor its allocations. So releases are rendered in a
// child process — this same executable, started with renderChildEnv —
// with a time limit and a memory bound that hold while it renders: on
// Linux the kernel refuses the child address space past RenderMemory
// more than it starts with (RLIMIT_AS, see limitSpace), the child watches its own heap below that, and the parent
// kills it past the time limit (and past a resident-size backstop). A
// release that hits a bound is a problem of its own; the run goes on,
// with a new child. One child serves a run's renders one after another
// (a trace renders a release once per candidate value), and exits once
// idle. All renders of a run share a time budget too, so that many slow
// charts cannot outlast the job.

// renderChildEnv, set to "1", makes an executable that links this package
// a render child: it serves requests on stdin and stdout, then exits,
// before main (or a test binary's TestMain) runs.
const renderChildEnv = "GPU_RIGHTSIZING_RECOMMENDER_RENDER_CHILD"

// mallocArenas is in a render child's environment for a cgo build. The C
// library gives each new thread its own malloc arena, 64 MiB of address
// space reserved at once: under the child's RLIMIT_AS, the fifth thread
// a loaded runtime started was refused, in a heap of 8 to 16 MB. One
// arena serves every thread.
const mallocArenas = "MALLOC_ARENA_MAX=1"

// renderIdle is how long a child waits for its next request.
const renderIdle = 2 * time.Second

// RenderMemory is the memory a render child may take beyond what it has
// when it starts, a few megabytes: the chart's memory limit keeps room for
// it beside the tool's own (GOMEMLIMIT), and internal/deploy checks that
// the two add up within the container's limit.
const RenderMemory = 128 << 20

// renderLimits bound renders.
type renderLimits struct {
	// Time is the wall time one render may take, and Total what all the
	// renders of a renderer (a run's) may take together.
	Time, Total time.Duration
	// Heap bounds the child's Go heap, which the child watches.
	Heap int64
	// Space bounds the child's address space beyond what it has at its
	// start, which the kernel enforces (Linux): the heap cannot outgrow
	// it between two looks of the watcher.
	Space int64
	// RSS bounds the child's resident size where the parent can read it
	// (Linux): a backstop, as it counts the program's shared text too.
	RSS int64
}

// defaultRenderLimits fit the job's default memory limit (512 MiB) with
// the parent beside the child; a chart that renders legitimately takes a
// few megabytes and well under a second.
func defaultRenderLimits() renderLimits {
	return renderLimits{Time: 20 * time.Second, Total: 2 * time.Minute, Heap: RenderMemory * 3 / 4, Space: RenderMemory, RSS: RenderMemory + 128<<20}
}

// childLimits is the first thing the parent sends a child.
type childLimits struct {
	Heap, Space int64
}

// renderRequest is what the parent sends the child.
type renderRequest struct {
	Files                  map[string][]byte
	Name, Namespace, Chart string
	Vals                   map[string]any
}

// renderReply is what the child answers.
type renderReply struct {
	Out []byte
	Err string
}

func init() {
	// Values decoded from YAML hold these in interfaces.
	gob.Register(map[string]any{})
	gob.Register([]any{})
	if os.Getenv(renderChildEnv) == "1" {
		os.Exit(serveRenders(os.Stdin, os.Stdout))
	}
}

// Exit statuses of a child.
const (
	exitIdle  = 0 // no request for renderIdle, or stdin closed
	exitFatal = 2 // the Go runtime's, for a fatal error: out of memory past Space
	exitHeap  = 3 // past the heap bound
	exitLimit = 4 // the memory bound could not be set
)

// serveRenders is the child: requests until stdin closes or none comes
// for renderIdle. The bounds are its first message, and are set before
// any template runs.
func serveRenders(in io.Reader, out io.Writer) int {
	var lim childLimits
	dec, enc := gob.NewDecoder(bufio.NewReader(in)), gob.NewEncoder(out)
	if err := dec.Decode(&lim); err != nil {
		return exitIdle
	}
	if err := limitSpace(lim.Space); err != nil {
		return exitLimit
	}
	// The collector works harder below the bound, so that garbage does
	// not reach it; live data past it ends the child.
	debug.SetMemoryLimit(lim.Heap * 3 / 4)
	go watchHeap(lim.Heap)
	idle := time.AfterFunc(renderIdle, func() { os.Exit(exitIdle) })
	for {
		var req renderRequest
		if err := dec.Decode(&req); err != nil {
			return exitIdle
		}
		idle.Stop()
		r := &helmRelease{name: req.Name, namespace: req.Namespace, chart: req.Chart}
		b, err := renderSync(context.Background(), req.Files, r, req.Vals)
		reply := renderReply{Out: b}
		if err != nil {
			reply.Err = err.Error()
		}
		if err := enc.Encode(reply); err != nil {
			return exitIdle
		}
		req, reply, b = renderRequest{}, renderReply{}, nil
		runtime.GC()
		idle.Reset(renderIdle)
	}
}

// watchHeap ends the child once its heap passes limit.
func watchHeap(limit int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for {
		metrics.Read(sample)
		if v := sample[0].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > uint64(limit) {
			os.Exit(exitHeap)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// errRenderBound is a render stopped at a bound.
var errRenderBound = errors.New("rendering stopped")

// renderFunc renders a release: renderer.render, or a test's.
type renderFunc func(ctx context.Context, files map[string][]byte, r *helmRelease, vals map[string]any) ([]byte, error)

// renderer renders releases in a child process within its limits, one
// at a time. The zero value is not usable: see newRenderer.
type renderer struct {
	lim   renderLimits
	mu    sync.Mutex
	child *renderChild
	// spent is the wall time the renders took, against lim.Total.
	spent time.Duration
	// peak is the largest resident size a child that ended reached, as
	// the kernel counted it (Linux), for tests.
	peak int64
}

func newRenderer(lim renderLimits) *renderer { return &renderer{lim: lim} }

// renderChild is one running child.
type renderChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	enc   *gob.Encoder
	dec   *gob.Decoder
	// exited is closed once the process has been waited for.
	exited chan struct{}
	// over carries the resident size that made the parent kill it.
	over chan int64
	// stderr is the start of what it wrote there: the Go runtime's
	// message when the kernel refused it memory.
	stderr *headWriter
}

// render renders the chart of files as release r with user values vals,
// as renderSync does, in the child.
func (rd *renderer) render(ctx context.Context, files map[string][]byte, r *helmRelease, vals map[string]any) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	left := rd.lim.Total - rd.spent
	if left <= 0 {
		return nil, fmt.Errorf("chart %s: %w: the run's %v of rendering is spent", r.chart, errRenderBound, rd.lim.Total)
	}
	limit, why := rd.lim.Time, fmt.Sprintf("not done within %v", rd.lim.Time)
	if left < limit {
		limit, why = left, fmt.Sprintf("the run's %v of rendering was spent", rd.lim.Total)
	}
	start := time.Now()
	defer func() { rd.spent += time.Since(start) }()
	req := renderRequest{Files: files, Name: r.name, Namespace: r.namespace, Chart: r.chart, Vals: vals}
	// A child that went idle just as the request was sent is replaced
	// once.
	for try := 0; ; try++ {
		c, err := rd.running()
		if err != nil {
			return nil, fmt.Errorf("chart %s: starting the renderer: %w", r.chart, err)
		}
		out, idle, err := rd.ask(ctx, c, req, start.Add(limit), why)
		if idle && try == 0 {
			continue
		}
		return out, err
	}
}

// running returns the child, started if there is none.
func (rd *renderer) running() (*renderChild, error) {
	if c := rd.child; c != nil {
		select {
		case <-c.exited:
		default:
			return c, nil
		}
	}
	rd.child = nil
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// -test.run=^$ makes a test binary that somehow lacks the hook run no
	// test rather than every test; the tool's own binary never sees it.
	cmd := exec.Command(exe, "-test.run=^$")
	// Nothing of the tool's environment: no secret reaches a template.
	// Without tracebacks, a fatal error is one line.
	cmd.Env = []string{renderChildEnv + "=1", "GOTRACEBACK=none", mallocArenas}
	stderr := &headWriter{max: 4096}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &renderChild{cmd: cmd, stdin: stdin, exited: make(chan struct{}), over: make(chan int64, 1), stderr: stderr,
		enc: gob.NewEncoder(stdin), dec: gob.NewDecoder(bufio.NewReader(stdout))}
	go func() {
		cmd.Wait() //nolint:errcheck // the exit status is read from ProcessState
		close(c.exited)
	}()
	go watchRSS(cmd.Process.Pid, rd.lim.RSS, c.exited, c.over, func() { cmd.Process.Kill() }) //nolint:errcheck // it may have exited
	if err := c.enc.Encode(childLimits{Heap: rd.lim.Heap, Space: rd.lim.Space}); err != nil {
		rd.kill(c)
		return nil, err
	}
	rd.child = c
	return c, nil
}

// ask sends one request and waits for its reply until deadline, past
// which the error says why. idle says the child was ending for want of
// requests when it was sent.
func (rd *renderer) ask(ctx context.Context, c *renderChild, req renderRequest, deadline time.Time, why string) (out []byte, idle bool, err error) {
	type answer struct {
		reply renderReply
		err   error
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		if a.err = c.enc.Encode(req); a.err == nil {
			a.err = c.dec.Decode(&a.reply)
		}
		got <- a
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case a := <-got:
		if a.err == nil {
			if a.reply.Err != "" {
				return nil, false, errors.New(a.reply.Err)
			}
			if len(a.reply.Out) > checkout.MaxFileSize {
				return nil, false, fmt.Errorf("chart %s: the renderer answered more than a release may render", req.Chart)
			}
			return a.reply.Out, false, nil
		}
		// The child ended without answering: why?
		<-c.exited
		rd.child = nil
		rd.peak = max(rd.peak, maxRSS(c.cmd.ProcessState))
		switch {
		case len(c.over) > 0:
			return nil, false, fmt.Errorf("chart %s: %w: more than %d MiB resident", req.Chart, errRenderBound, (<-c.over)>>20)
		case c.cmd.ProcessState.ExitCode() == exitHeap:
			return nil, false, fmt.Errorf("chart %s: %w: more than %d MiB of memory", req.Chart, errRenderBound, rd.lim.Heap>>20)
		case c.cmd.ProcessState.ExitCode() == exitFatal && memoryRefused(c.stderr.String()):
			return nil, false, fmt.Errorf("chart %s: %w: more than %d MiB of memory", req.Chart, errRenderBound, rd.lim.Space>>20)
		case c.cmd.ProcessState.ExitCode() == exitLimit:
			return nil, false, fmt.Errorf("chart %s: the renderer could not bound its memory, so it renders nothing", req.Chart)
		case c.cmd.ProcessState.ExitCode() == exitIdle:
			return nil, true, fmt.Errorf("chart %s: the renderer ended: %w", req.Chart, a.err)
		}
		if fatal := fatalLine(c.stderr.String()); fatal != "" {
			return nil, false, fmt.Errorf("chart %s: the renderer failed: %s: %s", req.Chart, c.cmd.ProcessState, fatal)
		}
		return nil, false, fmt.Errorf("chart %s: the renderer failed: %s", req.Chart, c.cmd.ProcessState)
	case <-timer.C:
		rd.kill(c)
		return nil, false, fmt.Errorf("chart %s: %w: %s", req.Chart, errRenderBound, why)
	case <-ctx.Done():
		rd.kill(c)
		return nil, false, ctx.Err()
	}
}

// kill ends a child and waits until it is gone.
func (rd *renderer) kill(c *renderChild) {
	c.cmd.Process.Kill() //nolint:errcheck // it may have exited already
	c.stdin.Close()
	<-c.exited
	rd.peak = max(rd.peak, maxRSS(c.cmd.ProcessState))
	if rd.child == c {
		rd.child = nil
	}
}

// memoryRefused says whether a child's fatal error is the kernel
// refusing it memory past Space. The Go runtime words that differently
// by where the refused allocation came from: the heap's spans ("out of
// memory"), its own structures such as span records ("runtime: cannot
// allocate memory"), or a new thread's stack ("errno=12", ENOMEM; with
// cgo, "pthread_create failed"). Which one a template meets depends on
// timing: the collector and the heap watcher allocate beside it.
func memoryRefused(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "errno=12", "pthread_create failed"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// fatalLine is the Go runtime's "fatal error:" line in a child's stderr,
// or its first line: what names a failure nobody expected.
func fatalLine(stderr string) string {
	for l := range strings.Lines(stderr) {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") {
			return strings.TrimSpace(l)
		}
	}
	first, _, _ := strings.Cut(stderr, "\n")
	return strings.TrimSpace(first)
}

// headWriter keeps the first max bytes written to it, and takes the rest
// without keeping it.
type headWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := w.max - len(w.b); n > 0 {
		w.b = append(w.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (w *headWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
