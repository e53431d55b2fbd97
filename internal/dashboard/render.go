// Package dashboard keeps the tool's one issue per repository, as
// Renovate keeps its Dependency Dashboard: found again by a hidden marker
// (and a label) among the issues the tool's own user opened, edited in
// place and only when its text would change. It says what the fleet asks
// for, what the run recommends and what it could not serve, and carries
// checkboxes a person ticks — retry a declined recommendation, make a pull
// request afresh on the base, open one a cap held back — that the next run
// reads back (Parse) and hands to publish as publish.Asked, when whoever
// ticked them may push.
//
// Render and Parse are the functional core: text from values, values from
// text. Read and Dashboard.Write are the shell, through Issues.
package dashboard

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// Marker is hidden at the top of the dashboard's body: the tool knows its
// issue by it. It differs from a pull request's marker, which holds JSON.
const Marker = "<!-- gpu-rightsizing-dashboard -->"

// MarkerOf is the marker of the dashboard of a run limited to clusters
// (`--cluster`): Marker names the run over every cluster, and no other
// marker holds it, so each cluster set finds its own issue.
func MarkerOf(clusters []string) string {
	if len(clusters) == 0 {
		return Marker
	}
	return "<!-- gpu-rightsizing-dashboard clusters=" + url.QueryEscape(strings.Join(clusterSet(clusters), ",")) + " -->"
}

// Title is the default title of the dashboard of a run limited to
// clusters; the run over every cluster's has none of them.
func Title(clusters []string) string {
	const title = "GPU rightsizing dashboard"
	if len(clusters) == 0 {
		return title
	}
	return title + " (" + strings.Join(clusterSet(clusters), ", ") + ")"
}

// clusterSet is clusters sorted, each once: `--cluster b --cluster a`
// is the same set as `--cluster a --cluster b`.
func clusterSet(clusters []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(clusters)))
}

// Input is what a run knows when it renders the dashboard.
type Input struct {
	Plan *plan.Plan
	// Grouping is the run's --group-by, "" for each strategy's own: the
	// change sets are made again with it to know which pull request holds
	// which workload.
	Grouping plan.Grouping
	// Publish is what publishing did; nil when the forge was not read
	// (`recommender report`), and the pull requests are not shown.
	Publish *publish.Report
	// ReadCluster says the cluster's placement was read (by `recommender
	// report`): Consolidation then holds the GpuConsolidationPolicies'
	// reports, and Notes what reading them left out.
	ReadCluster   bool
	Consolidation []consolidate.Report
	Notes         []string
	// Findings are the fleet report's findings by workload ref (an
	// upsize whose rollout would stall, with the settings that fit; a
	// saturated GPU where it used more than its share): from `report`, or
	// from a run with --fleet-findings.
	Findings map[string][]string
	// Clusters are the clusters the run is limited to (`--cluster`),
	// empty for every cluster: the body's marker names them.
	Clusters []string

	// others are the issues with the label and the marker that the tool
	// did not open (Dashboard.Write sets them).
	others []scm.Issue
}

// Render is the dashboard's body: the same input always gives the same
// text, so that a run with nothing new edits nothing. Every text from the
// repository, the cluster or the forge is escaped: none can end a cell or
// a line, nor write a marker or a checkbox of its own.
func Render(in Input) (string, error) {
	var b strings.Builder
	b.WriteString(MarkerOf(in.Clusters) + "\n")
	b.WriteString("This issue is kept up to date by the GPU rightsizing recommender on every run. " +
		"Tick a box to ask the next run to act; it unticks it when done.\n")
	sets, open, err := changeSets(in)
	if err != nil {
		return "", err
	}
	writeTotals(&b, totals(in.Plan, open), in.Publish != nil)
	names := clusterNames(in)
	writeClusterTotals(&b, in.Plan, open, names, in.Publish != nil)
	if in.Publish != nil {
		writePullRequests(&b, in.Publish, sets, names)
	}
	writeLookAlikes(&b, in)
	writeUnserved(&b, in.Plan, in.Publish, names)
	writeConsolidation(&b, in)
	writeFindings(&b, in.Findings)
	return b.String(), nil
}

