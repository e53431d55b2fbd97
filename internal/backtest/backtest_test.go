package backtest_test

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const minute = int64(60_000)

func fraction(v float64) engine.Allocation { return engine.Allocation{Form: engine.Fraction, GPUs: v} }

// trace builds a trace sampled every minute from two value functions of the
// sample index (percent of one GPU).
func trace(name string, n int, compute, memory func(i int) float64) *backtest.Trace {
	tr := &backtest.Trace{Name: name, Step: time.Minute}
	for i := range n {
		t := int64(i) * minute
		tr.Compute = append(tr.Compute, usage.Sample{T: t, V: compute(i)})
		tr.Memory = append(tr.Memory, usage.Sample{T: t, V: memory(i)})
	}
	return tr
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func TestReadCSV(t *testing.T) {
	in := "workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu\n" +
		"a,0,10,20\na,60,0.5,20.25\na,120,NaN,21\nb,0,100,150\nb,600,5,6\n"
	got, err := backtest.ReadCSV(strings.NewReader(in), "t.csv")
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, "a", got[0].Name)
	require.Equal(t, time.Minute, got[0].Step)
	require.Equal(t, []usage.Sample{{T: 0, V: 20}, {T: 60_000, V: 20.25}, {T: 120_000, V: 21}}, got[0].Memory)
	require.True(t, math.IsNaN(got[0].Compute[2].V))
	require.Equal(t, 10*time.Minute, got[1].Step)
	require.Equal(t, 150.0, got[1].Peak())

	var buf bytes.Buffer
	require.NoError(t, backtest.WriteCSV(&buf, got))
	again, err := backtest.ReadCSV(&buf, "again.csv")
	require.NoError(t, err)
	require.Equal(t, got[1], again[1])
}

func TestReadCSVErrors(t *testing.T) {
	const header = "workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu\n"
	tests := []struct{ name, in, err string }{
		{"empty", "", "t.csv: empty file, want the header"},
		{"wrong header", "w,t,c,m\n", `t.csv:1: header is "w,t,c,m"`},
		{"field count", header + "a,0,1\n", "t.csv:2: 3 fields, want 4"},
		{"empty workload", header + ",0,1,2\n", "t.csv:2: workload: empty"},
		{"bad time", header + "a,soon,1,2\n", `t.csv:2: timestamp_s: "soon" is not a number of seconds`},
		{"negative usage", header + "a,0,-1,2\n", `t.csv:2: sm_util_pct_of_gpu: "-1" is not a percentage`},
		{"infinite usage", header + "a,0,1,+Inf\n", `t.csv:2: mem_used_pct_of_gpu: "+Inf" is not a percentage`},
		{"time goes back", header + "a,60,1,2\na,60,1,2\n", `t.csv:3: timestamp_s: 60 is not after the previous row of "a"`},
		{"not contiguous", header + "a,0,1,2\nb,0,1,2\na,60,1,2\n", `t.csv:4: workload: rows of "a" are not contiguous`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := backtest.ReadCSV(strings.NewReader(tt.in), "t.csv")
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add("workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu\na,0,10,20\na,57,0,20.5\nb,0,NaN,1e2\n")
	f.Add("workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu\r\na,0.001,1,2\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		traces, err := backtest.ReadCSV(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			return
		}
		var buf bytes.Buffer
		require.NoError(t, backtest.WriteCSV(&buf, traces))
		again, err := backtest.ReadCSV(&buf, "again.csv")
		require.NoError(t, err, buf.String())
		require.Len(t, again, len(traces))
		for i := range traces {
			require.Equal(t, traces[i].Name, again[i].Name)
			require.Equal(t, len(traces[i].Compute), len(again[i].Compute))
			for j := range traces[i].Compute {
				require.Equal(t, traces[i].Compute[j].T, again[i].Compute[j].T)
			}
		}
	})
}

// fixed proposes the same target at every run.
type fixed struct {
	target engine.Allocation
	seen   []int64
}

func (f *fixed) Name() string { return "fixed" }
func (f *fixed) Decide(s backtest.State) backtest.Proposal {
	f.seen = append(f.seen, s.At)
	if last := s.Past.Compute[len(s.Past.Compute)-1].T; last > s.At {
		panic("a strategy saw the future")
	}
	return backtest.Proposal{Target: f.target}
}

