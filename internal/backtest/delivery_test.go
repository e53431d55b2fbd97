package backtest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func TestFirstRun(t *testing.T) {
	tests := []struct {
		name    string
		start   int64 // ms
		cadence time.Duration
		want    int64
	}{
		{name: "a trace starting at a run is first seen a cadence later", start: 0, cadence: time.Hour, want: 60 * minute},
		{name: "a trace starting a sample after the run", start: 57_000, cadence: time.Hour, want: 60 * minute},
		{name: "just before a run", start: 60*minute - 1, cadence: time.Hour, want: 60 * minute},
		{name: "at a later run", start: 60 * minute, cadence: time.Hour, want: 120 * minute},
		{name: "every 15 minutes", start: 20 * minute, cadence: 15 * time.Minute, want: 30 * minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &backtest.Trace{Name: "w", Step: time.Minute, Compute: []usage.Sample{{T: tt.start, V: 1}}, Memory: []usage.Sample{{T: tt.start, V: 1}}}
			require.Equal(t, tt.want, backtest.FirstRun(tr, tt.cadence))
		})
	}
}

// TestLiveCap: five workloads at 0.50 GPU whose memory sits at the share,
// so every run finds them urgent, and a strategy that asks for 0.80. With
// a cap of 2 per run, the first two by name (a, b) go live at the first
// run (1 h); the others open pull requests, merging at 3 h. At 2 h, a and
// b have nothing to change, so c and d take the cap (updating their pull
// requests); e waits for its merge at 3 h.
func TestLiveCap(t *testing.T) {
	at := func(m int64) []backtest.Change {
		return []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: m * minute, Alloc: fraction(0.8)}}
	}
	type want struct {
		changes         []backtest.Change
		opened, updated int
	}
	tests := []struct {
		name string
		cap  int
		want map[string]want
	}{
		{name: "two a run, in name order", cap: 2, want: map[string]want{
			"a": {at(60), 1, 0}, "b": {at(60), 1, 0},
			"c": {at(120), 1, 1}, "d": {at(120), 1, 1},
			"e": {at(180), 1, 0},
		}},
		{name: "uncapped", cap: 0, want: map[string]want{
			"a": {at(60), 1, 0}, "b": {at(60), 1, 0}, "c": {at(60), 1, 0}, "d": {at(60), 1, 0}, "e": {at(60), 1, 0},
		}},
		{name: "the tool's default of three", cap: 3, want: map[string]want{
			"a": {at(60), 1, 0}, "b": {at(60), 1, 0}, "c": {at(60), 1, 0},
			"d": {at(120), 1, 1}, "e": {at(120), 1, 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Out of name order: the cap follows the plan's order, not
			// the order traces were read in.
			var traces []*backtest.Trace
			for _, n := range []string{"e", "c", "a", "d", "b"} {
				traces = append(traces, trace(n, 4*60, constant(10), constant(50)))
			}
			cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 2 * time.Hour, Live: true, LiveMaxChanges: tt.cap}
			tls := backtest.SimulateAll(traces, &fixed{target: fraction(0.8)}, cfg)
			got := map[string]want{}
			for i, tl := range tls {
				got[traces[i].Name] = want{tl.Changes, tl.PullRequestsOpened, tl.PullRequestsUpdated}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// scribbler decides as its strategy does, then writes over everything it
// was handed: the past, the allocation history and the kills.
type scribbler struct{ backtest.Strategy }

// EveryStep keeps a controller's schedule.
func (s scribbler) EveryStep() bool {
	c, ok := s.Strategy.(backtest.Continuous)
	return ok && c.EveryStep()
}

func (s scribbler) Decide(st backtest.State) backtest.Proposal {
	p := s.Strategy.Decide(st)
	for i := range st.Past.Compute {
		st.Past.Compute[i].V, st.Past.Memory[i].V = 0, 0
	}
	for i := range st.Allocations.Changes {
		st.Allocations.Changes[i] = backtest.Change{T: st.At, Alloc: fraction(1)}
	}
	for i := range st.OOMKills {
		st.OOMKills[i].T = 0
	}
	return p
}

// TestStrategyCannotWriteItsScore replays strategies that read every part
// of the state (the past, the allocation history, the kills), with and
// without a scribbler around them: the timelines and the scores are the
// same, because each run hands out copies.
func TestStrategyCannotWriteItsScore(t *testing.T) {
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	// Memory steps up after a day and spikes now and then, so that
	// strategies change their minds and the share is breached (kills).
	tr := trace("w", 48*60, func(i int) float64 { return float64(10 + i%37) }, func(i int) float64 {
		switch {
		case i%397 < 3:
			return 70
		case i > 30*60:
			return 45
		}
		return 25
	})
	cfg := backtest.Config{Start: fraction(0.6), Cadence: time.Hour, MergeDelay: 2 * time.Hour, Live: true, LiveMaxChanges: 3,
		OOMKill: true, Restart: 2 * time.Minute}
	tests := []struct {
		name string
		s    backtest.Strategy
	}{
		{name: "peak+15%", s: backtest.PeakPlus15{Bounds: bounds}},
		{name: "krr-simple", s: backtest.KRRSimple{Bounds: bounds}},
		{name: "vpa", s: backtest.VPA{Bounds: bounds}},
		{name: "vpa-auto", s: backtest.VPA{Bounds: bounds, Auto: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clean := backtest.Simulate(tr, tt.s, cfg)
			require.Greater(t, len(clean.Changes), 1, "the case must change the allocation")
			require.NotEmpty(t, clean.OOMKills, "the case must kill")
			dirty := backtest.Simulate(tr, scribbler{tt.s}, cfg)
			require.Equal(t, clean, dirty)
			require.Equal(t, backtest.Evaluate(tr, clean), backtest.Evaluate(tr, dirty))
		})
	}
}

// stairs asks for 0.01 GPU more every 15 minutes of the clock: the same
// target at the same time, whatever the schedule.
type stairs struct{}

func (stairs) Name() string { return "stairs" }
func (stairs) Decide(s backtest.State) backtest.Proposal {
	return backtest.Proposal{Target: fraction(0.5 + 0.01*float64(s.At/(15*minute)))}
}

// TestScheduleChurn is what a shorter schedule costs in review: the same
// targets, asked for four times as often, are mostly updates to the open
// pull request. Four hours, merged 2 h after opening.
//
//	hourly:      1h open 0.54 (merges 3h); 2h update 0.58; 3h merged, open 0.62
//	             → 2 opened, 1 updated
//	15 minutes:  0h15 open 0.51 (merges 2h15); 0h30…2h update 0.52…0.58 (7);
//	             2h15 merged, open 0.59; 2h30…3h45 update 0.60…0.65 (6)
//	             → 2 opened, 13 updated
func TestScheduleChurn(t *testing.T) {
	tests := []struct {
		name            string
		cadence         time.Duration
		changes         []backtest.Change
		opened, updated int
	}{
		{name: "hourly", cadence: time.Hour, changes: []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 180 * minute, Alloc: fraction(0.58)}},
			opened: 2, updated: 1},
		{name: "every 15 minutes", cadence: 15 * time.Minute,
			changes: []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 135 * minute, Alloc: fraction(0.58)}}, opened: 2, updated: 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trace("w", 4*60, constant(10), constant(10))
			tl := backtest.Simulate(tr, stairs{}, backtest.Config{Start: fraction(0.5), Cadence: tt.cadence, MergeDelay: 2 * time.Hour})
			require.Equal(t, tt.changes, tl.Changes)
			require.Equal(t, tt.opened, tl.PullRequestsOpened)
			require.Equal(t, tt.updated, tl.PullRequestsUpdated)
		})
	}
}

