package publish

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// title is the pull request's title: what changes, in a line, said first
// to be urgent when a workload is at or above its share now, so that a
// list of pull requests shows which to review first.
func title(cs plan.ChangeSet) string {
	t := fmt.Sprintf("Rightsize the GPU of %d workloads (%s)", len(cs.Decisions), cs.Key)
	if len(cs.Decisions) == 1 {
		d := cs.Decisions[0]
		verb := "Upsize"
		if d.Action == engine.ScaleBack {
			verb = "Scale back"
		}
		t = fmt.Sprintf("%s the GPU of %s/%s: %s → %s", verb, d.Workload.Ref.Namespace, d.Workload.Ref.Name, d.Current, d.Recommended)
		if c := d.Workload.Ref.Cluster; c != "" {
			t = fmt.Sprintf("%s the GPU of %s/%s in %s: %s → %s", verb, d.Workload.Ref.Namespace, d.Workload.Ref.Name,
				strings.ReplaceAll(c, usage.ClusterSep, ", "), d.Current, d.Recommended)
		}
	}
	if urgent(cs) {
		t = "Urgent: " + strings.ToLower(t[:1]) + t[1:]
	}
	return t
}

func urgent(cs plan.ChangeSet) bool {
	for _, d := range cs.Decisions {
		if d.Urgent {
			return true
		}
	}
	return false
}

// commitMessage follows Conventional Commits when the repository does.
func commitMessage(cs plan.ChangeSet, conventional bool) string {
	t := title(cs)
	if conventional {
		t = "chore(gpu): " + strings.ToLower(t[:1]) + t[1:]
	}
	var b strings.Builder
	b.WriteString(t + "\n\n")
	for _, d := range cs.Decisions {
		fmt.Fprintf(&b, "%s: %s → %s (%s)\n", d.Workload.Ref, d.Current, d.Recommended, d.Rule)
	}
	return b.String()
}

// bodyOptions are what the body says beyond the decisions.
type bodyOptions struct {
	// DeclinePercent is how far a recommendation must move before a
	// declined pull request comes back.
	DeclinePercent int
	// Source names where usage was read, e.g. a Prometheus URL or a file.
	Source string
	Now    time.Time
	// Warnings by workload ref, said under the table.
	Warnings map[string][]string
	// Findings by workload ref, said in their own section under it.
	Findings map[string][]string
	// Matcher is the label matcher the usage source adds to every
	// selector (cluster="prod-eu"), "" when none: the series a body names
	// are then the ones the tool read.
	Matcher string
	// Version is the tool's, for the footer.
	Version string
}