// MaxBody bounds the issue's body, in bytes: GitHub refuses an issue body
// of more than 65,536 characters, and a fleet with thousands of workloads
// in doubt would write more. Render itself is not bounded: `report`
// prints all of it.
const MaxBody = 60000

// bounded cuts body at the last whole line that fits under max bytes with
// a closing note, so that the dashboard is still written, and says where
// the rest is. Boxes past the cut are not offered this run.
func bounded(body string, max int) string {
	if len(body) <= max {
		return body
	}
	const note = "\n… %d more line(s) not shown: the dashboard is bounded. `recommender report -o markdown` prints all of it.\n"
	cut := strings.LastIndexByte(body[:max-len(note)-20], '\n') + 1
	rest := strings.Count(body[cut:], "\n")
	return body[:cut] + fmt.Sprintf(note, rest)
}

// changeSets maps each change set's key to its decisions, and says which
// workloads an open pull request changes.
func changeSets(in Input) (map[string][]plan.Decision, map[string]bool, error) {
	sets := map[string][]plan.Decision{}
	open := map[string]bool{}
	css, err := in.Plan.ChangeSets(in.Grouping)
	if err != nil {
		return nil, nil, err
	}
	for _, cs := range css {
		sets[cs.Key] = cs.Decisions
	}
	if in.Publish == nil {
		return sets, open, nil
	}
	for _, r := range in.Publish.Results {
		if isOpen(r) {
			for _, d := range sets[r.Key] {
				open[d.Workload.Ref.String()] = true
			}
		}
	}
	return sets, open, nil
}

// isOpen reports whether a result is about a pull request open after the
// run.
func isOpen(r publish.Result) bool {
	switch r.Outcome {
	case publish.Opened, publish.Updated, publish.Unchanged:
		return true
	case publish.Kept:
		return r.Number > 0
	}
	return false
}

// writeTotals writes the fleet's sums; the open pull requests' only when
// the forge was read.
func writeTotals(b *strings.Builder, t Totals, forge bool) {
	b.WriteString("\n## Fleet\n\n")
	if t.Workloads == 0 {
		b.WriteString("No workload of the repository asks for a GPU.\n")
		return
	}
	fmt.Fprintf(b, "| GPU share | GPUs |\n|---|---:|\n")
	fmt.Fprintf(b, "| requested now | %.2f |\n", t.Requested)
	fmt.Fprintf(b, "| recommended | %.2f |\n", t.Recommended)
	fmt.Fprintf(b, "| used (p95) | %.2f |\n", t.UsedP95)
	if forge {
		fmt.Fprintf(b, "| once every open pull request merges | %.2f (%s) |\n", t.AfterOpen, signed(t.AfterOpen-t.Requested))
	}
	fmt.Fprintf(b, "\n%d workload(s) with a GPU request, %d pod(s) reporting usage", t.Workloads, t.Pods)
	if t.Silent > 0 {
		fmt.Fprintf(b, "; %d workload(s) with no pod reporting count for nothing", t.Silent)
	}
	b.WriteString(". Each pod counts its workload's request; p95 is each pod's busier metric over the lookback.\n")
}

func signed(v float64) string {
	if v >= 0.005 {
		return fmt.Sprintf("+%.2f", v)
	}
	if v <= -0.005 {
		return fmt.Sprintf("−%.2f", -v)
	}
	return "±0.00"
}