var _ backtest.Strategy = scribbler{}

// evictor applies 0.80 at once at every run, by deleting the pod or not.
type evictor struct{ evict bool }

func (evictor) Name() string { return "evictor" }
func (e evictor) Decide(backtest.State) backtest.Proposal {
	return backtest.Proposal{Target: fraction(0.8), Immediate: true, Evict: e.evict}
}

// TestEvictionRestarts: an eviction at the first run (1 h) restarts the pod
// for 2 minutes, during which it holds at most its share; a change that
// rolls the Deployment does not. Memory demand is 30 % but 90 % at minute
// 61, above the new 0.80: restarting, the evicted pod is not killed for
// it (the breach still counts); the rolled one is.
func TestEvictionRestarts(t *testing.T) {
	tests := []struct {
		name                string
		evict               bool
		evictions, oomKills int
	}{
		{name: "evicted: a restart", evict: true, evictions: 1},
		{name: "rolled: no gap, so the spike kills", oomKills: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := trace("w", 3*60, constant(10), func(i int) float64 {
				if i == 61 {
					return 90
				}
				return 30
			})
			cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 2 * time.Hour, OOMKill: true, Restart: 2 * time.Minute}
			tl := backtest.Simulate(tr, evictor{evict: tt.evict}, cfg)
			s := backtest.Evaluate(tr, tl)
			require.Equal(t, tt.evictions, s.Evictions)
			require.Equal(t, tt.oomKills, s.OOMKills)
			require.InDelta(t, 1, s.MemoryBreachMinutes, 1e-9)
		})
	}
}
