package backtest

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The halves of the split (docs/backtest/protocol.md), fixed before the
// results they judge: every workload has one role, by a stable hash of its
// name, and on traces longer than a week the tune workloads are scored on
// their first week and the held ones on their second, so that no
// workload, and no week, is in both. A policy is tuned on the tune half
// and judged, once, on the held one.
const (
	HalfAll  = "all"
	HalfTune = "tune"
	HalfHeld = "held"
)

// Week is where a long trace's tune week ends and its held week begins.
const Week = 7 * 24 * time.Hour

// HashHalf puts a workload in the tune or held half by the FNV-1a hash
// of its name: even in tune, odd held. It never changes with the
// results, the order of the traces or the run.
func HashHalf(name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	if h.Sum64()%2 == 0 {
		return HalfTune
	}
	return HalfHeld
}

// Role is a trace's half and the part of it scored there: the whole trace,
// or, past a week, the tune workloads' first week and the held ones'
// second. Fresh data is held whole: no setting was tuned on it.
func Role(tr *Trace, fresh bool) (half string, w usage.Window) {
	whole := usage.Window{From: math.MinInt64, To: math.MaxInt64}
	if fresh {
		return HalfHeld, whole
	}
	half = HashHalf(tr.Name)
	if time.Duration(tr.End()-tr.Start())*time.Millisecond <= Week {
		return half, whole
	}
	cut := tr.Start() + Week.Milliseconds()
	if half == HalfTune {
		return half, usage.Window{From: math.MinInt64, To: cut}
	}
	return half, usage.Window{From: cut, To: math.MaxInt64}
}

// Halves are the halves every comparison is made on, in the order the
// tables show them.
var Halves = []string{HalfAll, HalfTune, HalfHeld}

// Metrics compared per workload; for each, less is better.
var pairedMetrics = []struct {
	Name string
	Of   func(Score) float64
}{
	{"slack GPU-h", func(s Score) float64 { return s.SlackGPUHours }},
	{"memory breach min", func(s Score) float64 { return s.MemoryBreachMinutes }},
	{"compute breach min", func(s Score) float64 { return s.ComputeBreachMinutes }},
	{"OOM kills + evictions", func(s Score) float64 { return float64(s.OOMKills + s.Evictions) }},
}

// Interval is a mean difference with its bootstrap confidence interval.
type Interval struct {
	Mean, Lo, Hi float64
}

// Verdict says whether the interval excludes zero, and on which side:
// less is better.
func (iv Interval) Verdict() string {
	switch {
	case iv.Hi < 0:
		return "better"
	case iv.Lo > 0:
		return "worse"
	}
	return "no difference"
}

// BootstrapRounds and BootstrapSeed fix the resampling, so that the same
// results give the same intervals, byte for byte.
const (
	BootstrapRounds = 10000
	BootstrapSeed   = 22
)

// Alpha is the family-wise error rate of Holm's correction.
const Alpha = 0.05

// Resamples is the bootstrap distribution of the mean of each row of a
// matrix of paired differences (one row a metric, each entry a
// workload's): the workloads are resampled together for every metric,
// from a fixed seed.
type Resamples struct {
	Mean   []float64
	sorted [][]float64
}

// Resample draws BootstrapRounds resamples of the workloads of d.
func Resample(d [][]float64) Resamples {
	r := Resamples{Mean: make([]float64, len(d)), sorted: make([][]float64, len(d))}
	if len(d) == 0 || len(d[0]) == 0 {
		return r
	}
	n := len(d[0])
	rng := rand.New(rand.NewPCG(BootstrapSeed, BootstrapSeed))
	for m := range d {
		r.sorted[m] = make([]float64, 0, BootstrapRounds)
	}
	sums := make([]float64, len(d))
	for range BootstrapRounds {
		clear(sums)
		for range n {
			i := rng.IntN(n)
			for m := range d {
				sums[m] += d[m][i]
			}
		}
		for m := range d {
			r.sorted[m] = append(r.sorted[m], snap(sums[m]/float64(n)))
		}
	}
	for m := range d {
		var sum float64
		for _, v := range d[m] {
			sum += v
		}
		r.Mean[m] = snap(sum / float64(n))
		slices.Sort(r.sorted[m])
	}
	return r
}

// snap sets a mean within float noise of 0 to 0: differences that cancel
// sum to ±1e-16, and a bound there must not read as excluding 0.
func snap(v float64) float64 {
	if math.Abs(v) < 1e-9 {
		return 0
	}
	return v
}

// Interval is row m's mean with its percentile interval at level (0.95
// for 95 %).
func (r Resamples) Interval(m int, level float64) Interval {
	s := r.sorted[m]
	if len(s) == 0 {
		return Interval{}
	}
	tail := (1 - level) / 2
	return Interval{Mean: r.Mean[m], Lo: percentileOf(s, tail), Hi: percentileOf(s, 1-tail)}
}

