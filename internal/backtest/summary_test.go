package backtest_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The scenarios of the frontier, in the summary's order, with the names
// its tables give them.
var summaryScenarios = []struct{ dir, label string }{
	{"gentd26-from-one-gpu", "GenTD26 from 1 GPU"},
	{"gentd26-from-half-gpu", "GenTD26 from 0.50"},
	{"llm-fitting-one-gpu", "LLM fitting one GPU"},
	{"llm-all", "LLM, all"},
	{"fresh-fitting-one-gpu", "fresh, fitting one GPU"},
	{"fresh-all", "fresh, all"},
}

var updateSummary = flag.Bool("update-summary", false, "rewrite BENCHMARKS.md's summary-quality block from docs/backtest")

const (
	shippedDelivery = "pull requests + live fast path"
	prDelivery      = "pull requests"
)

// TestBenchmarksSummary: the claims of BENCHMARKS.md's summary about
// recommendation quality are recomputed from the committed results, so
// that prose and tables cannot drift apart. The block between
// "<!-- summary-quality -->" and "<!-- /summary-quality -->" must be
// what renderQualitySummary makes of each scenario's frontier.md,
// frontier-pull-requests.md and pareto.md. Each cell's verdict is judged
// again: dominance on the held totals of pareto.md, no Holm-corrected
// difference significantly worse in frontier.md. A cell whose verdict
// in frontier.md disagrees fails too.
func TestBenchmarksSummary(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs, err := filepath.Glob(filepath.Join(root, "docs", "backtest", "*", "frontier.md"))
	require.NoError(t, err)
	require.Len(t, dirs, len(summaryScenarios), "every scenario with a frontier is in the summary: add it to summaryScenarios")
	want := renderQualitySummary(t, root)
	md, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)<!-- summary-quality -->\n(.*?)<!-- /summary-quality -->`).FindSubmatchIndex(md)
	require.NotNil(t, m, "BENCHMARKS.md has no <!-- summary-quality --> block")
	if *updateSummary {
		out := string(md[:m[2]]) + want + string(md[m[3]:])
		require.NoError(t, os.WriteFile(filepath.Join(root, "BENCHMARKS.md"), []byte(out), 0o644))
		return
	}
	require.Equal(t, want, string(md[m[2]:m[3]]), "BENCHMARKS.md's summary differs from docs/backtest/*: -update-summary rewrites it")
}

// summaryCell is one baseline × scenario cell under one delivery.
type summaryCell struct {
	chosen, marks, ratio string
	dominates, signif    bool
	loses                []string
}

// renderQualitySummary renders the summary's block from the committed
// results.
func renderQualitySummary(t *testing.T, root string) string {
	t.Helper()
	cells := map[string]map[string]map[string]summaryCell{} // delivery → scenario → baseline
	var baselines []string
	recommended := map[string]string{}
	held := map[string]int{}
	for _, sc := range summaryScenarios {
		dir := filepath.Join(root, "docs", "backtest", sc.dir)
		totals := readPareto(t, filepath.Join(dir, "pareto.md"))
		for _, d := range []struct{ delivery, file string }{{shippedDelivery, "frontier.md"}, {prDelivery, "frontier-pull-requests.md"}} {
			tot := totals[d.delivery]
			require.NotNil(t, tot, "%s/pareto.md has no table for %q", sc.dir, d.delivery)
			rows, n := readFrontier(t, filepath.Join(dir, d.file))
			if d.delivery == shippedDelivery {
				held[sc.dir] = n
				recommended[sc.dir] = fmt.Sprintf("%.2f", tot["recommended"][0]/tot["oracle-daily"][0])
			}
			var names []string
			for _, r := range rows {
				names = append(names, r.baseline)
				c := judgeCell(t, sc.dir+"/"+d.file, r, tot)
				if cells[d.delivery] == nil {
					cells[d.delivery] = map[string]map[string]summaryCell{}
				}
				if cells[d.delivery][sc.dir] == nil {
					cells[d.delivery][sc.dir] = map[string]summaryCell{}
				}
				cells[d.delivery][sc.dir][r.baseline] = c
			}
			if baselines == nil {
				baselines = names
			}
			require.Equal(t, baselines, names, "%s/%s: the same baselines in the same order as the other scenarios", sc.dir, d.file)
		}
	}
	count := func(delivery string) int {
		n := 0
		for _, sc := range summaryScenarios {
			for _, b := range baselines {
				if cells[delivery][sc.dir][b].dominates {
					n++
				}
			}
		}
		return n
	}
	total := len(baselines) * len(summaryScenarios)
	var b strings.Builder
	fmt.Fprint(&b, "| baseline |")
	for _, sc := range summaryScenarios {
		fmt.Fprintf(&b, " %s |", sc.label)
	}
	fmt.Fprint(&b, "\n|---|")
	for range summaryScenarios {
		fmt.Fprint(&b, "---|")
	}
	fmt.Fprintln(&b)
	var never []string
	for _, base := range baselines {
		fmt.Fprintf(&b, "| %s |", base)
		hit := false
		for _, sc := range summaryScenarios {
			c := cells[shippedDelivery][sc.dir][base]
			hit = hit || c.dominates
			var v string
			switch {
			case c.signif:
				v = "**dominates**, significantly"
			case c.dominates:
				v = "**dominates**"
			default:
				v = "loses on " + strings.Join(c.loses, ", ")
			}
			fmt.Fprintf(&b, " %s (%s) `%s` %s |", c.chosen, c.ratio, c.marks, v)
		}
		fmt.Fprintln(&b)
		if !hit {
			never = append(never, "`"+base+"`")
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "A tune-chosen setting dominates %d of the %d cells under the shipped delivery.\n", count(shippedDelivery), total)
	fmt.Fprintf(&b, "With pull requests alone it dominates %d of %d.\n", count(prDelivery), total)
	fmt.Fprintf(&b, "No tune-chosen setting dominates %s in any scenario.\n", joinAnd(never))
	var none []string
	for _, sc := range summaryScenarios {
		if !slices.ContainsFunc(baselines, func(base string) bool { return cells[shippedDelivery][sc.dir][base].dominates }) {
			none = append(none, sc.label)
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(&b, "No baseline is dominated in these scenarios: %s.\n", strings.Join(none, "; "))
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| scenario | held workloads | cells dominated, shipped delivery | pull requests alone | `recommended`: held slack ÷ oracle-daily |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|")
	for _, sc := range summaryScenarios {
		n := map[string]int{}
		for _, d := range []string{shippedDelivery, prDelivery} {
			for _, base := range baselines {
				if cells[d][sc.dir][base].dominates {
					n[d]++
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d of %d | %d of %d | %s |\n", sc.label, held[sc.dir], n[shippedDelivery], len(baselines),
			n[prDelivery], len(baselines), recommended[sc.dir])
	}
	return b.String()
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return "every baseline"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// judgeCell judges one row of a frontier table again from pareto.md's
// held totals and the row's Holm marks, and fails if the row's own
// verdict or ratio says otherwise.
func judgeCell(t *testing.T, where string, r frontierRow, tot map[string][4]float64) summaryCell {
	t.Helper()
	s, ok := tot[r.chosen]
	require.True(t, ok, "%s: %s is not in pareto.md", where, r.chosen)
	base, ok := tot[r.baseline]
	require.True(t, ok, "%s: %s is not in pareto.md", where, r.baseline)
	oracle, ok := tot["oracle-daily"]
	require.True(t, ok, "%s: oracle-daily is not in pareto.md", where)
	c := summaryCell{chosen: r.chosen, marks: strings.Join(r.marks, " ")}
	onTotals := s[1] <= base[1] && s[2] <= base[2] && s[3] <= base[3] && s[0] < base[0]
	worse, better := slices.Contains(r.marks, "−"), slices.Contains(r.marks, "+")
	c.dominates = onTotals && !worse
	c.signif = c.dominates && better
	names := []string{"slack", "memory", "compute", "kills + evictions"}
	if !c.dominates {
		for i := range s {
			if d := s[i] - base[i]; d > 0 || i == 0 && d >= 0 || r.marks[i] == "−" {
				c.loses = append(c.loses, names[i])
			}
		}
	}
	// The ratio as pareto.md's rounded totals give it, within what
	// their rounding to 0.1 GPU-h can move.
	ratio, err := strconv.ParseFloat(r.ratio, 64)
	require.NoError(t, err, "%s: %s: ratio", where, r.baseline)
	require.InDelta(t, s[0]/oracle[0], ratio, 0.006, "%s: %s: slack ÷ oracle-daily", where, r.baseline)
	c.ratio = r.ratio
	switch {
	case c.signif:
		require.Equal(t, "**dominates**, significantly", r.verdict, "%s: %s", where, r.baseline)
	case c.dominates:
		require.Equal(t, "**dominates**", r.verdict, "%s: %s", where, r.baseline)
	default:
		require.True(t, strings.HasPrefix(r.verdict, "misses: "), "%s: %s: %q, want a miss", where, r.baseline, r.verdict)
		var said []string
		for _, part := range strings.Split(strings.TrimPrefix(r.verdict, "misses: "), ", ") {
			name := strings.Fields(part)[0]
			if name == "kills" {
				name = "kills + evictions"
			}
			if !slices.Contains(said, name) {
				said = append(said, name)
			}
		}
		require.Equal(t, c.loses, said, "%s: %s: what the setting misses on", where, r.baseline)
	}
	return c
}

// frontierRow is one row of a frontier table.
type frontierRow struct {
	baseline, chosen string
	marks            []string // slack, memory, compute, kills + evictions
	ratio, verdict   string
}

// readFrontier reads a frontier.md: its rows and the held workloads its
// title gives.
func readFrontier(t *testing.T, path string) ([]frontierRow, int) {
	t.Helper()
	var rows []frontierRow
	n := 0
	title := regexp.MustCompile(`Judged on the held half: (\d+) workloads\.\*$`)
	eachLine(t, path, func(line string) {
		if m := title.FindStringSubmatch(line); m != nil {
			n, _ = strconv.Atoi(m[1])
			return
		}
		c := tableCells(line)
		if len(c) != 9 || c[0] == "baseline" || strings.HasPrefix(c[0], "---") {
			return
		}
		r := frontierRow{baseline: c[0], chosen: strings.TrimSuffix(c[2], " (closest miss)"), ratio: c[7], verdict: c[8]}
		for _, d := range c[3:7] {
			f := strings.Fields(d)
			require.NotEmpty(t, f, "%s: %s: an empty difference", path, c[0])
			r.marks = append(r.marks, f[len(f)-1])
		}
		rows = append(rows, r)
	})
	require.NotEmpty(t, rows, "%s: no rows", path)
	require.NotZero(t, n, "%s: no held workloads in its title", path)
	return rows, n
}

// readPareto reads a pareto.md: per delivery, each strategy's held
// totals of slack GPU-h, memory and compute breach-minutes, and kills +
// evictions.
func readPareto(t *testing.T, path string) map[string]map[string][4]float64 {
	t.Helper()
	out := map[string]map[string][4]float64{}
	title := regexp.MustCompile(`^\*(.+), held half \(\d+ workloads\)\*$`)
	var delivery string
	eachLine(t, path, func(line string) {
		if m := title.FindStringSubmatch(line); m != nil {
			delivery = m[1]
			out[delivery] = map[string][4]float64{}
			return
		}
		c := tableCells(line)
		if len(c) != 6 || !strings.HasSuffix(c[1], " %") {
			return
		}
		var v [4]float64
		for i := range v {
			f, err := strconv.ParseFloat(c[2+i], 64)
			require.NoError(t, err, "%s: %s", path, line)
			v[i] = f
		}
		out[delivery][c[0]] = v
	})
	return out
}

func eachLine(t *testing.T, path string, fn func(string)) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
	require.NoError(t, sc.Err())
}

// tableCells splits a Markdown table row into its trimmed cells; nil for
// any other line.
func tableCells(line string) []string {
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil
	}
	parts := strings.Split(line[1:len(line)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// TestParetoSweepColumn: pareto.md's "by a setting of the sweep" column
// names, for each baseline, every risk setting whose held totals dominate
// it, as its strategy table gives them; "none" only where none does.
func TestParetoSweepColumn(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "backtest", "*", "pareto.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	swept := 0
	for _, f := range files {
		totals := readPareto(t, f)
		var delivery string
		title := regexp.MustCompile(`^\*(.+), held half \(\d+ workloads\)\*$`)
		eachLine(t, f, func(line string) {
			if m := title.FindStringSubmatch(line); m != nil {
				delivery = m[1]
				return
			}
			c := tableCells(line)
			if len(c) != 4 || c[0] == "baseline" || strings.HasPrefix(c[0], "---") {
				return
			}
			tot := totals[delivery]
			base, ok := tot[c[0]]
			require.True(t, ok, "%s: %s has no totals", f, c[0])
			var want []string
			for name, s := range tot {
				if strings.HasPrefix(name, "risk-") && s[1] <= base[1] && s[2] <= base[2] && s[3] <= base[3] && s[0] < base[0] {
					want = append(want, name)
				}
			}
			slices.SortFunc(want, func(a, b string) int { return riskOf(t, a) - riskOf(t, b) })
			got := "none"
			if len(want) > 0 {
				got = strings.Join(want, "; ")
				swept++
			}
			require.Equal(t, got, c[2], "%s, %s, %s: the settings of the sweep that dominate it", f, delivery, c[0])
		})
	}
	require.NotZero(t, swept, "no risk setting dominates any baseline anywhere: the column is not read")
}

func riskOf(t *testing.T, name string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(name, "risk-"))
	require.NoError(t, err, name)
	return n
}

// TestBenchmarksVPATie: the table of docs/benchmarks/quality.md between
// "<!-- summary-vpa-tie -->" and "<!-- /summary-vpa-tie -->" is the
// distance to the protocol's second goal as pareto.md and frontier.md
// give it: slack within 1.3× the daily oracle's at the setting that ties
// `vpa`'s breaches (the riskiest whose held memory and compute
// breach-minutes and kills + evictions are each no more than vpa's).
func TestBenchmarksVPATie(t *testing.T) {
	root := filepath.Join("..", "..")
	var b strings.Builder
	fmt.Fprintln(&b, "| scenario | `recommended` | `vpa` | tune-chosen against `vpa` | the tie on the held half | within 1.3× |")
	fmt.Fprintln(&b, "|---|---:|---:|---|---|---|")
	for _, sc := range summaryScenarios {
		dir := filepath.Join(root, "docs", "backtest", sc.dir)
		tot := readPareto(t, filepath.Join(dir, "pareto.md"))[shippedDelivery]
		require.NotNil(t, tot, "%s/pareto.md: no %s table", sc.dir, shippedDelivery)
		ratio := func(name string) float64 { return tot[name][0] / tot["oracle-daily"][0] }
		rows, _ := readFrontier(t, filepath.Join(dir, "frontier.md"))
		i := slices.IndexFunc(rows, func(r frontierRow) bool { return r.baseline == "vpa" })
		require.GreaterOrEqual(t, i, 0, "%s/frontier.md has no vpa row", sc.dir)
		c := judgeCell(t, sc.dir+"/frontier.md", rows[i], tot)
		verdict := "misses"
		if c.dominates {
			verdict = "dominates"
		}
		vpa := tot["vpa"]
		tie, best := "none", -1
		for name, s := range tot {
			if strings.HasPrefix(name, "risk-") && s[1] <= vpa[1] && s[2] <= vpa[2] && s[3] <= vpa[3] && riskOf(t, name) > best {
				tie, best = name, riskOf(t, name)
			}
		}
		within := "no tie"
		tieCell := "none"
		if best >= 0 {
			r := ratio(tie)
			tieCell = fmt.Sprintf("%s: %.2f", tie, r)
			switch {
			case r < 1:
				within = "yes (below 1: breaches buy it)"
			case r <= 1.3:
				within = "yes"
			default:
				within = fmt.Sprintf("no, by %.2f", r-1.3)
			}
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %s: %s, %s | %s | %s |\n", sc.label, ratio("recommended"), ratio("vpa"),
			c.chosen, c.ratio, verdict, tieCell, within)
	}
	want := b.String()
	path := filepath.Join(root, qualityDoc)
	md, err := os.ReadFile(path)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)<!-- summary-vpa-tie -->\n(.*?)<!-- /summary-vpa-tie -->`).FindSubmatchIndex(md)
	require.NotNil(t, m, "%s has no <!-- summary-vpa-tie --> block", qualityDoc)
	if *updateSummary {
		out := string(md[:m[2]]) + want + string(md[m[3]:])
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return
	}
	require.Equal(t, want, string(md[m[2]:m[3]]), "%s's distance to the second goal differs from docs/backtest/*: -update-summary rewrites it", qualityDoc)
}
