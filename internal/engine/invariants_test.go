package engine_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// genGovernance draws a valid governance around the starter policies:
// either policy may be absent, and every bound varies.
func genGovernance(t *rapid.T, base engine.Rules) engine.Rules {
	g := base
	st := *base.Strategy
	st.Upsize = rapid.Bool().Draw(t, "upsize")
	st.Downsize = rapid.Bool().Draw(t, "downsize")
	st.MoveToKAI = rapid.Bool().Draw(t, "moveToKAI")
	st.Ceiling = rapid.SampledFrom([]float64{0.5, 0.8, 1, 2}).Draw(t, "ceiling")
	st.Floor = rapid.SampledFrom([]float64{0.01, 0.05, 0.2}).Draw(t, "floor")
	st.MinChangePercent = rapid.SampledFrom([]int{0, 5, 20}).Draw(t, "minChange")
	g.Strategy = &st
	if rapid.Bool().Draw(t, "withProactive") {
		p := *base.Proactive
		p.MinHistory = rapid.SampledFrom([]time.Duration{time.Hour, 24 * time.Hour}).Draw(t, "minHistory")
		p.HeadroomPercent = rapid.IntRange(0, 50).Draw(t, "proactiveHeadroom")
		p.ComputePercentile = rapid.SampledFrom([]int{90, 99, 100}).Draw(t, "computePercentile")
		p.MemoryWindow = rapid.SampledFrom([]time.Duration{0, 14 * 24 * time.Hour}).Draw(t, "memoryWindow")
		p.MemoryConfidenceHeadroomPercent = rapid.SampledFrom([]int{0, 100}).Draw(t, "memoryConfidence")
		p.MemoryConfidenceWindow = rapid.SampledFrom([]time.Duration{0, 24 * time.Hour}).Draw(t, "memoryConfidenceWindow")
		p.MemoryDailyPeakPercentile = rapid.SampledFrom([]int{0, 50, 90}).Draw(t, "memoryDailyPeak")
		g.Proactive = &p
	} else {
		g.Proactive = nil
	}
	if rapid.Bool().Draw(t, "withReactive") || g.Proactive == nil {
		r := *base.Reactive
		r.Metrics = map[usage.Metric]*engine.MetricRules{}
		for m, mr := range base.Reactive.Metrics {
			c := *mr
			up := *mr.Upsize
			up.MaxPercent = rapid.SampledFrom([]int{150, 200, 300}).Draw(t, "maxPercent")
			up.ThresholdPercent = rapid.IntRange(80, 120).Draw(t, "upThreshold")
			c.Upsize = &up
			sb := *mr.ScaleBack
			sb.ThresholdPercent = rapid.IntRange(20, 79).Draw(t, "sbThreshold")
			c.ScaleBack = &sb
			r.Metrics[m] = &c
		}
		g.Reactive = &r
	} else {
		g.Reactive = nil
	}
	return g
}

// genUsage draws pods of all ages with noisy usage, holes and NaNs. The
// series come from a seeded generator so that days of samples stay cheap.
func genUsage(t *rapid.T) usage.Workload {
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
	w := usage.Workload{Step: time.Minute, LiveKnown: rapid.Bool().Draw(t, "liveKnown")}
	n := rapid.IntRange(1, 3).Draw(t, "pods")
	// Half the workloads are quiet, old and cleanly scraped: the inputs
	// that scale back, which the invariants are about.
	quiet := rapid.Bool().Draw(t, "quiet")
	holes, nans := 0.0, 0.0
	if !quiet {
		holes = rapid.Float64Range(0, 0.05).Draw(t, "holeRate")
		nans = rapid.Float64Range(0, 0.02).Draw(t, "nanRate")
	}
	for i := range n {
		minAge, maxLevel := 1, 1.0
		if quiet {
			minAge, maxLevel = 25*60, 0.3
		}
		age := time.Duration(rapid.IntRange(minAge, 3*24*60).Draw(t, "ageMinutes")) * time.Minute
		level := map[usage.Metric]float64{
			usage.Compute: rapid.Float64Range(0, 100*maxLevel).Draw(t, "computeLevel"),
			usage.Memory:  rapid.Float64Range(0, 150*maxLevel).Draw(t, "memoryLevel"),
		}
		p := usage.Pod{Name: string(rune('a' + i)), Live: rapid.Bool().Draw(t, "live"), Series: map[usage.Metric][]usage.Sample{}}
		if rapid.Bool().Draw(t, "startKnown") {
			p.Start = at.Add(-age).UnixMilli()
		}
		for ago := age; ago >= 0; ago -= time.Minute {
			for _, m := range usage.Metrics {
				if rng.Float64() < holes {
					continue
				}
				v := level[m] * (0.5 + rng.Float64())
				if rng.Float64() < nans {
					v = math.NaN()
				}
				p.Series[m] = append(p.Series[m], usage.Sample{T: at.Add(-ago).UnixMilli(), V: v})
			}
		}
		w.Pods = append(w.Pods, p)
	}
	return w
}

func genCurrent(t *rapid.T) engine.Allocation {
	if rapid.IntRange(0, 4).Draw(t, "form") == 0 {
		return whole(1)
	}
	return fraction(float64(rapid.IntRange(5, 99).Draw(t, "fraction")) / 100)
}

func maxStep(g engine.Rules) float64 {
	limit := engine.DefaultMaxPercent
	if g.Reactive != nil {
		limit = math.MaxInt
		for _, m := range g.Reactive.Metrics {
			if m.Upsize != nil {
				limit = min(limit, m.Upsize.MaxPercent)
			}
		}
	}
	return float64(limit) / 100
}