// body renders the pull request's body for a reviewer: every number comes
// from a decision's evidence, and the marker closes it.
func body(cs plan.ChangeSet, mk marker, o bodyOptions) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "The GPU rightsizing recommender proposes new GPU requests, from usage read from %s at %s.", o.Source, o.Now.UTC().Format(time.RFC3339))
	if urgent(cs) {
		b.WriteString(" **Urgent**: a workload is at or above its share now.")
	}
	b.WriteString("\n\n| Workload | Current → recommended | Rule | Why |\n|---|---|---|---|\n")
	for _, d := range cs.Decisions {
		fmt.Fprintf(&b, "| %s | %s → **%s** | %s | %s |\n", code(d.Workload.Ref.String()), d.Current, d.Recommended, d.Rule, cell(d.Reason()))
	}
	for _, d := range cs.Decisions {
		for _, w := range o.Warnings[d.Workload.Ref.String()] {
			fmt.Fprintf(&b, "\n**Warning** (%s): %s.\n", code(d.Workload.Ref.String()), cell(w))
		}
	}
	fleetFindings(&b, cs, o.Findings)
	// GitHub refuses a body over 65,536 characters, and a grouped change
	// set can pass it: the details give way first (charts, then whole
	// sections), never the summary table or the marker.
	var tail strings.Builder
	tail.WriteString("\n### Declining\n\nClose this pull request without merging to decline it: no new one opens for these workloads")
	fmt.Fprintf(&tail, " until the recommendation moves by more than %d%%, unless you reopen it. Editing the branch by hand is safe: the tool never overwrites a branch someone else moved.\n\n", o.DeclinePercent)
	// Boxes a person ticks, read back by the next run (askedIn), as
	// Renovate reads its own; the body it then writes has them unticked.
	tail.WriteString("- [ ] " + rebaseBox + " Make this pull request afresh on the base at the next run (the branch is replaced, commits pushed to it by hand included).\n")
	tail.WriteString("- [ ] " + retryBox + " Once closed unmerged: propose this change again at the next run, without waiting for the recommendation to move.\n\n")
	version := o.Version
	if version == "" {
		version = "(unversioned build)"
	}
	fmt.Fprintf(&tail, "<sub>gpu-rightsizing recommender %s · run at %s · usage from %s</sub>\n\n", cell(version), o.Now.UTC().Format(time.RFC3339), cell(o.Source))
	enc, err := mk.encode()
	if err != nil {
		return "", err
	}
	tail.WriteString(enc + "\n")
	budget := maxBody - b.Len() - tail.Len()
	for _, charts := range []bool{true, false} {
		var details strings.Builder
		shown := 0
		for _, d := range cs.Decisions {
			var sec strings.Builder
			workloadSection(&sec, d, charts, cmp.Or(d.Matcher, o.Matcher))
			if details.Len()+sec.Len() > budget-200 {
				break
			}
			details.WriteString(sec.String())
			shown++
		}
		if shown == len(cs.Decisions) || !charts {
			b.WriteString(details.String())
			if shown < len(cs.Decisions) {
				fmt.Fprintf(&b, "\n(The details of %d more workloads do not fit in a pull request's body: the table above and the diff have them all.)\n", len(cs.Decisions)-shown)
			}
			break
		}
	}
	b.WriteString(tail.String())
	return b.String(), nil
}

// fleetFindings says what the fleet report found of the change set's
// workloads, one line each: a reviewer weighs an upsize whose rollout
// would stall, or a GPU a neighbour crowds, before merging.
func fleetFindings(b *strings.Builder, cs plan.ChangeSet, findings map[string][]string) {
	var lines []string
	for _, d := range cs.Decisions {
		for _, f := range findings[d.Workload.Ref.String()] {
			lines = append(lines, fmt.Sprintf("- %s: %s.", code(d.Workload.Ref.String()), cell(f)))
		}
	}
	if len(lines) > 0 {
		b.WriteString("\n### Fleet findings\n\n" + strings.Join(lines, "\n") + "\n")
	}
}

// The hidden markers of a body's boxes. Text from a repository or a
// source is escaped by cell, so only the tool's own body holds them.
const (
	rebaseBox = "<!-- gpu-rightsizing:rebase -->"
	retryBox  = "<!-- gpu-rightsizing:retry -->"
)

// askedIn reports whether a person ticked the box with marker box in a
// pull request's body: a list item, checked ("x" or "X", as GitHub and
// GitLab save it), with the marker right after the box.
func askedIn(body, box string) bool {
	for line := range strings.Lines(body) {
		line = strings.TrimLeft(line, " \t")
		for _, bullet := range []string{"- ", "* "} {
			if rest, ok := strings.CutPrefix(line, bullet); ok {
				if rest, ok := strings.CutPrefix(rest, "[x] "); ok && strings.HasPrefix(rest, box) {
					return true
				}
				if rest, ok := strings.CutPrefix(rest, "[X] "); ok && strings.HasPrefix(rest, box) {
					return true
				}
			}
		}
	}
	return false
}

// maxBody is the longest body the forges take (GitHub: 65,536
// characters), with room to spare.
const maxBody = 60000

