package backtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// writeFiles writes results.txt, results.json, results.md, the split's
// paired comparisons (split.md, verdicts.md), the trade-off plots and the
// plots of a few workloads under OutDir.
func writeFiles(opts *Options, traces []*Trace, cfg Config, deliveries []Delivery, policies []string) error {
	results := deliveries[0].Results
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return err
	}
	// Every write goes through a Root: whatever a name holds, no file
	// lands outside --out.
	out, err := os.OpenRoot(opts.OutDir)
	if err != nil {
		return err
	}
	defer out.Close()
	write := func(name string, fn func(f *os.File) error) error {
		f, err := out.Create(name)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return f.Close()
	}
	config := map[string]any{
		"start": cfg.Start.String(), "cadence": cfg.Cadence.String(), "mergeDelay": cfg.MergeDelay.String(),
		"policies": opts.Policies, "maxPeakPercent": opts.MaxPeak, "oomKill": cfg.OOMKill, "restart": cfg.Restart.String(),
		"liveMaxChanges": cfg.LiveMaxChanges,
	}
	if err := write("results.txt", func(f *os.File) error { return WriteTables(f, deliveries) }); err != nil {
		return err
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, opts.inputs(), config, opts.protocol, opts.Frontier, deliveries); err != nil {
		return err
	}
	if err := write("results.json", func(f *os.File) error { _, err := f.Write(js.Bytes()); return err }); err != nil {
		return err
	}
	// The Markdown tables are rendered from results.json as written, as
	// the check of docs/benchmarks/quality.md renders them.
	doc, err := ReadResults(bytes.NewReader(js.Bytes()))
	if err != nil {
		return err
	}
	if err := write("results.md", func(f *os.File) error { return doc.WriteMarkdown(f) }); err != nil {
		return err
	}
	shipped := slices.DeleteFunc(slices.Clone(policies), func(p string) bool { return slices.Contains(opts.Frontier, p) })
	if err := writeSplit(write, traces, deliveries, shipped, opts.Frontier, opts.Fresh); err != nil {
		return err
	}
	used := map[string]bool{"results.txt": true, "results.json": true, "results.md": true, "split.md": true, "verdicts.md": true}
	if err := writeFrontier(write, used, opts, traces, deliveries, shipped); err != nil {
		return err
	}
	if err := writePareto(write, used, opts, traces, deliveries, policies, shipped); err != nil {
		return err
	}
	for i, d := range deliveries {
		name := "tradeoff.svg"
		if i > 0 {
			name = "tradeoff-live.svg"
		}
		used[name] = true
		if err := write(name, func(f *os.File) error {
			return PlotTradeoff(f, fmt.Sprintf("%d workloads, start %s, %s", len(traces), cfg.Start, d.Name), d.Results)
		}); err != nil {
			return err
		}
	}
	if err := writeExamples(write, used, opts, traces, results); err != nil {
		return err
	}
	opts.Logger.Info("results written", "dir", opts.OutDir)
	return nil
}