// P is row m's two-sided bootstrap p-value: twice the smaller share of
// resampled means at or below 0 and at or above 0, at least one
// resample's share and at most 1.
func (r Resamples) P(m int) float64 {
	s := r.sorted[m]
	if len(s) == 0 {
		return 1
	}
	below, _ := slices.BinarySearch(s, math.Nextafter(0, 1))
	above := len(s) - sort.SearchFloat64s(s, 0)
	p := 2 * float64(min(below, above)) / float64(len(s))
	return min(1, max(p, 1/float64(len(s))))
}

// Bootstrap is the mean of each row of d (one a metric, each entry a
// workload's paired difference) with a 95 % percentile interval.
func Bootstrap(d [][]float64) []Interval {
	r := Resample(d)
	out := make([]Interval, len(d))
	for m := range d {
		out[m] = r.Interval(m, 0.95)
	}
	return out
}

// Corrected is one difference judged in its family by Holm's step-down
// correction: ranked i of m by its p-value, its interval is at level
// 1 − Alpha/(m − i + 1), and it is significant when that interval excludes
// 0 and every difference ranked before it is significant.
type Corrected struct {
	Interval
	P, Level    float64
	Significant bool
}

// Mark is the corrected verdict in one character: + better, − worse, ·
// not significant.
func (c Corrected) Mark() string {
	if !c.Significant {
		return "·"
	}
	return verdictMark(c.Interval)
}

// Holm corrects a family of differences: each entry of family is one
// Resamples and a row of it.
func Holm(family []HolmEntry) []Corrected {
	type ranked struct {
		i int
		p float64
	}
	rs := make([]ranked, len(family))
	for i, e := range family {
		rs[i] = ranked{i, e.R.P(e.Row)}
	}
	slices.SortStableFunc(rs, func(a, b ranked) int { return cmp.Compare(a.p, b.p) })
	out := make([]Corrected, len(family))
	going := true
	for k, r := range rs {
		e := family[r.i]
		level := 1 - Alpha/float64(len(family)-k)
		iv := e.R.Interval(e.Row, level)
		sig := going && (iv.Lo > 0 || iv.Hi < 0)
		going = sig
		out[r.i] = Corrected{Interval: iv, P: r.p, Level: level, Significant: sig}
	}
	return out
}

// HolmEntry is one difference of a family: row Row of R.
type HolmEntry struct {
	R   Resamples
	Row int
}

// percentileOf reads a sorted sample at rank q·(n−1), interpolated.
func percentileOf(sorted []float64, q float64) float64 {
	rank := q * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	f := rank - float64(lo)
	return sorted[lo]*(1-f) + sorted[hi]*f
}

// Comparison is one policy against one baseline on one half: the mean
// per-workload difference (policy − baseline) of each metric, with its
// uncorrected 95 % interval (Diffs) and corrected in its family (Holm:
// for Compare, one verdict table: every baseline of a policy, delivery and
// half).
type Comparison struct {
	Delivery, Policy, Baseline, Half string
	Workloads                        int
	Diffs                            []Interval
	Holm                             []Corrected
	res                              Resamples
}

// correct fills Holm for a family of comparisons, all their metrics
// together, and lets their resamples go.
func correct(family []*Comparison) {
	var entries []HolmEntry
	for _, c := range family {
		for m := range c.Diffs {
			entries = append(entries, HolmEntry{R: c.res, Row: m})
		}
	}
	cs := Holm(entries)
	for _, c := range family {
		c.Holm, cs = cs[:len(c.Diffs)], cs[len(c.Diffs):]
		c.res = Resamples{}
	}
}

// halfScores scores every workload of one result on the whole trace and
// on its half (Role).
func halfScores(traces []*Trace, r Result, fresh bool) map[string]map[int]Score {
	out := map[string]map[int]Score{HalfAll: {}}
	for i, w := range r.Workloads {
		tr := traces[i]
		out[HalfAll][i] = w.Score
		half, win := Role(tr, fresh)
		if out[half] == nil {
			out[half] = map[int]Score{}
		}
		if win.From == math.MinInt64 && win.To == math.MaxInt64 {
			out[half][i] = w.Score
			continue
		}
		out[half][i] = EvaluateWindow(tr, w.Timeline, win)
	}
	return out
}