func workloadSection(b *strings.Builder, d plan.Decision, withChart bool, matcher string) {
	ev := d.Evidence
	if t := d.Workload.Template; t.Kind != "" {
		// The file is not the workload's own: say whose it is.
		fmt.Fprintf(b, "\n### %s in %s (the pod template of %s %s)\n\n", code(d.Workload.Ref.String()), code(d.Workload.File), cell(t.Kind), code(t.Name))
	} else {
		fmt.Fprintf(b, "\n### %s in %s\n\n", code(d.Workload.Ref.String()), code(d.Workload.File))
	}
	b.WriteString("| Metric | Rule | Window | Peak | Typical (median) | Pod that peaked | Threshold | Headroom | Target |\n|---|---|---|---|---|---|---|---|---|\n")
	row := func(rule string, r engine.Reading) {
		stat := "peak"
		if r.Percentile < 100 {
			stat = fmt.Sprintf("p%d", r.Percentile)
		}
		threshold := "–"
		if r.ThresholdPercent > 0 {
			threshold = fmt.Sprintf("%d%%", r.ThresholdPercent)
		}
		window := r.Window.String()
		if r.History > 0 {
			window += " (" + r.History.String() + " of history)"
		}
		headroom := fmt.Sprintf("%d%%", r.HeadroomPercent)
		if r.ConfidencePercent > 0 {
			// memoryConfidenceHeadroomPercent, while the history is short.
			headroom += fmt.Sprintf(" + %g%% (short history)", r.ConfidencePercent)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s %.3f GPU (%.0f%%) | %.3f GPU | %s | %s | %s | %.3f |\n",
			r.Metric, rule, window, stat, r.Value, r.Percent, r.Typical, code(r.Pod), threshold, headroom, r.Capped())
	}
	for _, r := range ev.Upsizes {
		row("reactive upsize", r)
	}
	if ev.Baseline != nil {
		for _, r := range ev.Baseline.Metrics {
			row("proactive baseline", r)
		}
	}
	for _, r := range ev.ScaleBacks {
		row("reactive scale-back", r)
	}
	if p := ev.Proposal; p != nil {
		fmt.Fprintf(b, "\nThe %s asked for %.3f GPU", p, p.Target)
		for _, a := range ev.Adjustments {
			switch a.Kind {
			case engine.AdjustStepLimit:
				fmt.Fprintf(b, "; one step may not exceed %.0f%% of the allocation (%.3f)", a.Percent, a.Limit)
			case engine.AdjustCeiling:
				fmt.Fprintf(b, "; the ceiling is %g", a.Limit)
			case engine.AdjustFloor:
				fmt.Fprintf(b, "; the floor is %g", a.Limit)
			case engine.AdjustGrid:
				fmt.Fprintf(b, "; KAI keeps two decimals, rounded up to %.2f", a.To)
			case engine.AdjustForm:
				fmt.Fprintf(b, "; the request moves from %s to %s", a.FromForm, a.ToForm)
			}
		}
		fmt.Fprintf(b, ": **%s**.\n", d.Recommended)
	}
	// The chart and the series are long and read by few: folded, so that
	// the changes and the risks stay in view.
	b.WriteString("\n<details><summary>Usage over the window, and the series read</summary>\n")
	if withChart {
		chart(b, d)
	}
	series(b, d, matcher)
	b.WriteString("\n</details>\n")
	changes(b, d)
	risks(b, d)
}

// chart draws usage against the current and the recommended allocation
// over the longest window the decision read, as a Mermaid xychart, which
// GitHub and GitLab render.
func chart(b *strings.Builder, d plan.Decision) {
	c, ok := d.Usage.Chart(d.Evidence.Longest(), d.Rules.ChartScale(d.Current.GPUs))
	if !ok {
		return
	}
	const points = usage.ChartPoints
	from, to, step, lines := c.From, c.To, c.Step, c.Lines
	top := max(d.Current.GPUs, d.Recommended.GPUs)
	for _, vals := range lines {
		for _, v := range vals {
			top = max(top, v)
		}
	}
	labels := make([]string, points)
	for i := range labels {
		ago := (time.Duration(to-(from+int64(i+1)*step)) * time.Millisecond).Round(time.Minute)
		labels[i] = fmt.Sprintf("%q", "-"+engine.FormatDuration(ago))
	}
	labels[points-1] = `"now"`
	fmt.Fprintf(b, "\nUsage (the hottest pod, per %s) against the current allocation (%s) and the recommended one (%s), in GPUs.\n\n",
		engine.FormatDuration((time.Duration(step) * time.Millisecond).Round(time.Second)), d.Current, d.Recommended)
	b.WriteString("```mermaid\nxychart-beta\n")
	fmt.Fprintf(b, "  title \"%s\"\n", d.Workload.Ref.Name)
	fmt.Fprintf(b, "  x-axis [%s]\n", strings.Join(labels, ", "))
	fmt.Fprintf(b, "  y-axis \"GPUs\" 0 --> %s\n", trim(math.Ceil(top*1.1*100)/100))
	// Named lines: Mermaid shows the name beside a line's values.
	for _, m := range metricNames(lines) {
		fmt.Fprintf(b, "  line %q [%s]\n", m, joinFloats(lines[usage.Metric(m)]))
	}
	fmt.Fprintf(b, "  line %q [%s]\n", "current "+d.Current.String(), joinFloats(repeat(d.Current.GPUs, points)))
	fmt.Fprintf(b, "  line %q [%s]\n", "recommended "+d.Recommended.String(), joinFloats(repeat(d.Recommended.GPUs, points)))
	b.WriteString("```\n")
}

