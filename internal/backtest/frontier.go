package backtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The frontier (docs/backtest/protocol.md): a policy's settings along one
// risk knob, from the most cautious to the boldest. For each baseline, the
// setting chosen on the tune half is judged once on the held half.

// Choice is the setting chosen against one baseline under one delivery.
type Choice struct {
	Delivery string `json:"delivery"`
	Baseline string `json:"baseline"`
	// Dominating are the settings that dominate the baseline on the tune
	// half's totals, in the knob's order.
	Dominating []string `json:"dominating,omitempty"`
	// Chosen is the median of Dominating (of two middle ones, the more
	// cautious), or, when none dominates, the closest miss.
	Chosen      string `json:"chosen"`
	ClosestMiss bool   `json:"closestMiss,omitempty"`
}

// FrontierCell is a choice judged on the held half.
type FrontierCell struct {
	Choice
	Workloads int
	// Held and Base are the held half's totals of the chosen setting and
	// of the baseline; Oracle is oracle-daily's slack there.
	Held, Base Score
	Oracle     float64
	// Diffs are the paired differences (setting − baseline) of the four
	// metrics, corrected by Holm in their family of four.
	Diffs []Corrected
}

// Dominates says whether the chosen setting dominates the baseline on the
// held half: on totals, and with no difference significantly worse.
func (c FrontierCell) Dominates() bool {
	if !Dominates(c.Held, c.Base) {
		return false
	}
	for _, d := range c.Diffs {
		if d.Significant && d.Mean > 0 {
			return false
		}
	}
	return true
}

// Significantly says whether it also has a difference significantly
// better.
func (c FrontierCell) Significantly() bool {
	if !c.Dominates() {
		return false
	}
	for _, d := range c.Diffs {
		if d.Significant && d.Mean < 0 {
			return true
		}
	}
	return false
}

// totals are the four figures dominance is judged on, in pairedMetrics'
// order.
func totals(s Score) [4]float64 {
	return [4]float64{s.SlackGPUHours, s.MemoryBreachMinutes, s.ComputeBreachMinutes, float64(s.OOMKills + s.Evictions)}
}

// Choose picks, on the tune half, a setting against every baseline of
// every delivery. settings are the knob's, cautious first; a baseline is
// any result that is neither a setting, nor one of shipped, nor an oracle.
func Choose(traces []*Trace, deliveries []Delivery, settings, shipped []string) []Choice {
	var out []Choice
	for _, d := range deliveries {
		pts := PointsOn(traces, d.Results, HalfTune, false, func(string) bool { return false }, func(string) bool { return false })
		at := map[string]Score{}
		for _, p := range pts {
			at[p.Strategy] = p.Score
		}
		for _, b := range d.Results {
			if !isBaseline(b.Strategy, settings, shipped) {
				continue
			}
			c := Choice{Delivery: d.Name, Baseline: b.Strategy}
			for _, s := range settings {
				if Dominates(at[s], at[b.Strategy]) {
					c.Dominating = append(c.Dominating, s)
				}
			}
			if len(c.Dominating) > 0 {
				c.Chosen = c.Dominating[(len(c.Dominating)-1)/2]
			} else {
				c.Chosen, c.ClosestMiss = closestMiss(at, settings, at[b.Strategy]), true
			}
			out = append(out, c)
		}
	}
	return out
}

func isBaseline(name string, settings, shipped []string) bool {
	return !slices.Contains(settings, name) && !slices.Contains(shipped, name) && !strings.HasPrefix(name, "oracle")
}

// closestMiss is the setting whose largest shortfall against base is the
// smallest, each shortfall (setting − baseline) ÷ max(baseline, 1); the
// more cautious of equals.
func closestMiss(at map[string]Score, settings []string, base Score) string {
	best, bestMiss := "", math.Inf(1)
	b := totals(base)
	for _, s := range settings {
		t := totals(at[s])
		miss := math.Inf(-1)
		for i := range t {
			miss = max(miss, (t[i]-b[i])/max(b[i], 1))
		}
		if miss < bestMiss {
			best, bestMiss = s, miss
		}
	}
	return best
}