// writePullRequests lists the open pull requests, each with a box to make
// it afresh on the base; those a cap held back, each with a box to open
// it; and the declined ones, each with a box to propose it again.
func writePullRequests(b *strings.Builder, rep *publish.Report, sets map[string][]plan.Decision, names []string) {
	var open, capped, declined []publish.Result
	for _, r := range rep.Results {
		switch {
		case isOpen(r):
			open = append(open, r)
		case r.Outcome == publish.Capped:
			capped = append(capped, r)
		case r.Outcome == publish.Declined:
			declined = append(declined, r)
		}
	}
	section := func(title, empty string, rs []publish.Result, verb Verb, line func(publish.Result) string) {
		fmt.Fprintf(b, "\n## %s\n\n", title)
		if len(rs) == 0 {
			b.WriteString(empty + "\n")
			return
		}
		slices.SortFunc(rs, func(x, y publish.Result) int { return cmp.Compare(x.Key, y.Key) })
		byCluster(b, names, rs, func(r publish.Result) string { return setCluster(sets[r.Key]) }, func() {}, func(r publish.Result) {
			if len(sets[r.Key]) == 0 {
				// The plan has no change for it: a box would ask for
				// nothing the run could do.
				fmt.Fprintf(b, "- %s\n", line(r))
				return
			}
			fmt.Fprintf(b, "- [ ] %s %s\n", checkbox(verb, r.Key), line(r))
		})
	}
	section("Open pull requests", "None.", open, Rebase, func(r publish.Result) string {
		s := fmt.Sprintf("#%d %s%s", r.Number, changes(r.Key, sets[r.Key]), plan.MarkdownCell(suffix(r)))
		if len(sets[r.Key]) == 0 {
			return s
		}
		return s + " — tick to make it afresh on the base (a person's commits on its branch are replaced)"
	})
	if len(capped) > 0 {
		section("Held back by a cap", "None.", capped, Open, func(r publish.Result) string {
			return changes(r.Key, sets[r.Key]) + " — " + plan.MarkdownCell(r.Detail) + "; tick to open it anyway"
		})
	}
	section("Declined", "None.", declined, Retry, func(r publish.Result) string {
		return changes(r.Key, sets[r.Key]) + " — " + plan.MarkdownCell(r.Detail) + "; tick to propose it again"
	})
}

// writeLookAlikes names the pull requests and issues that look like the
// tool's, by a branch name or the marker, but that it did not open: it
// leaves them alone, and a person should know why nothing acts on them.
// Nothing when there are none. Whose they are is escaped like any text:
// it mentions no one.
func writeLookAlikes(b *strings.Builder, in Input) {
	var prs []publish.LookAlike
	if in.Publish != nil {
		prs = in.Publish.LookAlikes
	}
	if len(prs)+len(in.others) == 0 {
		return
	}
	b.WriteString("\n## Look-alikes\n\nThese look like the tool's, by a branch name or its marker, but it did not open them: it leaves them alone, and boxes ticked in them ask nothing.\n\n")
	prs = slices.Clone(prs)
	slices.SortFunc(prs, func(x, y publish.LookAlike) int { return cmp.Compare(x.Number, y.Number) })
	for _, l := range prs {
		fmt.Fprintf(b, "- pull request #%d (%s): %s\n", l.Number, plan.MarkdownCell(l.Branch), plan.MarkdownCell(l.Why))
	}
	for _, is := range in.others {
		fmt.Fprintf(b, "- issue #%d: opened by %s\n", is.Number, plan.MarkdownCell(is.Author))
	}
}

// suffix is what a result says beyond its pull request's number.
func suffix(r publish.Result) string {
	if r.Outcome == publish.Kept && r.Detail != "" {
		return " (kept: " + r.Detail + ")"
	}
	return ""
}

// changes says what a change set's decisions change, or that the plan
// has none for key.
func changes(key string, ds []plan.Decision) string {
	if len(ds) == 0 {
		return plan.MarkdownCell(key) + ": no change in this run's plan"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s %s → %s", plan.MarkdownCell(d.Workload.Ref.String()), plan.MarkdownCell(d.Current.String()),
			plan.MarkdownCell(d.Recommended.String()))
	}
	return strings.Join(parts, ", ")
}

