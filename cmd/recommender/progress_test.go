package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

const eraseLine = "\r\033[K"

func TestProgressDraws(t *testing.T) {
	tests := []struct {
		name string
		do   func(p *progress)
		want string
	}{
		{
			name: "a counter with a total",
			do:   func(p *progress) { p.Start("querying usage", 2); p.Step(); p.Step(); p.Clear() },
			want: eraseLine + "querying usage 0/2" + eraseLine + "querying usage 1/2" + eraseLine + "querying usage 2/2" + eraseLine,
		},
		{
			name: "a counter without a total",
			do:   func(p *progress) { p.Start("pushed", 0); p.Step(); p.Clear() },
			want: eraseLine + "pushed" + eraseLine + "pushed 1" + eraseLine,
		},
		{
			name: "clear twice erases once",
			do:   func(p *progress) { p.Start("reading", 0); p.Clear(); p.Clear() },
			want: eraseLine + "reading" + eraseLine,
		},
		{name: "nothing drawn, nothing erased", do: func(p *progress) { p.Clear() }, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tt.do(newProgress(&b, true))
			require.Equal(t, tt.want, b.String())
		})
	}
}

// TestProgressOff: off, nothing is drawn and what it wraps is returned
// as it is.
func TestProgressOff(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false)
	require.Nil(t, p)
	p.Start("querying usage", 3)
	p.Step()
	p.Clear()
	require.Empty(t, b.String())
	log := slog.New(slog.DiscardHandler)
	require.Same(t, log, p.logger(log))

	// /dev/null is a character device and no terminal.
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer devNull.Close()
	require.Nil(t, terminalProgress(streams{Out: devNull, Err: devNull}, &cobra.Command{}))
	require.Nil(t, terminalProgress(streams{Out: &b, Err: &b}, &cobra.Command{}))
}

// TestProgressKeepsLogsApart: a record logged while a counter is shown
// gets a line of its own, and the counter comes back after it.
func TestProgressKeepsLogsApart(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true)
	log := p.logger(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})).With("run", 1))
	p.Start("querying usage", 2)
	p.Step()
	log.Warn("retrying", "query", 2)
	p.Step()
	p.Clear()
	log.Info("plan ready")
	require.Equal(t, eraseLine+"querying usage 0/2"+eraseLine+"querying usage 1/2"+
		eraseLine+"level=WARN msg=retrying run=1 query=2\n"+eraseLine+"querying usage 1/2"+
		eraseLine+"querying usage 2/2"+eraseLine+
		"level=INFO msg=\"plan ready\" run=1\n", b.String())
}

// TestProgressCountsQueries: a plan of the quickstart counts every query
// it makes against the number it planned, and leaves a clean line.
func TestProgressCountsQueries(t *testing.T) {
	var b bytes.Buffer
	u := source.Options{MetricsFile: "../../examples/quickstart/metrics.om", Progress: newProgress(&b, true)}
	p, _, err := u.Plan(context.Background(), plan.Options{Repo: "../../examples/quickstart"}, slog.New(slog.DiscardHandler),
		func() time.Time { return time.Now() })
	require.NoError(t, err)
	n := len(p.Queries)
	require.Positive(t, n)
	got := b.String()
	require.True(t, strings.HasPrefix(got, eraseLine+"reading the repository"), got)
	require.Contains(t, got, eraseLine+"querying usage 0/"+itoa(n))
	require.Contains(t, got, eraseLine+"querying usage "+itoa(n)+"/"+itoa(n))
	require.NotContains(t, got, "querying usage "+itoa(n+1))
	require.True(t, strings.HasSuffix(got, eraseLine), "the line is erased at the end")
}

// TestPlanNoProgressOffTerminal: plan with stderr not a terminal writes
// no progress, not a single \r.
func TestPlanNoProgressOffTerminal(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"plan", "--repo", "../../examples/quickstart", "--metrics-file", "../../examples/quickstart/metrics.om",
		"--log-level", "info", "--log-format", "text"}, &out, &errOut)
	require.Equal(t, exitOK, code, errOut.String())
	require.Contains(t, errOut.String(), "plan ready")
	require.NotContains(t, errOut.String(), "\r")
}

func itoa(n int) string { return strconv.Itoa(n) }