// TestInvariantBounds is docs/design.md §10 invariant 3: fractions stay within
// floor and ceiling, a step never exceeds maxPercent, and what is written is
// something KAI accepts.
func TestInvariantBounds(t *testing.T) {
	base := starter(t)
	seen := map[engine.Action]int{}
	rapid.Check(t, func(t *rapid.T) {
		g := genGovernance(t, base)
		cur := genCurrent(t)
		d := engine.Decide(engine.Input{At: at, Current: cur, Rules: g, Usage: genUsage(t)})
		seen[d.Action]++
		r, a := d.Recommended, cur.GPUs
		if d.Action != engine.Upsize && d.Action != engine.ScaleBack {
			if r != cur {
				t.Fatalf("%s changed the allocation %v → %v", d.Action, cur, r)
			}
			return
		}
		switch r.Form {
		case engine.Fraction:
			if r.GPUs < 0.01 || r.GPUs > 0.99 || math.Abs(r.GPUs*100-math.Round(r.GPUs*100)) > 1e-6 {
				t.Fatalf("fraction %v is not one KAI accepts (0.01–0.99, two decimals)", r.GPUs)
			}
		case engine.WholeGPUs:
			if r.GPUs < 1 || r.GPUs != math.Trunc(r.GPUs) {
				t.Fatalf("whole GPUs %v is not a positive integer", r.GPUs)
			}
		default:
			t.Fatalf("recommended form %q", r.Form)
		}
		if kai.Above(r.GPUs, g.Strategy.Ceiling) {
			t.Fatalf("%v exceeds the ceiling %v", r.GPUs, g.Strategy.Ceiling)
		}
		switch d.Action {
		case engine.Upsize:
			// The step limit yields only to the floor: an allocation below
			// the floor moves into bounds.
			if limit := max(a*maxStep(g), g.Strategy.Floor); r.GPUs <= a || kai.Above(r.GPUs, limit) {
				t.Fatalf("upsize %v → %v outside (a, max(a×%v, floor)]: %s", a, r.GPUs, maxStep(g), d.Reason())
			}
		case engine.ScaleBack:
			if r.GPUs >= a || kai.Above(g.Strategy.Floor, r.GPUs) {
				t.Fatalf("scale-back %v → %v outside [floor %v, a): %s", a, r.GPUs, g.Strategy.Floor, d.Reason())
			}
			if g.Proactive == nil {
				t.Fatalf("scale-back without a proactive baseline: %s", d.Reason())
			}
		}
	})
	// The property says nothing unless the generator reaches the actions it
	// bounds.
	t.Logf("actions: %v", seen)
	if seen[engine.Upsize] == 0 || seen[engine.ScaleBack] == 0 {
		t.Fatalf("the generator never produced both an upsize and a scale-back: %v", seen)
	}
}

// TestInvariantMissingDataNeverShrinks is docs/design.md §10 invariant 1: no data,
// partial data, stale data or NaN never lowers a fraction. Whatever the
// usage, once it is damaged in one of those ways near the evaluation time,
// no scale-back may come out.
func TestInvariantMissingDataNeverShrinks(t *testing.T) {
	base := starter(t)
	prevented := 0
	rapid.Check(t, func(t *rapid.T) {
		g := genGovernance(t, base)
		cur := genCurrent(t)
		w := genUsage(t)
		if engine.Decide(engine.Input{At: at, Current: cur, Rules: g, Usage: clone(w)}).Action == engine.ScaleBack {
			prevented++
		}
		tol := usage.GapTolerance(w.Step)
		switch damage := rapid.IntRange(0, 3).Draw(t, "damage"); damage {
		case 0: // stale: nothing newer than some time past the tolerance
			cut := at.Add(-tol - time.Duration(rapid.IntRange(1, 360).Draw(t, "staleMinutes"))*time.Minute).UnixMilli()
			for i := range w.Pods {
				for m, s := range w.Pods[i].Series {
					w.Pods[i].Series[m] = usage.In(s, usage.Window{From: math.MinInt64, To: cut})
				}
			}
		case 1, 2: // a recent run of NaN, or of missing samples, in every pod
			length := tol + time.Duration(rapid.IntRange(1, 6).Draw(t, "gapMinutes"))*time.Minute
			end := at.Add(-time.Duration(rapid.IntRange(0, 60).Draw(t, "gapEndSeconds")) * time.Second)
			hole := usage.Window{From: end.Add(-length).UnixMilli(), To: end.UnixMilli()}
			for i := range w.Pods {
				for m, s := range w.Pods[i].Series {
					var kept []usage.Sample
					for _, x := range s {
						if hole.Contains(x.T) {
							if damage == 2 {
								continue
							}
							x.V = math.NaN()
						}
						kept = append(kept, x)
					}
					w.Pods[i].Series[m] = kept
				}
			}
		case 3: // no data at all, though pods may be known to run
			for i := range w.Pods {
				w.Pods[i].Series = nil
			}
		}
		d := engine.Decide(engine.Input{At: at, Current: cur, Rules: g, Usage: w})
		if d.Action == engine.ScaleBack || d.Recommended.GPUs < cur.GPUs {
			t.Fatalf("damaged data lowered %v → %v: %s", cur, d.Recommended, d.Reason())
		}
	})
	// Vacuous unless some inputs would have scaled back before the damage.
	t.Logf("scale-backs prevented by damage: %d", prevented)
	if prevented == 0 {
		t.Fatal("no generated input scaled back before damage; the property tested nothing")
	}
}

func clone(w usage.Workload) usage.Workload {
	c := w
	c.Pods = make([]usage.Pod, len(w.Pods))
	for i, p := range w.Pods {
		c.Pods[i] = p
		c.Pods[i].Series = map[usage.Metric][]usage.Sample{}
		for m, s := range p.Series {
			c.Pods[i].Series[m] = append([]usage.Sample(nil), s...)
		}
	}
	return c
}