// writeUnserved lists every workload the run could not serve, by cause:
// its edit refused, its data in doubt, its policy or manifest invalid,
// its pull request failed.
func writeUnserved(b *strings.Builder, p *plan.Plan, rep *publish.Report, names []string) {
	b.WriteString("\n## Not served\n\n")
	type row struct{ what, cause, why, cluster string }
	var rows []row
	for _, d := range p.Decisions {
		if d.Action.Changes() || d.Cause == "" || d.Cause.Conclusive() {
			continue
		}
		rows = append(rows, row{d.Workload.Ref.String(), string(d.Cause), d.Reason(), d.Workload.Ref.Cluster})
	}
	if rep != nil {
		for _, r := range rep.Results {
			if r.Outcome == publish.Failed {
				rows = append(rows, row{r.Key, "publish-failed", r.Detail, ""})
			}
		}
	}
	if len(rows) == 0 && len(p.Problems) == 0 {
		b.WriteString("Every workload was judged on good data and every change published.\n")
		return
	}
	if len(rows) > 0 {
		slices.SortFunc(rows, func(x, y row) int { return cmp.Or(cmp.Compare(x.cause, y.cause), cmp.Compare(x.what, y.what)) })
		head := func() { b.WriteString("| Workload | Cause | Why |\n|---|---|---|\n") }
		byCluster(b, names, rows, func(r row) string { return r.cluster }, head, func(r row) {
			fmt.Fprintf(b, "| %s | %s | %s |\n", plan.MarkdownCell(r.what), plan.MarkdownCell(r.cause), plan.MarkdownCell(r.why))
		})
	}
	if len(p.Problems) > 0 {
		fmt.Fprintf(b, "\n%d problem(s) in the repository; whatever they touch is left alone:\n\n", len(p.Problems))
		for _, pr := range p.Problems {
			fmt.Fprintf(b, "- %s\n", plan.MarkdownCell(pr.String()))
		}
	}
}

// writeConsolidation sums up each GpuConsolidationPolicy's report: its
// pool now and after, and its candidate nodes; the rollout room and the
// noisy neighbours follow, by workload, in writeFindings.
func writeConsolidation(b *strings.Builder, in Input) {
	b.WriteString("\n## Consolidation\n\n")
	if !in.ReadCluster {
		b.WriteString("Not read by this run: `recommender report` reads the cluster's placement.\n")
		return
	}
	if len(in.Consolidation) == 0 {
		b.WriteString("No GpuConsolidationPolicy in the repository.\n")
	}
	for _, r := range in.Consolidation {
		title := r.Policy
		if r.Cluster != "" {
			title += " in cluster " + r.Cluster
		}
		fmt.Fprintf(b, "### %s\n\n%d nodes, %d GPUs; in use now %d, needed now %d, after the open pull requests %d, in use after the drains %d.\n",
			plan.MarkdownCell(title), r.Nodes, r.GPUs, r.InUse, r.NeededNow, r.NeededAfter, r.InUseAfter)
		if len(r.Candidates) == 0 {
			fmt.Fprintf(b, "\nNo node is used below %d%%.\n\n", r.ThresholdPercent)
			continue
		}
		fmt.Fprintf(b, "\n| Node used below %d%% | GPUs | Used | Drainable | Moves or why not |\n|---|---:|---:|---|---|\n", r.ThresholdPercent)
		for _, c := range r.Candidates {
			detail := c.Why
			if c.Drainable {
				detail = moves(c.Moves)
			}
			fmt.Fprintf(b, "| %s | %d | %.2f | %s | %s |\n", plan.MarkdownCell(c.Node), c.GPUs, c.Used, yesNo(c.Drainable), plan.MarkdownCell(detail))
		}
		b.WriteString("\n")
	}
	for _, n := range in.Notes {
		fmt.Fprintf(b, "- note: %s\n", plan.MarkdownCell(n))
	}
}

// writeFindings lists the fleet report's findings by workload, those that
// ask for a change of rollout settings or of a neighbour's share; nothing
// when there are none.
func writeFindings(b *strings.Builder, findings map[string][]string) {
	if len(findings) == 0 {
		return
	}
	b.WriteString("\n## Fleet findings\n\n")
	for _, ref := range slices.Sorted(maps.Keys(findings)) {
		for _, f := range findings[ref] {
			fmt.Fprintf(b, "- %s: %s\n", plan.MarkdownCell(ref), plan.MarkdownCell(f))
		}
	}
}

func moves(ms []consolidate.Move) string {
	if len(ms) == 0 {
		return "idle: nothing to move"
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Pod + " (" + m.Share.String() + ") → " + m.To.String()
	}
	return strings.Join(out, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Verb is what a checkbox asks of the next run.
type Verb string

const (
	Retry  Verb = "retry"
	Rebase Verb = "rebase"
	Open   Verb = "open"
)

// checkbox is a checkbox's hidden marker: the verb and the change set's
// key, escaped so that no key can close the comment or hold a line break.
func checkbox(v Verb, key string) string {
	return "<!-- gpu-rightsizing-dashboard:" + string(v) + "=" + url.QueryEscape(key) + " -->"
}