// Compare pairs every policy with every baseline, per delivery and half.
// Baselines are the strategies that are neither a policy, nor one of
// others (the frontier's settings), nor an oracle.
func Compare(traces []*Trace, deliveries []Delivery, policies, others []string, fresh bool) []Comparison {
	var out []Comparison
	for _, d := range deliveries {
		scores := map[string]map[string]map[int]Score{}
		for _, r := range d.Results {
			scores[r.Strategy] = halfScores(traces, r, fresh)
		}
		for _, p := range policies {
			for _, b := range d.Results {
				if slices.Contains(policies, b.Strategy) || slices.Contains(others, b.Strategy) || strings.HasPrefix(b.Strategy, "oracle") {
					continue
				}
				for _, half := range Halves {
					ours, theirs := scores[p][half], scores[b.Strategy][half]
					if len(ours) == 0 {
						continue
					}
					idx := make([]int, 0, len(ours))
					for i := range ours {
						idx = append(idx, i)
					}
					slices.Sort(idx)
					diffs := make([][]float64, len(pairedMetrics))
					for m, pm := range pairedMetrics {
						for _, i := range idx {
							diffs[m] = append(diffs[m], pm.Of(ours[i])-pm.Of(theirs[i]))
						}
					}
					r := Resample(diffs)
					c := Comparison{Delivery: d.Name, Policy: p, Baseline: b.Strategy, Half: half, Workloads: len(idx), res: r}
					for m := range diffs {
						c.Diffs = append(c.Diffs, r.Interval(m, 0.95))
					}
					out = append(out, c)
				}
			}
		}
	}
	// Holm's families: one verdict table each.
	type key struct{ delivery, policy, half string }
	families := map[key][]*Comparison{}
	var order []key
	for i := range out {
		k := key{out[i].Delivery, out[i].Policy, out[i].Half}
		if _, ok := families[k]; !ok {
			order = append(order, k)
		}
		families[k] = append(families[k], &out[i])
	}
	for _, k := range order {
		correct(families[k])
	}
	return out
}

// WriteSplit renders the comparisons as Markdown: per delivery and
// policy, one table per half, a row per baseline.
func WriteSplit(w io.Writer, cs []Comparison) error {
	var b strings.Builder
	type key struct{ delivery, policy, half string }
	var keys []key
	rows := map[key][]Comparison{}
	for _, c := range cs {
		k := key{c.Delivery, c.Policy, c.Half}
		if _, ok := rows[k]; !ok {
			keys = append(keys, k)
		}
		rows[k] = append(rows[k], c)
	}
	for i, k := range keys {
		if i > 0 {
			fmt.Fprintln(&b)
		}
		fmt.Fprintf(&b, "*%s − baseline, %s, %s half (%d workloads)*\n\n", k.policy, k.delivery, k.half, rows[k][0].Workloads)
		fmt.Fprint(&b, "| baseline |")
		for _, pm := range pairedMetrics {
			fmt.Fprintf(&b, " Δ %s /workload [95 %% CI] |", pm.Name)
		}
		fmt.Fprint(&b, "\n|---|")
		for range pairedMetrics {
			fmt.Fprint(&b, "---|")
		}
		fmt.Fprintln(&b)
		for _, c := range rows[k] {
			fmt.Fprintf(&b, "| %s |", c.Baseline)
			for _, iv := range c.Diffs {
				fmt.Fprintf(&b, " %s [%s, %s] %s |", num(iv.Mean), num(iv.Lo), num(iv.Hi), iv.Verdict())
			}
			fmt.Fprintln(&b)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num prints a difference with three significant digits and no "-0".
func num(v float64) string {
	s := fmt.Sprintf("%.3g", snap(v))
	if s == "-0" {
		return "0"
	}
	return s
}

// verdictMark is a verdict in one character.
func verdictMark(iv Interval) string {
	switch iv.Verdict() {
	case "better":
		return "+"
	case "worse":
		return "−"
	}
	return "·"
}

// WriteVerdicts renders, for one policy, a row per baseline and delivery
// and a column per half: each cell the verdicts of the four metrics in
// order (slack, memory breach, compute breach, kills + evictions),
// corrected by Holm in the family of the table's column and delivery.
func WriteVerdicts(w io.Writer, cs []Comparison, policy string) error {
	var b strings.Builder
	var halves []string
	type key struct{ delivery, baseline string }
	var keys []key
	cells := map[key]map[string]string{}
	count := map[string]int{}
	for _, c := range cs {
		if c.Policy != policy {
			continue
		}
		if !slices.Contains(halves, c.Half) {
			halves = append(halves, c.Half)
		}
		count[c.Half] = c.Workloads
		k := key{c.Delivery, c.Baseline}
		if cells[k] == nil {
			keys = append(keys, k)
			cells[k] = map[string]string{}
		}
		marks := make([]string, len(c.Holm))
		for i, h := range c.Holm {
			marks[i] = h.Mark()
		}
		cells[k][c.Half] = strings.Join(marks, " ")
	}
	fmt.Fprintf(&b, "| %s against | delivery |", policy)
	for _, h := range halves {
		fmt.Fprintf(&b, " %s, %d |", h, count[h])
	}
	fmt.Fprint(&b, "\n|---|---|")
	for range halves {
		fmt.Fprint(&b, ":---:|")
	}
	fmt.Fprintln(&b)
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %s |", k.baseline, k.delivery)
		for _, h := range halves {
			fmt.Fprintf(&b, " %s |", cells[k][h])
		}
		fmt.Fprintln(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
