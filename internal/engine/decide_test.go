package engine_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// curve gives a metric's value at a time before the evaluation; return
// missing to leave a hole.
type curve func(ago time.Duration) float64

var missing = math.Inf(-1)

func flat(v float64) curve { return func(time.Duration) float64 { return v } }

// recent returns hot for the last d, else base.
func recent(d time.Duration, hot, base float64) curve {
	return func(ago time.Duration) float64 {
		if ago < d {
			return hot
		}
		return base
	}
}

// between returns v for samples whose age is in [from, to), else base.
func between(from, to time.Duration, v float64, base curve) curve {
	return func(ago time.Duration) float64 {
		if ago >= from && ago < to {
			return v
		}
		return base(ago)
	}
}

type podSpec struct {
	name            string
	age             time.Duration // the pod's age at the evaluation time
	until           time.Duration // its newest sample is this long before at
	live            bool
	compute, memory curve
}

// workload builds usage sampled every minute from each pod's start to its
// newest sample.
func workload(liveKnown bool, pods ...podSpec) usage.Workload {
	w := usage.Workload{Step: time.Minute, LiveKnown: liveKnown}
	for _, ps := range pods {
		p := usage.Pod{Name: ps.name, Live: ps.live, Start: at.Add(-ps.age).UnixMilli(), Series: map[usage.Metric][]usage.Sample{}}
		for ago := ps.age; ago >= ps.until; ago -= time.Minute {
			t := at.Add(-ago).UnixMilli()
			for m, c := range map[usage.Metric]curve{usage.Compute: ps.compute, usage.Memory: ps.memory} {
				if c == nil {
					continue
				}
				if v := c(ago); !math.IsInf(v, -1) {
					p.Series[m] = append(p.Series[m], usage.Sample{T: t, V: v})
				}
			}
		}
		w.Pods = append(w.Pods, p)
	}
	return w
}

// unattributed gives w pods that may be its own and count for none.
func unattributed(w usage.Workload, why ...string) usage.Workload {
	w.Unattributed = why
	return w
}

// byDevice marks every pod's series of w as its busiest device's.
func byDevice(w usage.Workload) usage.Workload {
	for i := range w.Pods {
		w.Pods[i].ByDevice = map[usage.Metric]bool{usage.Compute: true, usage.Memory: true}
	}
	return w
}

// partial marks w as a source's partial answer.
func partial(w usage.Workload, why string) usage.Workload {
	w.Partial = why
	return w
}

func pod(name string, age time.Duration, compute, memory curve) podSpec {
	return podSpec{name: name, age: age, live: true, compute: compute, memory: memory}
}

// starter returns the governance the quickstart's starter policies give a
// labelled GPU Deployment, loaded from the file itself.
func starter(t *testing.T) engine.Rules {
	t.Helper()
	set, err := policy.Load(context.Background(), filepath.Dir(starterPath))
	require.NoError(t, err)
	g := set.Govern(policy.Target{
		Ref:    usage.Ref{Namespace: "inference", Kind: "Deployment", Name: "chat"},
		Labels: map[string]string{"nvidia.com/gpu.present": "true"},
	})
	require.Empty(t, g.Skip)
	return g.Rules
}

// starterPath is the quickstart's policy file, in the shape of the Kubex
// guide's starter example.
const starterPath = "../../examples/quickstart/policies/kai-gpu-sharing.yaml"

func fraction(v float64) engine.Allocation { return engine.Allocation{Form: engine.Fraction, GPUs: v} }
func whole(n float64) engine.Allocation    { return engine.Allocation{Form: engine.WholeGPUs, GPUs: n} }