func TestSimulateMergeDelay(t *testing.T) {
	tr := trace("w", 6*60, constant(10), constant(10))
	cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 2 * time.Hour}
	s := &fixed{target: fraction(0.3)}
	tl := backtest.Simulate(tr, s, cfg)
	// Runs at 1h..5h; the first proposal (1h) merges at 3h; later runs see
	// it merged and propose nothing new.
	require.Equal(t, []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 3 * 60 * minute, Alloc: fraction(0.3)}}, tl.Changes)
	require.Equal(t, []int64{60 * minute, 120 * minute, 180 * minute, 240 * minute, 300 * minute}, s.seen)
	require.Equal(t, fraction(0.5), tl.At(3*60*minute-1))
	require.Equal(t, fraction(0.3), tl.At(3*60*minute))

	// With the live fast path, an upsize while usage reaches the share
	// lands at once; without urgency, it waits for its merge like any.
	live := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 2 * time.Hour, Live: true}
	full := trace("w", 6*60, constant(10), constant(50))
	tl = backtest.Simulate(full, &fixed{target: fraction(0.8)}, live)
	require.Equal(t, []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 60 * minute, Alloc: fraction(0.8)}}, tl.Changes)
	tl = backtest.Simulate(tr, &fixed{target: fraction(0.8)}, live)
	require.Equal(t, []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 180 * minute, Alloc: fraction(0.8)}}, tl.Changes)
}

func TestUrgent(t *testing.T) {
	tests := []struct {
		name            string
		step            time.Duration
		compute, memory []float64 // the last samples, one a step, ending at the run
		want            bool
	}{
		{name: "memory at the share in the last two minutes", step: time.Minute, compute: []float64{10, 10, 10}, memory: []float64{20, 50, 20}, want: true},
		{name: "compute above the share", step: time.Minute, compute: []float64{10, 10, 70}, memory: []float64{20, 20, 20}, want: true},
		{name: "at the share three minutes ago only", step: time.Minute, compute: []float64{10, 10, 10}, memory: []float64{50, 20, 20}},
		{name: "below the share", step: time.Minute, compute: []float64{49, 49, 49}, memory: []float64{49, 49, 49}},
		{name: "sparse samples: the newest counts", step: 10 * time.Minute, compute: []float64{10, 10, 10}, memory: []float64{20, 20, 55}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &backtest.Trace{Name: "w", Step: tt.step}
			for i := range tt.compute {
				ts := int64(i) * tt.step.Milliseconds()
				tr.Compute = append(tr.Compute, usage.Sample{T: ts, V: tt.compute[i]})
				tr.Memory = append(tr.Memory, usage.Sample{T: ts, V: tt.memory[i]})
			}
			require.Equal(t, tt.want, backtest.Urgent(tr, tr.End(), fraction(0.5)))
		})
	}
}

// flipping proposes a then b then back: an open pull request is updated in
// place, and closed when the proposal returns to the current value.
type flipping struct{ plan []engine.Allocation }

func (f *flipping) Name() string { return "flipping" }
func (f *flipping) Decide(s backtest.State) backtest.Proposal {
	i := int(s.At/(60*minute)) - 1
	return backtest.Proposal{Target: f.plan[min(i, len(f.plan)-1)]}
}

func TestSimulatePullRequestLifecycle(t *testing.T) {
	tr := trace("w", 8*60, constant(10), constant(10))
	cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Hour, MergeDelay: 150 * time.Minute}
	// 1h: open PR for 0.4 (merges at 3h30); 2h: update it to 0.3; 3h: back
	// to 0.5 = current → closed; 4h: 0.2 (merges 6h30).
	s := &flipping{plan: []engine.Allocation{fraction(0.4), fraction(0.3), fraction(0.5), fraction(0.2)}}
	tl := backtest.Simulate(tr, s, cfg)
	require.Equal(t, []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 390 * minute, Alloc: fraction(0.2)}}, tl.Changes)
	// Opened at 1h and 4h, updated at 2h; the same value again is no update.
	require.Equal(t, 2, tl.PullRequestsOpened)
	require.Equal(t, 1, tl.PullRequestsUpdated)

	s = &flipping{plan: []engine.Allocation{fraction(0.4), fraction(0.3)}}
	tl = backtest.Simulate(tr, s, cfg)
	require.Equal(t, []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 210 * minute, Alloc: fraction(0.3)}}, tl.Changes,
		"an updated pull request merges when the first would have")
}

