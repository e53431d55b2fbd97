package backtest_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// recorder keeps every proposal a strategy makes, by run time.
type recorder struct {
	s   backtest.Strategy
	got map[int64]backtest.Proposal
}

func (r *recorder) Name() string { return r.s.Name() }
func (r *recorder) Decide(st backtest.State) backtest.Proposal {
	p := r.s.Decide(st)
	r.got[st.At] = p
	return p
}

// lookAhead replays base, then, for every run time t, a trace with the same
// past up to t and a random future, and reports the first decision at or
// before t that differs: a strategy that sees only the past decides the
// same whatever comes after. The strategy is built per trace so that a
// cheating one can hold the trace it is replayed on.
func lookAhead(base *backtest.Trace, build func(*backtest.Trace) backtest.Strategy, cfg backtest.Config, rng *rand.Rand) error {
	want := &recorder{s: build(base), got: map[int64]backtest.Proposal{}}
	backtest.Simulate(base, want, cfg)
	for cut := base.Start() + cfg.Cadence.Milliseconds(); cut <= base.End(); cut += cfg.Cadence.Milliseconds() {
		v := &backtest.Trace{Name: base.Name, Step: base.Step}
		for i := range base.Compute {
			c, m := base.Compute[i], base.Memory[i]
			if c.T > cut {
				c.V, m.V = 120*rng.Float64(), 120*rng.Float64()
			}
			v.Compute, v.Memory = append(v.Compute, c), append(v.Memory, m)
		}
		got := &recorder{s: build(v), got: map[int64]backtest.Proposal{}}
		backtest.Simulate(v, got, cfg)
		for at := base.Start() + cfg.Cadence.Milliseconds(); at <= cut; at += cfg.Cadence.Milliseconds() {
			if got.got[at] != want.got[at] {
				return fmt.Errorf("%s: the decision at %s changed with the future after %s: %+v, not %+v",
					want.Name(), time.Duration(at)*time.Millisecond, time.Duration(cut)*time.Millisecond, got.got[at], want.got[at])
			}
		}
	}
	return nil
}

// peekNext sizes for the peak so far and the next sample, which it reads
// from the whole trace it holds: the one-sample peek the test must catch.
type peekNext struct {
	full   *backtest.Trace
	bounds backtest.Bounds
}

func (peekNext) Name() string { return "peek-next" }
func (p peekNext) Decide(s backtest.State) backtest.Proposal {
	m, _, _ := usage.Peak(s.Past.Memory)
	if n := len(s.Past.Memory); n < len(p.full.Memory) {
		m = max(m, p.full.Memory[n].V)
	}
	return backtest.Proposal{Target: p.bounds.Apply(s.Current, m/100)}
}

// peekCapacity reslices the past it is given beyond its length, as a
// strategy could when the past was a sub-slice of the whole trace.
type peekCapacity struct {
	bounds backtest.Bounds
	peeked *int
}

func (peekCapacity) Name() string { return "peek-capacity" }
func (p peekCapacity) Decide(s backtest.State) backtest.Proposal {
	mem := s.Past.Memory
	m, _, _ := usage.Peak(mem)
	if cap(mem) > len(mem) {
		*p.peeked++
		m = max(m, mem[:len(mem)+1][len(mem)].V)
	}
	return backtest.Proposal{Target: p.bounds.Apply(s.Current, m/100)}
}

func TestNoLookAhead(t *testing.T) {
	bounds := backtest.Bounds{Ceiling: 1, Floor: 0.05, MinChangePercent: 5}
	govern := func(dir string, files ...string) policy.Governance {
		set, err := policy.Load(context.Background(), dir, files...)
		require.NoError(t, err)
		g := set.Govern(policy.Target{Ref: usage.Ref{Namespace: "b", Kind: "Deployment", Name: "w"}, Labels: map[string]string{"nvidia.com/gpu.present": "true"}})
		require.Empty(t, g.Skip)
		return g
	}
	guide := govern("../../examples/quickstart/policies")
	recommended := govern("../../examples/policies", "recommended.yaml")
	// Two days: compute swings, memory steps up on the second day and
	// spikes now and then, so that every strategy changes its mind.
	base := trace("w", 48*60, func(i int) float64 { return 10 + 30*math.Abs(math.Sin(float64(i)/300)) },
		func(i int) float64 {
			switch {
			case i%397 < 3:
				return 70
			case i > 30*60:
				return 45
			}
			return 25
		})
	cfg := backtest.Config{Start: fraction(0.6), Cadence: time.Hour, MergeDelay: 2 * time.Hour, Live: true, OOMKill: true, Restart: 2 * time.Minute}
	var peeked int
	tests := []struct {
		name  string
		build func(*backtest.Trace) backtest.Strategy
		peeks bool
	}{
		{name: "static", build: func(*backtest.Trace) backtest.Strategy { return backtest.Static{} }},
		{name: "engine, guide", build: func(*backtest.Trace) backtest.Strategy { return &backtest.Engine{Label: "guide", Governance: guide} }},
		{name: "engine, recommended", build: func(*backtest.Trace) backtest.Strategy {
			return &backtest.Engine{Label: "recommended", Governance: recommended}
		}},
		{name: "vpa", build: func(*backtest.Trace) backtest.Strategy { return backtest.VPA{Bounds: bounds} }},
		{name: "vpa-auto", build: func(*backtest.Trace) backtest.Strategy { return backtest.VPA{Bounds: bounds, Auto: true} }},
		{name: "krr-simple", build: func(*backtest.Trace) backtest.Strategy { return backtest.KRRSimple{Bounds: bounds} }},
		{name: "peak+15%", build: func(*backtest.Trace) backtest.Strategy { return backtest.PeakPlus15{Bounds: bounds} }},
		{name: "a peek through the capacity finds nothing", build: func(*backtest.Trace) backtest.Strategy {
			return peekCapacity{bounds: bounds, peeked: &peeked}
		}},
		{name: "a one-sample peek is caught", peeks: true, build: func(tr *backtest.Trace) backtest.Strategy {
			return peekNext{full: tr, bounds: bounds}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := lookAhead(base, tt.build, cfg, rand.New(rand.NewPCG(1, 2)))
			if tt.peeks {
				require.ErrorContains(t, err, "changed with the future")
				return
			}
			require.NoError(t, err)
		})
	}
	require.Zero(t, peeked, "the past handed to strategies must be clipped to its length")
}