// Judge scores each choice on the held half (the whole trace for fresh
// data), paired per workload, with Holm's correction over its four
// metrics.
func Judge(traces []*Trace, deliveries []Delivery, choices []Choice, fresh bool) ([]FrontierCell, error) {
	var out []FrontierCell
	for _, c := range choices {
		i := slices.IndexFunc(deliveries, func(d Delivery) bool { return d.Name == c.Delivery })
		if i < 0 {
			return nil, fmt.Errorf("frontier: no delivery %q", c.Delivery)
		}
		d := deliveries[i]
		held := map[string]map[int]Score{}
		for _, r := range d.Results {
			if r.Strategy == c.Chosen || r.Strategy == c.Baseline || r.Strategy == DailyOracle {
				held[r.Strategy] = halfScores(traces, r, fresh)[HalfHeld]
			}
		}
		for _, n := range []string{c.Chosen, c.Baseline} {
			if held[n] == nil {
				return nil, fmt.Errorf("frontier: %s has no result under %s", n, c.Delivery)
			}
		}
		cell := FrontierCell{Choice: c}
		idx := make([]int, 0, len(held[c.Chosen]))
		for w := range held[c.Chosen] {
			idx = append(idx, w)
		}
		slices.Sort(idx)
		diffs := make([][]float64, len(pairedMetrics))
		for _, w := range idx {
			s, b := held[c.Chosen][w], held[c.Baseline][w]
			cell.Held.Add(s)
			cell.Base.Add(b)
			cell.Oracle += held[DailyOracle][w].SlackGPUHours
			for m, pm := range pairedMetrics {
				diffs[m] = append(diffs[m], pm.Of(s)-pm.Of(b))
			}
		}
		cell.Workloads = len(idx)
		r := Resample(diffs)
		family := make([]HolmEntry, len(diffs))
		for m := range diffs {
			family[m] = HolmEntry{R: r, Row: m}
		}
		cell.Diffs = Holm(family)
		out = append(out, cell)
	}
	return out, nil
}

// WriteChoices writes the choices as JSON, for the fresh data's run to
// read (ReadChoices).
func WriteChoices(w io.Writer, choices []Choice) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Choices []Choice `json:"choices"`
	}{choices})
}

// ReadChoices reads what WriteChoices wrote.
func ReadChoices(r io.Reader, name string) ([]Choice, error) {
	var doc struct {
		Choices []Choice `json:"choices"`
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Choices) == 0 {
		return nil, fmt.Errorf("%s: no choices", name)
	}
	return doc.Choices, nil
}

// WriteFrontier renders the cells of one delivery: per baseline, the
// settings that dominate it on the tune half, the one chosen, and on the
// held half its differences with Holm-corrected intervals, the totals,
// its slack ÷ oracle-daily and the verdict.
func WriteFrontier(w io.Writer, title string, cells []FrontierCell) error {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s*\n\n", title)
	fmt.Fprint(&b, "| baseline | dominated on tune by | chosen |")
	for _, pm := range pairedMetrics {
		fmt.Fprintf(&b, " held: Δ %s /workload [Holm CI] |", pm.Name)
	}
	fmt.Fprintln(&b, " held slack ÷ "+DailyOracle+" | held verdict |")
	fmt.Fprint(&b, "|---|---|---|")
	for range pairedMetrics {
		fmt.Fprint(&b, "---|")
	}
	fmt.Fprintln(&b, "---:|---|")
	for _, c := range cells {
		tuned := "none"
		if len(c.Dominating) > 0 {
			tuned = strings.Join(c.Dominating, ", ")
		}
		chosen := c.Chosen
		if c.ClosestMiss {
			chosen += " (closest miss)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", c.Baseline, tuned, chosen)
		for _, d := range c.Diffs {
			fmt.Fprintf(&b, " %s [%s, %s] %s |", num(d.Mean), num(d.Lo), num(d.Hi), d.Mark())
		}
		ratio := "-"
		if c.Oracle > 0 {
			ratio = fmt.Sprintf("%.2f", c.Held.SlackGPUHours/c.Oracle)
		}
		fmt.Fprintf(&b, " %s | %s |\n", ratio, verdictOf(c))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictOf says whether the chosen setting dominates, and where it does
// not, by how much it misses on the held half's totals.
func verdictOf(c FrontierCell) string {
	switch {
	case c.Significantly():
		return "**dominates**, significantly"
	case c.Dominates():
		return "**dominates**"
	}
	var miss []string
	s, base := totals(c.Held), totals(c.Base)
	units := []string{"slack %+.1f GPU-h", "memory %+.0f min", "compute %+.0f min", "kills + evictions %+.0f"}
	for i := range s {
		if d := s[i] - base[i]; d > 0 || i == 0 && d >= 0 {
			miss = append(miss, fmt.Sprintf(units[i], d))
		}
	}
	for i, d := range c.Diffs {
		if d.Significant && d.Mean > 0 && !slices.ContainsFunc(miss, func(m string) bool { return strings.HasPrefix(m, strings.Fields(units[i])[0]) }) {
			miss = append(miss, strings.Fields(units[i])[0]+" significantly worse per workload")
		}
	}
	return "misses: " + strings.Join(miss, ", ")
}
