package backtest

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The halves of the split, fixed before any result was seen: workloads by
// a stable hash of their name, and, for traces longer than a week, the
// first week against the second. A policy is tuned on the tune half and
// judged on the other.
const (
	HalfAll        = "all"
	HalfTune       = "tune (by name)"
	HalfScore      = "score (by name)"
	HalfFirstWeek  = "tune (week 1)"
	HalfSecondWeek = "score (week 2)"
)

// Week is the length of a week split's first half.
const Week = 7 * 24 * time.Hour

// HashHalf puts a workload in the tune or score half by the FNV-1a hash
// of its name: even in tune, odd in score. It never changes with the
// results, the order of the traces or the run.
func HashHalf(name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	if h.Sum64()%2 == 0 {
		return HalfTune
	}
	return HalfScore
}

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
	BootstrapRounds = 2000
	BootstrapSeed   = 22
)

// Bootstrap is the mean of each row of d (one a metric, each entry a
// workload's paired difference) with a 95 % percentile interval. The
// workloads are resampled together for every metric, from a fixed seed.
func Bootstrap(d [][]float64) []Interval {
	out := make([]Interval, len(d))
	if len(d) == 0 || len(d[0]) == 0 {
		return out
	}
	n := len(d[0])
	rng := rand.New(rand.NewPCG(BootstrapSeed, BootstrapSeed))
	means := make([][]float64, len(d))
	for range BootstrapRounds {
		sums := make([]float64, len(d))
		for range n {
			i := rng.IntN(n)
			for m := range d {
				sums[m] += d[m][i]
			}
		}
		for m := range d {
			means[m] = append(means[m], sums[m]/float64(n))
		}
	}
	for m := range d {
		var sum float64
		for _, v := range d[m] {
			sum += v
		}
		slices.Sort(means[m])
		out[m] = Interval{Mean: sum / float64(n), Lo: percentileOf(means[m], 0.025), Hi: percentileOf(means[m], 0.975)}
	}
	return out
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
// per-workload difference (policy − baseline) of each metric.
type Comparison struct {
	Delivery, Policy, Baseline, Half string
	Workloads                        int
	Diffs                            []Interval
}

// halfScores scores every workload of one result on each half it belongs
// to.
func halfScores(traces []*Trace, r Result) map[string]map[int]Score {
	out := map[string]map[int]Score{}
	put := func(half string, i int, s Score) {
		if out[half] == nil {
			out[half] = map[int]Score{}
		}
		out[half][i] = s
	}
	for i, w := range r.Workloads {
		tr := traces[i]
		put(HalfAll, i, w.Score)
		put(HashHalf(tr.Name), i, w.Score)
		if time.Duration(tr.End()-tr.Start())*time.Millisecond <= Week {
			continue
		}
		cut := tr.Start() + Week.Milliseconds()
		put(HalfFirstWeek, i, EvaluateWindow(tr, w.Timeline, usage.Window{From: math.MinInt64, To: cut}))
		put(HalfSecondWeek, i, EvaluateWindow(tr, w.Timeline, usage.Window{From: cut, To: math.MaxInt64}))
	}
	return out
}

// Compare pairs every policy with every baseline, per delivery and half.
// Baselines are the strategies that are neither a policy nor an oracle.
func Compare(traces []*Trace, deliveries []Delivery, policies []string) []Comparison {
	var out []Comparison
	for _, d := range deliveries {
		scores := map[string]map[string]map[int]Score{}
		for _, r := range d.Results {
			scores[r.Strategy] = halfScores(traces, r)
		}
		for _, p := range policies {
			for _, b := range d.Results {
				if slices.Contains(policies, b.Strategy) || strings.HasPrefix(b.Strategy, "oracle") {
					continue
				}
				for _, half := range []string{HalfAll, HalfTune, HalfScore, HalfFirstWeek, HalfSecondWeek} {
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
					out = append(out, Comparison{Delivery: d.Name, Policy: p, Baseline: b.Strategy, Half: half,
						Workloads: len(idx), Diffs: Bootstrap(diffs)})
				}
			}
		}
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
	s := fmt.Sprintf("%.3g", v)
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
// order (slack, memory breach, compute breach, kills + evictions).
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
		marks := make([]string, len(c.Diffs))
		for i, iv := range c.Diffs {
			marks[i] = verdictMark(iv)
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