func TestDecide(t *testing.T) {
	base := starter(t)
	with := func(f func(g *engine.Rules)) engine.Rules {
		g := base
		st := *base.Strategy
		g.Strategy = &st
		f(&g)
		return g
	}
	noProactive := with(func(g *engine.Rules) { g.Proactive = nil })
	proactiveOnly := with(func(g *engine.Rules) { g.Reactive = nil })
	// reactive copies the reactive rules deeply before f changes them.
	reactive := func(f func(r *engine.ReactiveRules)) engine.Rules {
		return with(func(g *engine.Rules) {
			r := *g.Reactive
			r.Metrics = map[usage.Metric]*engine.MetricRules{}
			for m, mr := range g.Reactive.Metrics {
				c := *mr
				up, sb := *mr.Upsize, *mr.ScaleBack
				c.Upsize, c.ScaleBack = &up, &sb
				r.Metrics[m] = &c
			}
			f(&r)
			g.Reactive = &r
		})
	}
	computeP90 := with(func(g *engine.Rules) {
		p := *g.Proactive
		p.ComputePercentile = 90
		g.Proactive = &p
	})
	// recommendedProactive is the proactive policy of
	// examples/policies/recommended.yaml: memory remembered 14 days, its
	// headroom widened while the history is short, a downsize after 6h.
	recommendedProactive := with(func(g *engine.Rules) {
		p := *g.Proactive
		p.MinHistory, p.MemoryWindow, p.MemoryConfidenceHeadroomPercent = 6*time.Hour, 14*day, 100
		g.Proactive = &p
	})
	// recommendedWith is recommendedProactive with one more setting.
	recommendedWith := func(f func(p *engine.ProactiveRules)) engine.Rules {
		g := recommendedProactive
		p := *g.Proactive
		f(&p)
		g.Proactive = &p
		return g
	}
	dailyPeaks := func(q int) engine.Rules {
		return recommendedWith(func(p *engine.ProactiveRules) { p.MemoryDailyPeakPercentile = q })
	}
	risk := func(r int) engine.Rules {
		return recommendedWith(func(p *engine.ProactiveRules) { p.BreachRiskPercent = r })
	}
	confidenceOver := func(d time.Duration) engine.Rules {
		return recommendedWith(func(p *engine.ProactiveRules) { p.MemoryConfidenceWindow = d })
	}
	tests := []struct {
		name       string
		governance engine.Rules
		current    engine.Allocation
		usage      usage.Workload
		// want* are checked when set.
		action      engine.Action
		recommended engine.Allocation
		urgent      bool
		rule        string
		reason      string // exact, when set
		contains    string // substring of the reason
		cause       engine.Cause
	}{
		{
			name:    "reactive upsize on compute",
			current: fraction(0.5),
			usage:   workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 60, 20), flat(50))),
			action:  engine.Upsize, recommended: fraction(0.72), urgent: true, rule: "reactive upsize (compute)",
			reason: "compute peaked at 120% of its 0.50 allocation over 2m (≥ 100%) → 0.60 × 1.2 = 0.72",
		},
		{
			name:    "upsize capped at maxPercent",
			current: fraction(0.25),
			usage:   workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 60, 10), flat(50))),
			action:  engine.Upsize, recommended: fraction(0.5), urgent: true,
			contains: "→ 0.60 × 1.2 = 0.72, capped at maxPercent 200% = 0.50",
		},
		{
			name:    "upsize past the ceiling becomes one whole GPU",
			current: fraction(0.6),
			usage:   workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 90, 20), flat(50))),
			action:  engine.Upsize, recommended: whole(1), urgent: true,
			contains: "clamped to the ceiling 1; moves from gpu-fraction to nvidia.com/gpu",
		},
		{
			name:    "memory upsize in percent of the allocation",
			current: fraction(0.4),
			usage:   workload(false, pod("chat-1", 2*day, flat(10), recent(time.Minute, 110, 50))),
			action:  engine.Upsize, recommended: fraction(0.53), urgent: true, rule: "reactive upsize (memory)",
			reason: "memory peaked at 110% of its 0.40 allocation over 2m (≥ 100%) → 0.44 × 1.2 = 0.528; 0.53 in KAI's 0.01 steps",
		},
		{
			name:    "upsize acts on partial data",
			current: fraction(0.5),
			usage:   workload(false, podSpec{name: "chat-1", age: 2 * day, until: 0, live: true, compute: recent(time.Minute, 60, missing)}),
			action:  engine.Upsize, recommended: fraction(0.72), urgent: true,
		},
		{
			name:       "upsize not allowed by the strategy",
			governance: with(func(g *engine.Rules) { g.Strategy.Upsize = false }),
			current:    fraction(0.5),
			usage:      workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 60, 20), flat(50))),
			action:     engine.NoChange, recommended: fraction(0.5), cause: engine.CauseNotAllowed,
			contains: "but the strategy does not allow upsizes (enablement.gpu.requests.upsize)",
		},
		{
			name:    "weekly peak above the allocation is a non-urgent upsize",
			current: fraction(0.5),
			usage:   workload(false, pod("chat-1", 4*day, between(3*day, 3*day+time.Hour, 55, flat(20)), flat(50))),
			action:  engine.Upsize, recommended: fraction(0.66), urgent: false, rule: "proactive baseline",
			reason: "7d baseline is above the allocation: compute peaked at 0.55 GPU over 4d of history → 0.55 × 1.2 = 0.66 (compute peak 0.55, memory peak 0.25)",
		},
		{
			name:    "scale-back to the baseline",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, flat(20), flat(40))),
			action:  engine.ScaleBack, recommended: fraction(0.29), rule: "scale-back to baseline",
			reason: "7d baseline memory peaked at 0.24 GPU over 2d of history → 0.24 × 1.2 = 0.288 (compute peak 0.20, memory peak 0.24); " +
				"compute stayed below 75% for 10m (peak 33%); memory stayed below 75% for 10m (peak 40%); 0.29 in KAI's 0.01 steps",
		},
		{
			name:       "compute sized on a percentile instead of the peak",
			governance: computeP90,
			current:    fraction(0.6),
			// Compute at 20% of a GPU but for one hour at 45%; memory 10% of
			// 0.6. The p90 ignores the busy hour (2% of two days).
			usage:  workload(false, pod("sum-1", 2*day, between(day, day+time.Hour, 45, flat(20)), flat(10))),
			action: engine.ScaleBack, recommended: fraction(0.24),
			contains: "7d baseline compute p90 was 0.20 GPU over 2d of history → 0.20 × 1.2 = 0.24 (compute p90 0.20, memory peak 0.06)",
		},
		{
			name:       "memory's headroom widens while its history is short",
			governance: recommendedProactive,
			current:    fraction(0.6),
			// Memory 0.24 GPU over 2 days: 5/7 of the 100% confidence
			// headroom is added, 71.4% (over the 7-day window, though
			// memory is kept 14 days), on top of 20%: 0.24 × 1.914 =
			// 0.4594. Compute has only its own 20%.
			usage:  workload(false, pod("sum-1", 2*day, flat(20), flat(40))),
			action: engine.ScaleBack, recommended: fraction(0.46), rule: "scale-back to baseline",
			reason: "7d baseline memory peaked at 0.24 GPU over 2d of history (its window is 14d) → 0.24 × 1.914 " +
				"(headroom 20% + 71.4% while the history is shorter than 7d) = 0.459 (compute peak 0.20, memory peak 0.24); " +
				"compute stayed below 75% for 10m (peak 33%); memory stayed below 75% for 10m (peak 40%); 0.46 in KAI's 0.01 steps",
		},
		{
			name:       "memory's peak is remembered over its longer window",
			governance: recommendedProactive,
			current:    fraction(0.6),
			// A memory burst 10 days ago, past the 7-day window but within
			// memory's 14 days: 0.42 × 1.2 = 0.504, no confidence headroom
			// over a full history. Under the 7-day window alone the
			// baseline would be 0.24 × 1.2.
			usage:  workload(false, pod("sum-1", 15*day, flat(20), between(10*day, 10*day+time.Hour, 70, flat(40)))),
			action: engine.ScaleBack, recommended: fraction(0.51),
			contains: "7d baseline memory peaked at 0.42 GPU over 14d → 0.42 × 1.2 = 0.504",
		},
		{
			name:       "a downsize after 6h of history, with memory's widened headroom",
			governance: recommendedProactive,
			current:    whole(1),
			// 12h of 7d: 92.9% added to memory's 20%; 0.2 × 2.129 = 0.4258.
			usage:  workload(false, pod("sum-1", 12*time.Hour, flat(20), flat(20))),
			action: engine.ScaleBack, recommended: fraction(0.43),
			contains: "memory peaked at 0.20 GPU over 12h of history (its window is 14d) → 0.20 × 2.129 (headroom 20% + 92.9% while the history is shorter than 7d) = 0.426",
		},
		{
			name:       "memory on the daily peaks: one burst is one day of fourteen",
			governance: dailyPeaks(90),
			current:    fraction(0.6),
			// The burst of the case above, 10 days ago. The 14 daily peaks
			// are 0.24 thirteen times and 0.42 once; p90 is the 13th of 14
			// (⌈12.6⌉): 0.24 × 1.2 = 0.288, above compute's 0.20 × 1.2.
			usage:  workload(false, pod("sum-1", 15*day, flat(20), between(10*day, 10*day+time.Hour, 70, flat(40)))),
			action: engine.ScaleBack, recommended: fraction(0.29),
			contains: "7d baseline memory p90 of 14 daily peaks was 0.24 GPU over 14d → 0.24 × 1.2 = 0.288 " +
				"(compute peak 0.20, memory p90 of daily peaks 0.24)",
		},
		{
			name:       "memory on the daily peaks: p95 of fourteen is the highest",
			governance: dailyPeaks(95),
			current:    fraction(0.6),
			// ⌈13.3⌉ = 14: the burst day, as the window's peak.
			usage:  workload(false, pod("sum-1", 15*day, flat(20), between(10*day, 10*day+time.Hour, 70, flat(40)))),
			action: engine.ScaleBack, recommended: fraction(0.51),
			contains: "memory p95 of 14 daily peaks was 0.42 GPU over 14d → 0.42 × 1.2 = 0.504",
		},
		{
			name:       "memory on the daily peaks: the second burst is the forecast",
			governance: dailyPeaks(90),
			current:    fraction(0.6),
			// Bursts to 0.42 ten days ago and to 0.36 three days ago: the
			// 13th of 14 daily peaks is 0.36; 0.36 × 1.2 = 0.432.
			usage: workload(false, pod("sum-1", 15*day, flat(20),
				between(10*day, 10*day+time.Hour, 70, between(3*day, 3*day+time.Hour, 60, flat(40))))),
			action: engine.ScaleBack, recommended: fraction(0.44),
			contains: "memory p90 of 14 daily peaks was 0.36 GPU over 14d → 0.36 × 1.2 = 0.432",
		},
		{
			name:       "memory on the daily peaks: days are counted back from the run",
			governance: dailyPeaks(90),
			current:    fraction(0.6),
			// One hour at 0.42 from 3 days 30 minutes to 2 days 23h30 ago
			// falls in two days counted back from the run: the 13th of 14
			// daily peaks is 0.42.
			usage:  workload(false, pod("sum-1", 15*day, flat(20), between(3*day-30*time.Minute, 3*day+30*time.Minute, 70, flat(40)))),
			action: engine.ScaleBack, recommended: fraction(0.51),
			contains: "memory p90 of 14 daily peaks was 0.42 GPU over 14d → 0.42 × 1.2 = 0.504",
		},
		{
			name:       "memory on the daily peaks: under a day of history, that day's peak",
			governance: dailyPeaks(50),
			current:    whole(1),
			// As "a downsize after 6h of history" above: one daily peak.
			usage:  workload(false, pod("sum-1", 12*time.Hour, flat(20), flat(20))),
			action: engine.ScaleBack, recommended: fraction(0.43),
			contains: "memory p50 of 1 daily peak was 0.20 GPU over 12h of history (its window is 14d) → 0.20 × 2.129 " +
				"(headroom 20% + 92.9% while the history is shorter than 7d) = 0.426",
		},
		{
			name:       "breach risk: the hour ranked for it, without headroom",
			governance: risk(5),
			current:    fraction(0.6),
			// Compute: 168 hours, one of them at 0.50. The hour ranked
			// ⌈0.95 × 169⌉ = 161 from the lowest peaks at 0.20: the share
			// itself. Memory: 0.20 × 0.6 = 0.12 in each of 336 hours. The
			// last half hour is quiet, so the scale-back's own target
			// (0.10 × 1.2) is lower.
			usage:  workload(false, pod("sum-1", 15*day, between(2*day, 2*day+time.Hour, 50, recent(30*time.Minute, 10, 20)), flat(20))),
			action: engine.ScaleBack, recommended: fraction(0.2), rule: "scale-back to baseline",
			contains: "7d baseline compute's hourly peak ranked 161 of 168 (a breach risk of 5% an hour) was 0.20 GPU over 7d → 0.20 × 1 = 0.20 " +
				"(compute hourly peak (rank 161 of 168) 0.20, memory hourly peak (rank 321 of 336) 0.12)",
		},
		{
			name:       "breach risk: ten hours at 0.50 are more than 5 % can leave out",
			governance: risk(5),
			current:    fraction(0.6),
			// Ten burst hours: the 161st of 168 hourly peaks is one of them.
			usage:  workload(false, pod("sum-1", 15*day, between(2*day, 2*day+10*time.Hour, 50, recent(30*time.Minute, 10, 20)), flat(20))),
			action: engine.ScaleBack, recommended: fraction(0.5),
			contains: "compute's hourly peak ranked 161 of 168 (a breach risk of 5% an hour) was 0.50 GPU",
		},
		{
			name:       "breach risk: at 10 % they are left out",
			governance: risk(10),
			current:    fraction(0.6),
			// ⌈0.90 × 169⌉ = 153: below the ten.
			usage:  workload(false, pod("sum-1", 15*day, between(2*day, 2*day+10*time.Hour, 50, recent(30*time.Minute, 10, 20)), flat(20))),
			action: engine.ScaleBack, recommended: fraction(0.2),
			contains: "compute's hourly peak ranked 153 of 168 (a breach risk of 10% an hour) was 0.20 GPU",
		},
		{
			name:       "breach risk: too few hours for it, the fixed margins",
			governance: risk(5),
			current:    whole(1),
			// 12 hours cannot give 5 % (⌈0.95 × 13⌉ = 13 > 12): the
			// recommended policy's margins size it, as without the knob.
			usage:  workload(false, pod("sum-1", 12*time.Hour, flat(20), flat(20))),
			action: engine.ScaleBack, recommended: fraction(0.43),
			contains: "memory peaked at 0.20 GPU over 12h of history (its window is 14d) → 0.20 × 2.129 " +
				"(headroom 20% + 92.9% while the history is shorter than 7d) = 0.426",
		},
		{
			name:       "memory on the daily peaks: no sample, no day",
			governance: dailyPeaks(90),
			current:    fraction(0.6),
			// Compute reports, memory never did: no daily peak to take.
			usage:  workload(false, pod("sum-1", 15*day, flat(20), nil)),
			action: engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataIncomplete,
			contains: "no memory samples in the last 14d",
		},
		{
			name:       "memory's confidence headroom over a shorter window",
			governance: confidenceOver(2 * day),
			current:    fraction(0.6),
			// One day of history of two: 50% added to memory's 20%;
			// 0.24 × 1.7 = 0.408.
			usage:  workload(false, pod("sum-1", day, flat(20), flat(40))),
			action: engine.ScaleBack, recommended: fraction(0.41),
			contains: "memory peaked at 0.24 GPU over 1d of history (its window is 14d) → 0.24 × 1.7 " +
				"(headroom 20% + 50% while the history is shorter than 2d) = 0.408",
		},
		{
			name:       "memory's confidence headroom is gone past its window",
			governance: confidenceOver(2 * day),
			current:    fraction(0.6),
			// Three days of history, more than the two: 20% only, where
			// the 7-day window would still add 57.1%.
			usage:  workload(false, pod("sum-1", 3*day, flat(20), flat(40))),
			action: engine.ScaleBack, recommended: fraction(0.29),
			contains: "memory peaked at 0.24 GPU over 3d of history (its window is 14d) → 0.24 × 1.2 = 0.288",
		},
		{
			name:    "scale-back never goes below the baseline",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, flat(20), between(day, day+time.Hour, 70, flat(40)))),
			action:  engine.ScaleBack, recommended: fraction(0.51),
			contains: "memory peaked at 0.42 GPU",
		},
		{
			name:    "a reactive window above its threshold blocks a scale-back",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, flat(20), recent(5*time.Minute, 80, 40))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseFits,
			reason: "no change: memory reached 80% of the allocation in the last 10m (a scale-back needs it below 75%)",
		},
		{
			name:    "a gap in the scale-back window blocks it",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, between(3*time.Minute, 8*time.Minute, missing, flat(20)), flat(40))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataIncomplete,
			contains: "no change: incomplete data in the window",
		},
		{
			name:    "a partial answer blocks a scale-back",
			current: fraction(0.6),
			usage:   partial(workload(false, pod("sum-1", 2*day, flat(20), flat(40))), "store eu-2 did not answer"),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataIncomplete,
			reason: "no change: incomplete data: the usage source's answer may be partial (store eu-2 did not answer), and a scale-back needs all of it",
		},
		{
			name:    "a partial answer still upsizes",
			current: fraction(0.5),
			usage:   partial(workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 60, 20), flat(50))), "store eu-2 did not answer"),
			action:  engine.Upsize, recommended: fraction(0.72), urgent: true,
		},
		{
			name:    "a pod that counts for no workload blocks a scale-back, and is named",
			current: fraction(0.6),
			usage: unattributed(workload(false, pod("sum-1", 2*day, flat(20), flat(40))),
				"pod ml/sum-7d9f8c6b5d-x2b4z counts for no workload: its name fits Deployments sum, sum-fast alike", "pod ml/sum-2 counts for no workload"),
			action: engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataIncomplete,
			reason: "no change: incomplete data: pod ml/sum-7d9f8c6b5d-x2b4z counts for no workload: its name fits Deployments sum, sum-fast alike (and 1 more), and a scale-back needs every pod of the workload",
		},
		{
			name:    "a pod that counts for no workload: an upsize still acts, and says so",
			current: fraction(0.5),
			usage:   unattributed(workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 60, 20), flat(50))), "pod ml/chat-2 counts for no workload"),
			action:  engine.Upsize, recommended: fraction(0.72), urgent: true,
			contains: "; not counted: pod ml/chat-2 counts for no workload",
		},
		{
			name:    "a workload whose only pod counts for no workload has no data, and says why",
			current: fraction(0.5),
			usage:   unattributed(usage.Workload{}, "pod ml/chat-2 counts for no workload"),
			action:  engine.NoChange, recommended: fraction(0.5), cause: engine.CauseDataIncomplete,
			contains: "; not counted: pod ml/chat-2 counts for no workload",
		},
		{
			name:       "without a baseline there is no scale-back",
			governance: noProactive,
			current:    fraction(0.6),
			usage:      workload(false, pod("sum-1", 2*day, flat(20), flat(40))),
			action:     engine.NoChange, recommended: fraction(0.6), cause: engine.CauseNoBaseline,
			reason: "no change: compute stayed below 75% for 10m (peak 33%); memory stayed below 75% for 10m (peak 40%), but without a proactive baseline there is no scale-back",
		},
		{
			name:    "a downsize needs a day of history",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 10*time.Hour, flat(20), flat(40))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataIncomplete,
			reason: "no change: incomplete data in the window: a downsize needs 1d of compute history, and it has 10h",
		},
		{
			name:       "downsize not allowed by the strategy",
			governance: with(func(g *engine.Rules) { g.Strategy.Downsize = false }),
			current:    fraction(0.6),
			usage:      workload(false, pod("sum-1", 2*day, flat(20), flat(40))),
			action:     engine.NoChange, recommended: fraction(0.6), cause: engine.CauseNotAllowed,
			contains: "but the strategy does not allow downsizes (enablement.gpu.requests.downsize)",
		},
		{
			name:    "a scale-back stops at the floor",
			current: fraction(0.3),
			usage:   workload(false, pod("idle-1", 2*day, flat(1), flat(4))),
			action:  engine.ScaleBack, recommended: fraction(0.05),
			contains: "raised to the floor 0.05",
		},
		{
			name:       "changes below the minimum are dropped",
			governance: proactiveOnly,
			current:    fraction(0.3),
			usage:      workload(false, pod("sum-1", 2*day, flat(24), flat(40))),
			action:     engine.NoChange, recommended: fraction(0.3), cause: engine.CauseBelowMinChange,
			contains: "0.30 → 0.29 is below the minimum change (5%)",
		},
		{
			name:    "pods younger than minPodMetricsAge are not judged",
			current: fraction(0.5),
			usage:   workload(false, pod("new-1", 5*time.Minute, flat(90), flat(120))),
			action:  engine.NoChange, recommended: fraction(0.5), cause: engine.CauseTooYoung,
			reason: "no change: pod too young to judge: 1 pod(s), the oldest 5m old, below minPodMetricsAge 10m",
		},
		{
			name:    "a young hot pod does not upsize, and a downsize waits for it",
			current: fraction(0.5),
			usage: workload(false,
				pod("chat-old", 2*day, flat(20), flat(50)),
				pod("chat-new", 3*time.Minute, flat(90), flat(150))),
			action: engine.NoChange, recommended: fraction(0.5), cause: engine.CauseTooYoung,
			reason: "no change: pod chat-new is younger than minPodMetricsAge 10m: a downsize waits until it can be judged",
		},
		{
			name:    "stale data changes nothing",
			current: fraction(0.6),
			usage:   workload(false, podSpec{name: "sum-1", age: 2 * day, until: time.Hour, compute: flat(20), memory: flat(40)}),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataStale,
			reason: "no change: stale data: the newest sample is 1h old",
		},
		{
			name:    "NaN samples never shrink",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, flat(20), between(0, 5*time.Minute, math.NaN(), flat(40)))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataInvalid,
			reason: "no change: invalid data in the window: pod sum-1 reported 5 NaN, infinite, negative or out-of-range memory sample(s) in the last 7d, and a scale-back relies on that window",
		},
		{
			// Every other scrape missing is tolerated; every other value
			// NaN is a broken exporter, and must not look the same.
			name:    "every other sample NaN for a day blocks a scale-back",
			current: fraction(0.6),
			usage: workload(false, pod("sum-1", 2*day, flat(20), func(ago time.Duration) float64 {
				if ago < day && ago/time.Minute%2 == 0 {
					return math.NaN()
				}
				return 40
			})),
			action: engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataInvalid,
			contains: "reported 720 NaN, infinite, negative or out-of-range memory sample(s) in the last 7d",
		},
		{
			name:    "one NaN two minutes ago blocks a scale-back",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, between(2*time.Minute, 3*time.Minute, math.NaN(), flat(20)), flat(40))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataInvalid,
			contains: "pod sum-1 reported 1 NaN, infinite, negative or out-of-range compute sample(s)",
		},
		{
			// 1e308 percent is finite, but no reading: taken as one, the
			// target overflowed and the reason read "+Inf GPU".
			name:    "an out-of-range sample is invalid, never a target",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, between(0, time.Minute, 1e308, flat(20)), flat(40))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataInvalid,
			contains: "pod sum-1 reported 1 NaN, infinite, negative or out-of-range compute sample(s)",
		},
		{
			name:    "a negative sample blocks a scale-back",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, flat(20), between(3*time.Hour, 3*time.Hour+time.Minute, -5, flat(40)))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataInvalid,
		},
		{
			// The baseline is the peak of the week: an invalid value on
			// day 2 may stand where the peak was.
			name:    "an invalid sample anywhere in the baseline's window blocks a downsize",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 2*day, flat(20), between(30*time.Hour, 30*time.Hour+time.Minute, math.Inf(1), flat(40)))),
			action:  engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataInvalid,
			contains: "reported 1 NaN, infinite, negative or out-of-range memory sample(s) in the last 7d",
		},
		{
			name:    "an invalid sample older than every window is only a missing one",
			current: fraction(0.6),
			usage:   workload(false, pod("sum-1", 8*day, flat(20), between(7*day+time.Hour, 7*day+time.Hour+time.Minute, math.Inf(1), flat(40)))),
			action:  engine.ScaleBack, recommended: fraction(0.29), rule: "scale-back to baseline",
		},
		{
			name:    "the hottest pod decides",
			current: fraction(0.5),
			usage: workload(false,
				pod("chat-a", 2*day, flat(20), flat(50)),
				pod("chat-b", 2*day, recent(2*time.Minute, 60, 20), flat(50))),
			action: engine.Upsize, recommended: fraction(0.72), urgent: true,
		},
		{
			name:       "a pod of two GPUs read by device: the busiest device decides for both",
			governance: with(func(g *engine.Rules) { g.Strategy.MoveToKAI, g.Strategy.Ceiling = false, 8 }),
			current:    whole(2),
			usage:      byDevice(workload(false, pod("tp-1", 2*day, recent(2*time.Minute, 100, 40), flat(30)))),
			action:     engine.Upsize, recommended: whole(3), urgent: true,
			contains: "compute peaked at 100% of its 2.00 allocation over 2m (≥ 100%) → 2.00 × 1.2 = 2.40",
		},
		{
			name:       "a pod of two GPUs whose devices were added up: 100 % of one GPU is half of two",
			governance: with(func(g *engine.Rules) { g.Strategy.MoveToKAI, g.Strategy.Ceiling = false, 8 }),
			current:    whole(2),
			usage:      workload(false, pod("tp-1", 2*day, recent(2*time.Minute, 100, 40), flat(30))),
			action:     engine.NoChange, recommended: whole(2), cause: engine.CauseBelowMinChange,
		},
		{
			name:    "mixed data changes nothing, whichever way it points",
			current: fraction(0.5),
			usage: func() usage.Workload {
				w := workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 90, 20), flat(50)))
				w.Mixed = "pod chat-1 has series in two clusters"
				return w
			}(),
			action: engine.NoChange, recommended: fraction(0.5), cause: engine.CauseDataMixed,
			reason: "no change: mixed data: pod chat-1 has series in two clusters",
		},
		{
			name:    "a running pod without samples blocks a scale-back",
			current: fraction(0.6),
			usage: workload(true,
				pod("sum-a", 2*day, flat(20), flat(40)),
				podSpec{name: "sum-b", age: 2 * day, live: true}),
			action: engine.NoChange, recommended: fraction(0.6), cause: engine.CauseDataIncomplete,
			contains: "incomplete data in the window",
		},
		{
			name:       "whole GPUs stay whole without KAI",
			governance: with(func(g *engine.Rules) { g.Strategy.MoveToKAI = false }),
			current:    whole(1),
			usage:      workload(false, pod("asr-1", 2*day, flat(20), flat(24))),
			action:     engine.NoChange, recommended: whole(1), cause: engine.CauseBelowMinChange,
			contains: "as nvidia.com/gpu that stays 1 GPU",
		},
		{
			name:    "a whole GPU moves to a KAI fraction",
			current: whole(1),
			usage:   workload(false, pod("asr-1", 2*day, flat(20), flat(24))),
			action:  engine.ScaleBack, recommended: fraction(0.29),
			contains: "moves from nvidia.com/gpu to gpu-fraction",
		},
		{
			name:    "relative usage is read against each pod's own share",
			current: fraction(0.6),
			// The old pod ran at 0.3 and used 80% of it; the new one, at
			// 0.6, uses 40%: both are 0.24 GPU (not 0.48, as the old pod's
			// 80% of the current 0.6 would read).
			usage: func() usage.Workload {
				w := workload(true,
					podSpec{name: "old", age: 2 * day, until: time.Hour, compute: flat(10), memory: flat(80)},
					pod("new", time.Hour, flat(10), flat(40)))
				w.Pods[0].Allocation, w.Pods[1].Allocation = 0.3, 0.6
				return w
			}(),
			action: engine.ScaleBack, recommended: fraction(0.29),
			contains: "memory peaked at 0.24 GPU over 2d of history → 0.24 × 1.2 = 0.288",
		},
		{
			name:    "after a rollout the running pod is too young",
			current: fraction(0.6),
			usage: workload(true,
				podSpec{name: "old", age: 2 * day, until: 5 * time.Minute, compute: flat(10), memory: flat(40)},
				pod("new", 5*time.Minute, flat(10), flat(40))),
			action: engine.NoChange, recommended: fraction(0.6), cause: engine.CauseTooYoung,
			reason: "no change: pod too young to judge: 1 pod(s), the oldest 5m old, below minPodMetricsAge 10m",
		},
		{
			name: "an upsize rule that asks for less is no upsize",
			governance: reactive(func(r *engine.ReactiveRules) {
				r.Metrics[usage.Compute].Upsize.ThresholdPercent = 50
				r.Metrics[usage.Compute].Upsize.HeadroomPercent = 0
			}),
			current: fraction(0.5),
			usage:   workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 30, 20), flat(50))),
			// 60% reaches the threshold of 50, but 0.30 × 1.0 is below 0.50:
			// the quiet week decides instead.
			action: engine.ScaleBack, recommended: fraction(0.36),
			contains: "7d baseline compute peaked at 0.30 GPU",
		},
		{
			name:    "pressure now keeps a bigger baseline upsize urgent, and says both",
			current: fraction(0.5),
			usage: workload(false, pod("chat-1", 4*day,
				between(0, 2*time.Minute, 55, between(3*day, 3*day+time.Hour, 65, flat(20))), flat(50))),
			action: engine.Upsize, recommended: fraction(0.78), urgent: true, rule: "proactive baseline",
			contains: "7d baseline is above the allocation: compute peaked at 0.65 GPU over 4d of history → 0.65 × 1.2 = 0.78 " +
				"(compute peak 0.65, memory peak 0.25); and now compute peaked at 110% of its 0.50 allocation",
		},
		{
			name:       "a scale-back never cuts below usage to meet the ceiling",
			governance: with(func(g *engine.Rules) { g.Strategy.Ceiling = 0.5 }),
			current:    fraction(0.9),
			usage:      workload(false, pod("big-1", 2*day, flat(20), flat(70))),
			action:     engine.NoChange, recommended: fraction(0.9), cause: engine.CauseAtBound,
			contains: "that is above the ceiling 0.5, and a scale-back to the ceiling would cut below measured usage",
		},
		{
			name:       "an upsize below the floor goes to the floor",
			governance: with(func(g *engine.Rules) { g.Strategy.Floor = 0.1 }),
			current:    fraction(0.02),
			usage:      workload(false, pod("tiny-1", 2*day, recent(2*time.Minute, 3, 1), flat(50))),
			action:     engine.Upsize, recommended: fraction(0.1), urgent: true,
			contains: "raised to the floor 0.1",
		},
		{
			name: "a policy that watches only compute still sizes on memory",
			governance: reactive(func(r *engine.ReactiveRules) {
				delete(r.Metrics, usage.Memory)
			}),
			current: fraction(0.5),
			usage:   workload(false, pod("chat-1", 2*day, flat(10), flat(90))),
			action:  engine.Upsize, recommended: fraction(0.54), // not 0.12 from compute alone
			contains: "memory peaked at 0.45 GPU",
		},
		{
			name:    "no data at all",
			current: fraction(0.5),
			usage:   usage.Workload{},
			action:  engine.NoChange, recommended: fraction(0.5), cause: engine.CauseDataIncomplete,
			reason: "no change: no usage data in the last 7d",
		},
		{
			name:    "no GPU request",
			current: engine.Allocation{Form: engine.NoGPU},
			action:  engine.Skipped, recommended: engine.Allocation{Form: engine.NoGPU}, cause: engine.CauseNotAllowed,
			reason: "no GPU request (setFromUnspecified is false)",
		},
		{
			name:    "gpu-memory requests without the GPU's memory",
			current: engine.Allocation{Form: engine.GPUMemory, MiB: 40960},
			action:  engine.Skipped, recommended: engine.Allocation{Form: engine.GPUMemory, MiB: 40960}, cause: engine.CauseUnsupported,
			reason: "requests GPU memory (gpu-memory) but the GPU's memory is unknown: set spec.kai.gpuMemoryMiB in its strategy",
		},
		{
			// 40960 of 81920 MiB is 0.5 of the GPU; 0.72 of it is
			// 58982.4 MiB, rounded up to the MiB.
			name:       "gpu-memory upsize in whole MiB",
			governance: with(func(g *engine.Rules) { g.Strategy.GPUMemoryMiB = 81920 }),
			current:    engine.Allocation{Form: engine.GPUMemory, GPUs: 0.5, MiB: 40960},
			usage:      workload(false, podSpec{name: "chat-1", age: 2 * day, until: 0, live: true, compute: recent(time.Minute, 60, missing)}),
			action:     engine.Upsize, recommended: engine.Allocation{Form: engine.GPUMemory, GPUs: 58983.0 / 81920, MiB: 58983}, urgent: true,
		},
		{
			name:       "gpu-memory never beyond one GPU",
			governance: with(func(g *engine.Rules) { g.Strategy.GPUMemoryMiB = 81920 }),
			current:    engine.Allocation{Form: engine.GPUMemory, GPUs: 0.75, MiB: 61440},
			usage:      workload(false, pod("chat-1", 2*day, recent(2*time.Minute, 95, 20), flat(50))),
			action:     engine.Upsize, recommended: engine.Allocation{Form: engine.GPUMemory, GPUs: 1, MiB: 81920}, urgent: true,
		},
		{
			name:       "no strategy",
			governance: engine.Rules{Proactive: base.Proactive},
			current:    fraction(0.5),
			action:     engine.Skipped, recommended: fraction(0.5), cause: engine.CausePolicyInvalid,
			reason: "left alone: no strategy governs it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.governance
			if g.Strategy == nil && g.Proactive == nil {
				g = base
			}
			d := engine.Decide(engine.Input{At: at, Current: tt.current, Rules: g, Usage: tt.usage})
			require.Equal(t, tt.action, d.Action, d.Reason())
			require.Equal(t, tt.recommended.Form, d.Recommended.Form, d.Reason())
			require.InDelta(t, tt.recommended.GPUs, d.Recommended.GPUs, 1e-6, d.Reason())
			require.Equal(t, tt.recommended.MiB, d.Recommended.MiB, d.Reason())
			require.Equal(t, tt.urgent, d.Urgent)
			if tt.rule != "" {
				require.Equal(t, tt.rule, d.Rule)
			}
			if tt.reason != "" {
				require.Equal(t, tt.reason, d.Reason())
			}
			require.Contains(t, d.Reason(), tt.contains)
			require.Equal(t, tt.current, d.Current)
			require.Equal(t, tt.cause, d.Cause, d.Reason())
			if d.Action.Changes() {
				require.NotNil(t, d.Evidence.Proposal, "a change names its proposal")
				require.Equal(t, d.Rule, d.Evidence.Proposal.String())
			}
		})
	}
}

// TestPercentile: the nearest-rank percentile of the linear-time selection
// is the one a sort gives, on runs of equal values and sorted input too.
func TestPercentile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vals := rapid.SliceOfN(rapid.SampledFrom([]float64{0, 1, 2, 2, 3, 50, 99.5, 100}), 1, 200).Draw(t, "values")
		if rapid.Bool().Draw(t, "sorted") {
			slices.Sort(vals)
		}
		q := rapid.IntRange(1, 100).Draw(t, "q")
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		want := sorted[max(0, int(math.Ceil(float64(q)/100*float64(len(sorted))))-1)]
		if got := engine.Percentile(slices.Clone(vals), q); got != want {
			t.Fatalf("p%d of %v = %v, want %v", q, vals, got, want)
		}
	})
}
