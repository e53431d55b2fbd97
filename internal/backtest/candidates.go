package backtest

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Candidates pairs every policy but against with against, per workload,
// on each half of the split: a candidate change is judged against the
// policy it would replace, as the policies are judged against the
// baselines (Compare), so the same bootstrap gives its intervals.
func Candidates(traces []*Trace, deliveries []Delivery, policies []string, against string, fresh bool) []Comparison {
	cands := slices.DeleteFunc(slices.Clone(policies), func(p string) bool { return p == against })
	return Compare(traces, deliveries, cands, nil, fresh)
}

// WriteCandidates renders, per delivery and half, the totals of against
// and of each candidate, and each candidate's mean difference per
// workload from against with its interval and verdict.
func WriteCandidates(w io.Writer, traces []*Trace, deliveries []Delivery, cs []Comparison, against string, fresh bool) error {
	var b strings.Builder
	type key struct{ delivery, half string }
	diffs := map[key]map[string]Comparison{}
	for _, c := range cs {
		k := key{c.Delivery, c.Half}
		if diffs[k] == nil {
			diffs[k] = map[string]Comparison{}
		}
		diffs[k][c.Policy] = c
	}
	no := func(string) bool { return false }
	for _, d := range deliveries {
		for _, half := range Halves {
			k := key{d.Name, half}
			if len(diffs[k]) == 0 {
				continue
			}
			fmt.Fprintf(&b, "*candidates − %s, %s, %s half*\n\n", against, d.Name, half)
			fmt.Fprint(&b, "| policy | relative slack | slack GPU-h | memory breach min | compute breach min | OOM kills + evictions | changes |")
			for _, pm := range pairedMetrics {
				fmt.Fprintf(&b, " Δ %s /workload [95 %% CI] |", pm.Name)
			}
			fmt.Fprint(&b, "\n|---|---:|---:|---:|---:|---:|---:|")
			for range pairedMetrics {
				fmt.Fprint(&b, "---|")
			}
			fmt.Fprintln(&b)
			for _, p := range PointsOn(traces, d.Results, half, fresh, no, no) {
				s := p.Score
				fmt.Fprintf(&b, "| %s | %.1f %% | %.1f | %.0f | %.0f | %d | %d |", p.Strategy, 100*s.RelativeSlack(), s.SlackGPUHours,
					s.MemoryBreachMinutes, s.ComputeBreachMinutes, s.OOMKills+s.Evictions, s.Changes)
				c, ok := diffs[k][p.Strategy]
				for i := range pairedMetrics {
					if !ok {
						fmt.Fprint(&b, " |")
						continue
					}
					iv := c.Diffs[i]
					fmt.Fprintf(&b, " %s [%s, %s] %s |", num(iv.Mean), num(iv.Lo), num(iv.Hi), verdictMark(iv))
				}
				fmt.Fprintln(&b)
			}
			fmt.Fprintln(&b)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCandidates prints the comparison with --against, and writes it to
// candidates.md under OutDir when one is given.
func writeCandidates(opts *Options, traces []*Trace, deliveries []Delivery) error {
	var policies []string
	for _, r := range deliveries[0].Results {
		policies = append(policies, r.Strategy)
	}
	cs := Candidates(traces, deliveries, policies, opts.Against, opts.Fresh)
	var b strings.Builder
	if err := WriteCandidates(&b, traces, deliveries, cs, opts.Against, opts.Fresh); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "\n%s", b.String())
	if opts.OutDir == "" {
		return nil
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return err
	}
	out, err := os.OpenRoot(opts.OutDir)
	if err != nil {
		return err
	}
	defer out.Close()
	return out.WriteFile("candidates.md", []byte(b.String()), 0o644)
}