// series names the series behind the numbers as selectors to paste into
// Grafana or Prometheus: the pods the tool counted for the workload (it
// attributes pods by owner, so a name pattern could catch a neighbour's),
// with the matcher the source adds to every query.
func series(b *strings.Builder, d plan.Decision, matcher string) {
	sources := d.Rules.Sources()
	b.WriteString("\nSeries read (summed over the pod's containers, per pod):\n\n")
	pods := make([]string, 0, len(d.Usage.Pods))
	for _, p := range d.Usage.Pods {
		// A mapped cluster's pod is named cluster/pod; the series name
		// the pod alone, and the matcher the cluster.
		_, name := plan.PodName(p.Name)
		pods = append(pods, regexp.QuoteMeta(name))
	}
	slices.Sort(pods)
	pods = slices.Compact(pods)
	for _, m := range usage.Metrics {
		src := sources[m]
		if src == nil {
			continue
		}
		sel := []string{fmt.Sprintf("%s=%q", src.Source.NamespaceLabel, d.Workload.Ref.Namespace)}
		note := ""
		switch {
		case len(pods) == 0:
			sel = append(sel, fmt.Sprintf("%s=~%q", src.Source.PodLabel, regexp.QuoteMeta(d.Workload.Ref.Name)+"-.*"))
			note = "; no pod was counted, so the pattern of the workload's pod names"
		case len(pods) <= maxSelectorPods:
			sel = append(sel, fmt.Sprintf("%s=~%q", src.Source.PodLabel, strings.Join(pods, "|")))
		default:
			sel = append(sel, fmt.Sprintf("%s=~%q", src.Source.PodLabel, regexp.QuoteMeta(d.Workload.Ref.Name)+"-.*"))
			note = fmt.Sprintf("; the %d pods counted, by the pattern of their names, which may catch others", len(pods))
		}
		if matcher != "" {
			sel = append(sel, matcher)
		}
		fmt.Fprintf(b, "- %s: %s (%s%s)\n", m, code(src.Source.Metric+"{"+strings.Join(sel, ", ")+"}"), src.Interpretation, note)
	}
}

// maxSelectorPods is the most pods a selector names one by one; past it
// a body would grow with the workload's history of pods.
const maxSelectorPods = 12

// changes lists what the edit does besides the request.
func changes(b *strings.Builder, d plan.Decision) {
	var out []string
	if v, ok := plan.VLLMUtilization(d); ok {
		for _, c := range d.Workload.Containers {
			if c.Name == d.Workload.GPU.Container {
				out = append(out, fmt.Sprintf("vLLM in container %s: `--gpu-memory-utilization` %s → **%s**, leaving %d%% of the new share unused.",
					code(c.Name), cell(orDash(c.GPUMemoryUtilization)), v, d.Rules.Strategy.VLLMBufferPercent))
			}
		}
	}
	for _, n := range d.Evidence.Notes {
		out = append(out, fmt.Sprintf("Left alone: %s: %s.", cell(n.Field), cell(n.Why)))
	}
	if len(out) > 0 {
		b.WriteString("\n" + strings.Join(out, "\n") + "\n")
	}
}

