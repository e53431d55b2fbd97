package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
)

// progress is a one-line counter on a terminal, redrawn in place with \r:
// "querying usage 12/40". It is for a person watching a long run; a log
// read later (a pod's, a CI job's) gets none of it, so it is drawn only
// when stderr is a terminal and the logs are text. A nil *progress draws
// nothing, and so do all its methods.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	done  int
	total int // 0: unknown, the counter alone is shown
	shown bool
}

// newProgress draws on w when on, and is nil (off) otherwise.
func newProgress(w io.Writer, on bool) *progress {
	if !on {
		return nil
	}
	return &progress{w: w}
}

// terminalProgress is a command's progress: on when stderr is a terminal
// and the logs are not JSON.
func terminalProgress(io streams, cmd *cobra.Command) *progress {
	format := ""
	if f := cmd.Flag("log-format"); f != nil {
		format = f.Value.String()
	}
	return newProgress(io.Err, isTerminal(io.Err) && format != "json")
}

// Start begins a stage: label, and how many steps it has (0: unknown).
func (p *progress) Start(label string, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.done, p.total = label, 0, total
	p.draw()
}

// Step counts one step of the stage.
func (p *progress) Step() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.draw()
}

// Clear erases the line, at the end of a stage, so that what is printed
// next starts on a clean line.
func (p *progress) Clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.label = ""
}

func (p *progress) draw() {
	line := p.label
	switch {
	case p.total > 0:
		line = fmt.Sprintf("%s %d/%d", p.label, p.done, p.total)
	case p.done > 0:
		line = fmt.Sprintf("%s %d", p.label, p.done)
	}
	// \r and erase-to-end-of-line: a shorter line leaves nothing of the
	// longer one before it.
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.shown = true
}

func (p *progress) erase() {
	if p.shown {
		io.WriteString(p.w, "\r\033[K")
		p.shown = false
	}
}

var _ source.Progress = (*progress)(nil)

// watch has p draw the queries of the usage source u, when p is on, and
// returns log kept out of its way.
func (p *progress) watch(u *source.Options, log *slog.Logger) *slog.Logger {
	if p != nil {
		u.Progress = p
	}
	return p.logger(log)
}

// logger is log with the progress line kept out of its way: a record
// logged while a counter is shown erases it first and redraws it after,
// so that the two never share a line.
func (p *progress) logger(log *slog.Logger) *slog.Logger {
	if p == nil {
		return log
	}
	return slog.New(progressHandler{Handler: log.Handler(), p: p})
}

type progressHandler struct {
	slog.Handler
	p *progress
}

func (h progressHandler) Handle(ctx context.Context, r slog.Record) error {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	redraw := h.p.shown
	h.p.erase()
	err := h.Handler.Handle(ctx, r)
	if redraw {
		h.p.draw()
	}
	return err
}

func (h progressHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return progressHandler{Handler: h.Handler.WithAttrs(attrs), p: h.p}
}

func (h progressHandler) WithGroup(name string) slog.Handler {
	return progressHandler{Handler: h.Handler.WithGroup(name), p: h.p}
}