func TestEvaluate(t *testing.T) {
	// Four one-minute samples at an allocation of 0.5: usage 0.2, 0.6
	// (compute breach), 0.7 memory (memory breach), NaN (skipped).
	tr := trace("w", 4, func(i int) float64 { return []float64{20, 60, 10, math.NaN()}[i] },
		func(i int) float64 { return []float64{10, 30, 70, 10}[i] })
	tl := &backtest.Timeline{Changes: []backtest.Change{{T: 0, Alloc: fraction(0.5)}}}
	s := backtest.Evaluate(tr, tl)
	hour := 1.0 / 60
	require.InDelta(t, 3*0.5*hour, s.AllocatedGPUHours, 1e-12)
	require.InDelta(t, 0.3*hour, s.SlackGPUHours, 1e-12)
	require.InDelta(t, 0.2, s.RelativeSlack(), 1e-12)
	require.InDelta(t, 1, s.ComputeBreachMinutes, 1e-6)
	require.InDelta(t, 1, s.MemoryBreachMinutes, 1e-6)
	require.Equal(t, 1, s.WorkloadsWithMemoryBreach)
	require.Equal(t, 0, s.Changes)
	require.InDelta(t, 4.0/(24*60), s.Days, 1e-12)

	// A change made at the time of the sample it answers does not serve
	// that sample: the breach at minute 2 stands, the one at 3 is gone.
	tr = trace("w", 4, constant(10), func(i int) float64 { return []float64{20, 20, 60, 60}[i] })
	tl = &backtest.Timeline{Changes: []backtest.Change{{T: 0, Alloc: fraction(0.5)}, {T: 2 * minute, Alloc: fraction(0.8)}}}
	s = backtest.Evaluate(tr, tl)
	require.InDelta(t, 1, s.MemoryBreachMinutes, 1e-6)
	require.Equal(t, 1, s.Changes)
}

func TestOracle(t *testing.T) {
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	// The oracle sees the next hour's peak, and acts at once.
	spiky := trace("w", 180, func(i int) float64 {
		if i == 150 {
			return 80
		}
		return 10
	}, constant(5))
	o := backtest.Oracle{Bounds: bounds, Cadence: time.Hour}
	p := o.DecideWithFuture(backtest.State{At: 120 * minute, Current: fraction(0.5)}, spiky)
	require.Equal(t, backtest.Proposal{Target: fraction(0.8), Immediate: true}, p)
	p = o.DecideWithFuture(backtest.State{At: 60 * minute, Current: fraction(0.5)}, spiky)
	require.Equal(t, fraction(0.1), p.Target)
}

// TestEngineReplaysThePolicy runs the decision engine under the quickstart
// policies: a quiet, gap-free workload at one GPU is moved down after the
// day of history a downsize needs, and a workload that grows gets more.
func TestEngineReplaysThePolicy(t *testing.T) {
	set, err := policy.Load(context.Background(), filepath.FromSlash("../../examples/quickstart/policies"))
	require.NoError(t, err)
	g := set.Govern(policy.Target{Ref: usage.Ref{Namespace: "b", Kind: "Deployment", Name: "w"}, Labels: map[string]string{"nvidia.com/gpu.present": "true"}})
	require.Empty(t, g.Skip)
	e := &backtest.Engine{Label: "guide", Governance: g}
	cfg := backtest.Config{Start: engine.Allocation{Form: engine.WholeGPUs, GPUs: 1}, Cadence: time.Hour, MergeDelay: 2 * time.Hour}

	quiet := trace("quiet", 30*60, constant(20), constant(30))
	tl := backtest.Simulate(quiet, e, cfg)
	require.Len(t, tl.Changes, 2, "%+v", tl.Changes)
	// Runs start at 1h; the first with 24h of history is at 24h, merged at 26h.
	require.Equal(t, backtest.Change{T: 26 * 60 * minute, Alloc: fraction(0.36)}, tl.Changes[1])

	// Memory at 80% of a 0.3 share for two minutes of every hour: the
	// reactive policy asks for more, and the increase lands.
	cfg.Start = fraction(0.3)
	busy := trace("busy", 6*60, constant(5), func(i int) float64 {
		if i%60 >= 58 {
			return 33
		}
		return 20
	})
	tl = backtest.Simulate(busy, e, cfg)
	require.Greater(t, tl.Last().GPUs, 0.3, "%+v", tl.Changes)
}

// TestEngineLiveUpsizeFollowsThePolicy: the live fast path is the tool's
// only where the policy sets gitops.liveUpsize, whatever the delivery.
func TestEngineLiveUpsizeFollowsThePolicy(t *testing.T) {
	load := func(dir string, files ...string) *backtest.Engine {
		set, err := policy.Load(context.Background(), filepath.FromSlash(dir), files...)
		require.NoError(t, err)
		require.Empty(t, set.Errors)
		g := set.Govern(policy.Target{Ref: usage.Ref{Namespace: "b", Kind: "Deployment", Name: "w"}, Labels: map[string]string{"nvidia.com/gpu.present": "true"}})
		require.Empty(t, g.Skip)
		return &backtest.Engine{Label: dir, Governance: g}
	}
	guide := load("../../examples/quickstart/policies")
	recommended := load("../../examples/policies", "recommended.yaml")
	require.False(t, guide.Governance.Strategy.LiveUpsize)
	require.True(t, recommended.Governance.Strategy.LiveUpsize)

	// Memory reaches the 0.3 share in the last two minutes of every hour:
	// urgent at every run.
	busy := trace("busy", 6*60, constant(5), func(i int) float64 {
		if i%60 >= 58 {
			return 33
		}
		return 20
	})
	cfg := backtest.Config{Start: fraction(0.3), Cadence: time.Hour, MergeDelay: 2 * time.Hour, Live: true}
	tl := backtest.Simulate(busy, recommended, cfg)
	require.Equal(t, 60*minute, tl.Changes[1].T, "live at the first run: %+v", tl.Changes)
	tl = backtest.Simulate(busy, guide, cfg)
	require.Equal(t, 180*minute, tl.Changes[1].T, "merged two hours after the first run: %+v", tl.Changes)
}

