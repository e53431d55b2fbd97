package backtest

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Point is one strategy's totals on one half of the split.
type Point struct {
	Strategy string
	// Ours: a policy (or a sweep of one); Shipped: a policy as shipped.
	Ours, Shipped bool
	Score         Score
}

// PointsOn totals each result over the workloads (or weeks) of half.
func PointsOn(traces []*Trace, results []Result, half string, fresh bool, ours, shipped func(string) bool) []Point {
	var out []Point
	for _, r := range results {
		// In the order of the traces: sums in any other order could differ
		// in the last digit from run to run.
		var t Score
		scores := halfScores(traces, r, fresh)[half]
		for _, i := range slices.Sorted(maps.Keys(scores)) {
			t.Add(scores[i])
		}
		out = append(out, Point{Strategy: r.Strategy, Ours: ours(r.Strategy), Shipped: shipped(r.Strategy), Score: t})
	}
	return out
}

// Dominates: a has no more memory breach-minutes, compute breach-minutes
// or kills and evictions, and less slack than b (GPU-hours; the same
// demand): the protocol's dominance on totals.
func Dominates(a, b Score) bool {
	return a.MemoryBreachMinutes <= b.MemoryBreachMinutes && a.ComputeBreachMinutes <= b.ComputeBreachMinutes &&
		a.OOMKills+a.Evictions <= b.OOMKills+b.Evictions && a.SlackGPUHours < b.SlackGPUHours
}

// WritePareto renders the points of one half as a table, then, for each
// baseline, the shipped settings that dominate it, or what keeps each
// from it, and the shipped settings it dominates.
func WritePareto(w io.Writer, title string, pts []Point) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s*\n\n", title)
	fmt.Fprintln(&b, "| strategy | relative slack | slack GPU-h | memory breach min | compute breach min | OOM kills + evictions |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|")
	for _, p := range pts {
		s := p.Score
		fmt.Fprintf(&b, "| %s | %.1f %% | %.1f | %.0f | %.0f | %d |\n", p.Strategy, 100*s.RelativeSlack(), s.SlackGPUHours,
			s.MemoryBreachMinutes, s.ComputeBreachMinutes, s.OOMKills+s.Evictions)
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| baseline | dominated by a shipped setting | by a setting of the sweep | dominates a shipped setting |")
	fmt.Fprintln(&b, "|---|---|---|---|")
	for _, base := range pts {
		if base.Ours || strings.HasPrefix(base.Strategy, "oracle") {
			continue
		}
		var shipped, swept, over []string
		for _, p := range pts {
			if p.Ours && Dominates(p.Score, base.Score) {
				if p.Shipped {
					shipped = append(shipped, p.Strategy)
				} else {
					swept = append(swept, p.Strategy)
				}
			}
			if p.Shipped && Dominates(base.Score, p.Score) {
				over = append(over, p.Strategy)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", base.Strategy, orWhy(shipped, pts, base), orNone(swept), orNone(over))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "; ")
}

// orWhy lists the dominating settings, or says by how much each shipped
// setting misses.
func orWhy(names []string, pts []Point, base Point) string {
	if len(names) > 0 {
		return strings.Join(names, "; ")
	}
	var why []string
	for _, p := range pts {
		if !p.Shipped {
			continue
		}
		var miss []string
		if d := p.Score.SlackGPUHours - base.Score.SlackGPUHours; d >= 0 {
			miss = append(miss, fmt.Sprintf("slack +%.1f GPU-h", d))
		}
		if d := p.Score.MemoryBreachMinutes - base.Score.MemoryBreachMinutes; d > 0 {
			miss = append(miss, fmt.Sprintf("memory breach +%.0f min", d))
		}
		if d := p.Score.ComputeBreachMinutes - base.Score.ComputeBreachMinutes; d > 0 {
			miss = append(miss, fmt.Sprintf("compute breach +%.0f min", d))
		}
		why = append(why, p.Strategy+": "+strings.Join(miss, ", "))
	}
	return "no (" + strings.Join(why, "; ") + ")"
}

// PlotPareto draws relative slack against memory or compute
// breach-minutes, one point per strategy, the sweeps as curves through
// the policy they vary: down and to the left is better.
func PlotPareto(w io.Writer, title string, compute bool, pts []Point, sweeps map[string][]string) error {
	x := func(s Score) float64 {
		if compute {
			return s.ComputeBreachMinutes
		}
		return s.MemoryBreachMinutes
	}
	var xmax float64
	for _, p := range pts {
		xmax = max(xmax, x(p.Score))
	}
	c := newCanvas(860, 480, 0, niceMax(xmax), 0, 100)
	c.right = 290
	label := "memory breach-minutes"
	if compute {
		label = "compute breach-minutes"
	}
	c.axes(title, label, "relative slack (%)",
		func(v float64) string { return fmt.Sprintf("%g", v) }, func(v float64) string { return fmt.Sprintf("%g%%", v) })
	at := map[string]Point{}
	for _, p := range pts {
		at[p.Strategy] = p
	}
	// The sweeps first, under the points.
	names := make([]string, 0, len(sweeps))
	for n := range sweeps {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		var line [][2]float64
		for _, s := range sweeps[n] {
			if p, ok := at[s]; ok {
				line = append(line, [2]float64{x(p.Score), 100 * p.Score.RelativeSlack()})
			}
		}
		c.polyline(line, "#999999", 1, true)
	}
	i := 0
	for _, p := range pts {
		xv, yv := c.x(x(p.Score)), c.y(100*p.Score.RelativeSlack())
		if p.Ours && !p.Shipped {
			fmt.Fprintf(&c.b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#999999"/>`+"\n", xv, yv)
			continue
		}
		colour := palette[i%len(palette)]
		fmt.Fprintf(&c.b, `<circle cx="%.1f" cy="%.1f" r="6" fill="%s"/>`+"\n", xv, yv, colour)
		c.legend(i, colour, fmt.Sprintf("%s: %.0f%%, %.0f", p.Strategy, 100*p.Score.RelativeSlack(), x(p.Score)), false)
		i++
	}
	c.legend(i, "#999999", "a sweep of the last policy", true)
	return c.writeTo(w)
}