// writeFrontier chooses the frontier's settings on the tune half
// (frontier.json), or reads the choices for fresh data, and judges them on
// the held half: frontier.md under the live delivery, the shipped one,
// frontier-pull-requests.md without it.
func writeFrontier(write func(string, func(*os.File) error) error, used map[string]bool, opts *Options, traces []*Trace,
	deliveries []Delivery, shipped []string) error {
	if len(opts.Frontier) == 0 {
		return nil
	}
	var choices []Choice
	if opts.FrontierFrom != "" {
		f, err := os.Open(opts.FrontierFrom)
		if err != nil {
			return err
		}
		choices, err = ReadChoices(f, opts.FrontierFrom)
		f.Close()
		if err != nil {
			return err
		}
	} else {
		choices = Choose(traces, deliveries, opts.Frontier, shipped)
		used["frontier.json"] = true
		if err := write("frontier.json", func(f *os.File) error { return WriteChoices(f, choices) }); err != nil {
			return err
		}
	}
	cells, err := Judge(traces, deliveries, choices, opts.Fresh)
	if err != nil {
		return err
	}
	from := "chosen on the tune half"
	if opts.FrontierFrom != "" {
		from = "chosen on the tune half of " + filepath.Base(filepath.Dir(opts.FrontierFrom))
	}
	for _, d := range deliveries {
		name := "frontier-pull-requests.md"
		if d.Live {
			name = "frontier.md"
		}
		var mine []FrontierCell
		for _, c := range cells {
			if c.Delivery == d.Name {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			continue
		}
		title := fmt.Sprintf("Delivery: %s. Settings %s. Judged on the held half: %d workloads.", d.Name, from, mine[0].Workloads)
		used[name] = true
		if err := write(name, func(f *os.File) error { return WriteFrontier(f, title, mine) }); err != nil {
			return err
		}
	}
	return nil
}

// writeExamples plots a few workloads chosen from the results, and those
// --plot names.
func writeExamples(write func(string, func(*os.File) error) error, used map[string]bool, opts *Options, traces []*Trace, results []Result) error {
	names := chooseExamples(results)
	for _, n := range opts.Plot {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		i := slices.IndexFunc(traces, func(t *Trace) bool { return t.Name == n })
		if i < 0 {
			return fmt.Errorf("`--plot` %q: no such workload in the traces", n)
		}
		file := plotFile(n, used)
		if err := write(file, func(f *os.File) error { return PlotWorkload(f, traces[i], results) }); err != nil {
			return err
		}
		opts.Logger.Debug("workload plotted", "workload", n, "file", file)
	}
	return nil
}

// writeSplit writes the comparisons out of sample: every policy against
// every baseline (others, the frontier's settings, are neither), paired per workload, on each half of the split
// (split.md); the verdicts of the last policy, the one proposed, in one
// table (verdicts.md).
func writeSplit(write func(string, func(*os.File) error) error, traces []*Trace, deliveries []Delivery, policies, others []string, fresh bool) error {
	comparisons := Compare(traces, deliveries, policies, others, fresh)
	if err := write("split.md", func(f *os.File) error { return WriteSplit(f, comparisons) }); err != nil {
		return err
	}
	if len(policies) == 0 {
		return write("verdicts.md", func(*os.File) error { return nil })
	}
	return write("verdicts.md", func(f *os.File) error { return WriteVerdicts(f, comparisons, policies[len(policies)-1]) })
}

// writePareto writes pareto.md (every strategy on the held half, with
// dominance per baseline) and the plots of slack against memory and
// against compute breach-minutes there.
func writePareto(write func(string, func(*os.File) error) error, used map[string]bool, opts *Options, traces []*Trace, deliveries []Delivery,
	policies, shippedPolicies []string) error {
	fresh := opts.Fresh
	ours := func(n string) bool { return slices.Contains(policies, n) }
	shipped := func(n string) bool { return slices.Contains(shippedPolicies, n) }
	var md bytes.Buffer
	for _, d := range deliveries {
		results := d.Results
		for _, half := range []string{HalfHeld} {
			pts := PointsOn(traces, results, half, fresh, ours, shipped)
			if pts[0].Score.Workloads == 0 {
				continue
			}
			if md.Len() > 0 {
				md.WriteString("\n")
			}
			if err := WritePareto(&md, fmt.Sprintf("%s, %s half (%d workloads)", d.Name, half, pts[0].Score.Workloads), pts); err != nil {
				return err
			}
			for _, compute := range []bool{false, true} {
				name := "pareto-memory"
				if compute {
					name = "pareto-compute"
				}
				if d.Live {
					name += "-live"
				}
				name += ".svg"
				used[name] = true
				title := fmt.Sprintf("%s, %s half (%d workloads)", d.Name, half, pts[0].Score.Workloads)
				curves := map[string][]string{"the frontier": opts.Frontier}
				if err := write(name, func(f *os.File) error { return PlotPareto(f, title, compute, pts, curves) }); err != nil {
					return err
				}
			}
		}
	}
	used["pareto.md"] = true
	return write("pareto.md", func(f *os.File) error { _, err := f.Write(md.Bytes()); return err })
}

// plotFile names the plot of workload name: workload-<name>.svg, with
// every byte outside [A-Za-z0-9._-] replaced by '_', so that a name from
// a trace (x/../../pwned, a line break, a NUL) can only ever be one plain
// file name. The replacement can make two names one, so a name already in
// used gets -2, -3, ...; the result is added to used.
func plotFile(name string, used map[string]bool) string {
	// File names are limited to 255 bytes; leave room for the rest.
	const maxName = 200
	b := []byte(name)
	if len(b) > maxName {
		b = b[:maxName]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	base := "workload-" + string(b)
	file := base + ".svg"
	for k := 2; used[file]; k++ {
		file = fmt.Sprintf("%s-%d.svg", base, k)
	}
	used[file] = true
	return file
}

// chooseExamples picks up to three workloads worth looking at: where the
// first policy leaves the most slack, and where it and VPA
// baseline breach memory the most.
func chooseExamples(results []Result) []string {
	pick := func(r Result, score func(Score) float64) string {
		best, name := 0.0, ""
		for _, w := range r.Workloads {
			if v := score(w.Score); v > best {
				best, name = v, w.Name
			}
		}
		return name
	}
	var names []string
	add := func(n string) {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	breach := func(s Score) float64 { return s.MemoryBreachMinutes }
	if len(results) > 1 {
		add(pick(results[1], func(s Score) float64 { return s.SlackGPUHours }))
		add(pick(results[1], breach))
	}
	for _, r := range results {
		if r.Strategy == "vpa" {
			add(pick(r, breach))
		}
	}
	return names
}