// risks says what a reviewer should weigh.
func risks(b *strings.Builder, d plan.Decision) {
	st := d.Rules.Strategy
	var out []string
	if st != nil && !st.HAMiCore && d.Recommended.Form == engine.Fraction {
		out = append(out, "HAMi-core is not enforcing memory: the fraction is what KAI schedules by, not a limit. A process that grows beyond it takes memory its neighbours were promised.")
	}
	if d.Action == engine.ScaleBack {
		out = append(out, "A scale-back leaves less headroom: a burst above the recommended share that the history did not show would be throttled, or killed for memory under HAMi-core.")
	}
	if d.Current.Form == engine.WholeGPUs && d.Recommended.Form == engine.Fraction {
		out = append(out, "The workload moves from a whole GPU to a shared one: it will share the card with others.")
	}
	if t := d.Workload.Template; t.Kind != "" {
		out = append(out, templateOf(d.Workload.Ref, t))
	} else {
		out = append(out, merging(d.Workload.Ref.Kind))
	}
	b.WriteString("\nRisks:\n\n")
	for _, r := range out {
		b.WriteString("- " + r + "\n")
	}
}

// merging says what merging does to the workload's pods. Each kind's
// controller rolls a changed pod template its own way, and how many pods
// move at once is what a reviewer weighs a GPU change by. A Rollout's
// strategy is not in the decision, so its sentence names both.
func merging(kind string) string {
	switch kind {
	case "Deployment":
		return "Merging rolls the Deployment: new pods start with the new request."
	case "StatefulSet":
		return "Merging rolls the StatefulSet one pod at a time, the highest ordinal first, each new pod starting with the new request once the one replaced before it is ready (under `updateStrategy: OnDelete`, only as its pods are deleted)."
	case "Rollout":
		return "Merging changes the Rollout's pod template: Argo Rollouts rolls it out by the Rollout's own strategy (canary steps or blue-green), and new pods start with the new request."
	case "LeaderWorkerSet":
		return "Merging rolls the LeaderWorkerSet by whole groups: each group's leader and workers are recreated together with the new request, as many groups at a time as its `rolloutStrategy` allows (one by default)."
	}
	return fmt.Sprintf("Merging changes the %s's pod template: its controller decides when pods start with the new request.", cell(kind))
}

// templateOf says what merging does when the file changed is not the
// workload's own: a Rollout's spec.workloadRef Deployment, whose pod
// template the Rollout runs, and whose own pods, if it still runs any,
// roll too.
func templateOf(w, t usage.Ref) string {
	return fmt.Sprintf("Merging changes the pod template of %s %s, which %s %s runs (`spec.workloadRef`): Argo Rollouts rolls it out by the Rollout's own strategy (canary steps or blue-green), and new pods start with the new request. If the %s still runs pods of its own (Argo scales it down only as `workloadRef.scaleDown` says, by default never), it rolls them too.",
		cell(t.Kind), code(t.Name), cell(w.Kind), code(w.Name), cell(t.Kind))
}

func metricNames(lines map[usage.Metric][]float64) []string {
	var out []string
	for _, m := range usage.Metrics {
		if _, ok := lines[m]; ok {
			out = append(out, string(m))
		}
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = trim(math.Round(x*1000) / 1000)
	}
	return strings.Join(s, ", ")
}

func trim(v float64) string { return fmt.Sprintf("%g", v) }

func orDash(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// cell makes text from a repository, a usage source or an error safe in
// Markdown, table cells included: it cannot close the table, open a code
// span, a link or an HTML comment (a forged marker), or emphasise; nor
// mention anyone: a zero-width space after "@" keeps the text as it reads
// and notifies no user or team on GitHub or GitLab, as Renovate writes
// names it quotes (plan.MarkdownCell does the same).
var cell = strings.NewReplacer("\\", `\\`, "|", `\|`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;", "@", "@&#8203;", "\r", " ", "\n", " ").Replace

// code shows a name as code when it can be shown literally; a code span
// cannot escape a backtick or a line break, so such a name is shown as
// escaped text.
func code(s string) string {
	if s == "" || strings.ContainsAny(s, "`\r\n") {
		return cell(s)
	}
	return "`" + s + "`"
}