func TestFromUsage(t *testing.T) {
	w := usage.Workload{Step: time.Minute, Pods: []usage.Pod{
		{Name: "a", Allocation: 0.5, Series: map[usage.Metric][]usage.Sample{
			usage.Compute: {{T: 0, V: 10}, {T: minute, V: 30}},
			usage.Memory:  {{T: 0, V: 50}, {T: minute, V: math.NaN()}},
		}},
		{Name: "b", Series: map[usage.Metric][]usage.Sample{
			usage.Compute: {{T: 0, V: 20}, {T: 2 * minute, V: 5}},
			usage.Memory:  {{T: 0, V: 10}, {T: 2 * minute, V: 80}},
		}},
	}}
	// Memory is relative: pod a at its own 0.5, pod b (share unknown) at
	// the workload's 0.4.
	tr := backtest.FromUsage("w", w, map[usage.Metric]bool{usage.Memory: true}, 0.4)
	require.Equal(t, time.Minute, tr.Step)
	require.Equal(t, []usage.Sample{{T: 0, V: 20}, {T: minute, V: 30}, {T: 2 * minute, V: 5}}, tr.Compute)
	require.Equal(t, usage.Sample{T: 0, V: 25}, tr.Memory[0], "the hottest of 50% of 0.5 and 10% of 0.4")
	require.True(t, math.IsNaN(tr.Memory[1].V), "no pod reported memory then")
	require.InDelta(t, 32, tr.Memory[2].V, 1e-6)
}

// peakSeen keeps the allocation and notes the largest memory it is shown.
type peakSeen struct{ peak float64 }

func (p *peakSeen) Name() string { return "peak-seen" }
func (p *peakSeen) Decide(s backtest.State) backtest.Proposal {
	m, _, _ := usage.Peak(s.Past.Memory)
	p.peak = max(p.peak, m)
	return backtest.Proposal{Target: s.Current}
}

func TestOOMKill(t *testing.T) {
	// At a 0.5 share, memory demand is 20 % but 70 % from minute 10 to 14.
	tr := trace("w", 60, constant(10), func(i int) float64 {
		if i >= 10 && i < 15 {
			return 70
		}
		return 20
	})
	tests := []struct {
		name     string
		oomKill  bool
		restart  time.Duration
		kills    []int64 // minutes
		seenPeak float64
	}{
		{name: "no consequence: the demand is seen", seenPeak: 70},
		// Killed at 10; restarting until 12, held to the share; killed
		// again at 13, the first sample after, and restarting until 15.
		{name: "killed, restarting for 2 minutes", oomKill: true, restart: 2 * time.Minute, kills: []int64{10, 13}, seenPeak: 50},
		{name: "killed at every breach with an instant restart", oomKill: true, kills: []int64{10, 11, 12, 13, 14}, seenPeak: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := backtest.Config{Start: fraction(0.5), Cadence: time.Minute, OOMKill: tt.oomKill, Restart: tt.restart}
			s := &peakSeen{}
			tl := backtest.Simulate(tr, s, cfg)
			var kills []int64
			for _, k := range tl.OOMKills {
				require.Equal(t, fraction(0.5), k.Alloc)
				kills = append(kills, k.T/minute)
			}
			require.Equal(t, tt.kills, kills)
			require.InDelta(t, tt.seenPeak, s.peak, 1e-9)
			// The breach is scored on the demand, killed or not: 5
			// minutes, each 40 % over the share.
			sc := backtest.Evaluate(tr, tl)
			require.Equal(t, len(tt.kills), sc.OOMKills)
			require.InDelta(t, 5, sc.MemoryBreachMinutes, 1e-6)
			require.InDelta(t, 40, sc.MeanMemoryOvershootPercent(), 1e-6)
			require.InDelta(t, 40, sc.MaxMemoryOvershootPercent, 1e-6)
		})
	}
}
