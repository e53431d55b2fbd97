package plan

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/jsonindent"
)

// Counts summarises the decisions by action.
func (p *Plan) Counts() map[engine.Action]int {
	c := map[engine.Action]int{}
	for _, d := range p.Decisions {
		c[d.Action]++
	}
	return c
}

// DecisionCounts counts the decisions by action, every action named, for
// a run's summary line.
func (p *Plan) DecisionCounts() []any {
	c := p.Counts()
	return []any{string(engine.Upsize), c[engine.Upsize], string(engine.ScaleBack), c[engine.ScaleBack],
		string(engine.NoChange), c[engine.NoChange], string(engine.Skipped), c[engine.Skipped]}
}

// headline counts the decisions by action, each action named as the JSON
// names it, the urgent upsizes said apart.
func (p *Plan) headline() string {
	c := p.Counts()
	up := fmt.Sprintf("%d %s", c[engine.Upsize], engine.Upsize)
	if n := p.urgent(); n > 0 {
		up += fmt.Sprintf(" (%d urgent)", n)
	}
	return fmt.Sprintf("%s, %d %s, %d %s, %d %s", up, c[engine.ScaleBack], engine.ScaleBack,
		c[engine.NoChange], engine.NoChange, c[engine.Skipped], engine.Skipped)
}

func (p *Plan) urgent() int {
	n := 0
	for _, d := range p.Decisions {
		if d.Urgent {
			n++
		}
	}
	return n
}

// byUrgency is the decisions in the order people read them: urgent
// upsizes first, each group in the plan's order.
func (p *Plan) byUrgency() []Decision {
	out := slices.Clone(p.Decisions)
	slices.SortStableFunc(out, func(a, b Decision) int {
		switch {
		case a.Urgent == b.Urgent:
			return 0
		case a.Urgent:
			return -1
		}
		return 1
	})
	return out
}

// actionCell names a decision's action, marked when it is urgent.
func actionCell(d Decision) string {
	if d.Urgent {
		return string(d.Action) + " (urgent)"
	}
	return string(d.Action)
}

// netShare sums, per replica, the GPU share the plan's upsizes add and its
// scale-backs free: what merging every change does to one pod of each
// workload. Requests in gpu-memory have no share of a GPU to add up and
// are counted apart.
func (p *Plan) netShare() (added, freed float64, memory int) {
	countable := func(a engine.Allocation) bool { return a.Form == engine.Fraction || a.Form == engine.WholeGPUs }
	for _, d := range p.Decisions {
		if !d.Action.Changes() {
			continue
		}
		if !countable(d.Current) || !countable(d.Recommended) {
			memory++
			continue
		}
		if delta := d.Recommended.GPUs - d.Current.GPUs; delta > 0 {
			added += delta
		} else {
			freed -= delta
		}
	}
	return added, freed, memory
}

// netLine says netShare in one sentence, or nothing when the plan changes
// nothing.
func (p *Plan) netLine() string {
	added, freed, memory := p.netShare()
	c := p.Counts()
	if c[engine.Upsize]+c[engine.ScaleBack] == 0 {
		return ""
	}
	s := fmt.Sprintf("GPU share per replica if every change merges: %.2f added (%s), %.2f freed (%s), net %+.2f",
		added, engine.Upsize, freed, engine.ScaleBack, added-freed)
	if memory > 0 {
		s += fmt.Sprintf("; %d change(s) in gpu-memory not counted", memory)
	}
	return s
}

// minReason is the narrowest the table wraps a reason to, however narrow
// the terminal.
const minReason = 40

// wrap cuts s into lines of at most width runes at spaces; a word longer
// than width keeps a line of its own.
func wrap(s string, width int) []string {
	var lines []string
	var line []string
	n := 0
	for _, w := range strings.Fields(s) {
		l := utf8.RuneCountInString(w)
		if n > 0 && n+1+l > width {
			lines = append(lines, strings.Join(line, " "))
			line, n = nil, 0
		}
		if n > 0 {
			n++
		}
		line = append(line, w)
		n += l
	}
	if len(line) > 0 || len(lines) == 0 {
		lines = append(lines, strings.Join(line, " "))
	}
	return lines
}

// WriteTable renders the plan for people: one row per workload, urgent
// upsizes first, then the diff of every edited file, then the problems.
// With width > 0 (a terminal's columns) reasons wrap so that rows fit it;
// with 0 every row stays on one line, for grep and for logs.
func (p *Plan) WriteTable(w io.Writer, width int) error {
	fmt.Fprintf(w, "Plan at %s: %s\n\n", p.At.UTC().Format(time.RFC3339), p.headline())
	rows := [][]string{{"WORKLOAD", "CURRENT", "RECOMMENDED", "ACTION", "REASON"}}
	for _, d := range p.byUrgency() {
		rec := "-"
		if d.Action.Changes() {
			rec = d.Recommended.String()
		}
		rows = append(rows, []string{printable(d.Workload.Ref.String(), ""), d.Current.String(), rec, actionCell(d), printable(p.tableReason(d), "")})
	}
	const pad = 2
	indent := 0
	for col := range 4 {
		widest := 0
		for _, r := range rows {
			widest = max(widest, utf8.RuneCountInString(r[col]))
		}
		indent += widest + pad
	}
	tw := tabwriter.NewWriter(w, 0, 4, pad, ' ', 0)
	for _, r := range rows {
		reason := []string{r[4]}
		if width > 0 {
			reason = wrap(r[4], max(minReason, width-indent))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3], reason[0])
		for _, more := range reason[1:] {
			fmt.Fprintf(tw, "\t\t\t\t%s\n", more)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if net := p.netLine(); net != "" {
		fmt.Fprintln(w, net)
	}
	if p.Hidden > 0 {
		fmt.Fprintf(w, "(%d Deployment(s) without a GPU request and out of scope not shown)\n", p.Hidden)
	}
	if sets := p.sharedList(); len(sets) > 0 {
		fmt.Fprintln(w, "\nPull requests of several workloads, as run opens them:")
		for _, cs := range sets {
			fmt.Fprintf(w, "  %s\n", printable(cs, ""))
		}
	}
	for _, f := range p.Files {
		fmt.Fprintln(w)
		io.WriteString(w, printable(f.Diff(), "\n\t"))
	}
	if len(p.Problems) > 0 {
		fmt.Fprintf(w, "\n%d problem(s); whatever they touch is left alone:\n", len(p.Problems))
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "  %s\n", printable(pr.String(), ""))
		}
	}
	return nil
}

// tableReason is a decision's reason in the table: a failed usage query,
// which the problems below say once, is not said again on every row.
func (p *Plan) tableReason(d Decision) string {
	if d.Cause == engine.CauseQueryFailed && slices.ContainsFunc(p.Problems, func(pr Problem) bool {
		return pr.Message == d.Evidence.Detail || strings.HasSuffix(pr.Message, ": "+d.Evidence.Detail)
	}) {
		return "no change: usage unavailable (the failed query is under the problems below)"
	}
	return d.Reason()
}

// The machine-readable plan is an object of "at" (RFC 3339), "decisions"
// (jsonDecision), "edits" (each a "file" and its unified "diff") and
// "errors" (Problem), indented by two spaces; its field names are a
// contract.

type jsonDecision struct {
	// Cluster is the workload's cluster, when the repository maps them.
	Cluster         string   `json:"cluster,omitempty"`
	Namespace       string   `json:"namespace"`
	Kind            string   `json:"kind"`
	Name            string   `json:"name"`
	File            string   `json:"file"`
	Current         *float64 `json:"current"`
	CurrentForm     string   `json:"currentForm"`
	Recommended     *float64 `json:"recommended"`
	RecommendedForm string   `json:"recommendedForm"`
	Action          string   `json:"action"`
	Urgent          bool     `json:"urgent,omitempty"`
	Rule            string   `json:"rule,omitempty"`
	Reason          string   `json:"reason"`
	// Cause says why nothing changes; absent when something does.
	Cause    engine.Cause    `json:"cause,omitempty"`
	Evidence engine.Evidence `json:"evidence"`
	Policies []string        `json:"policies,omitempty"`
	// Template is the object whose pod template the workload runs, and
	// which File defines, when it is not the workload itself: a Rollout's
	// spec.workloadRef Deployment.
	Template string `json:"template,omitempty"`
	// ChangeSet names the change set, and so the pull request, the
	// change shares with other workloads' (run's grouping, or edits that
	// write one file); absent when its pull request is its own.
	ChangeSet string `json:"changeSet,omitempty"`
}

// WriteJSON renders the plan for machines. Equal plans render to equal
// bytes.
//
// The plan is streamed: each decision and each edit is encoded on its own
// and written through a buffer of its own, so that a plan of many
// workloads never sits whole in memory (it was a third of a large plan's
// peak), and no pass reads every byte again to indent it. The bytes are
// those one indented Encode of the whole object would write.
func (p *Plan) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	part := jsonindent.NewEncoder(bw).Encode
	bw.WriteString("{\n  \"at\": ")
	if err := part(p.At.UTC().Format(time.RFC3339), ""); err != nil {
		return err
	}
	bw.WriteString(",\n  \"decisions\": ")
	if err := p.writeDecisions(bw, part); err != nil {
		return err
	}
	bw.WriteString(",\n  \"edits\": ")
	if err := p.writeEdits(bw, part); err != nil {
		return err
	}
	bw.WriteString(",\n  \"errors\": ")
	if err := part(append([]Problem{}, p.Problems...), "  "); err != nil {
		return err
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// writeDecisions writes the decisions as an array one level into the
// plan's object, one decision encoded at a time.
func (p *Plan) writeDecisions(bw *bufio.Writer, part func(any, string) error) error {
	if len(p.Decisions) == 0 {
		_, err := bw.WriteString("[]")
		return err
	}
	// One at a time: boxed anew, 10,000 were garbage.
	var jd jsonDecision
	var cur, rec float64
	gpus := func(a engine.Allocation, v *float64) *float64 {
		if a.Form == engine.NoGPU || a.Form == engine.GPUMemory {
			return nil
		}
		*v = rounded(a.GPUs)
		return v
	}
	shared := p.sharedSets()
	for i, d := range p.Decisions {
		jd = jsonDecision{
			Cluster: d.Workload.Ref.Cluster, ChangeSet: shared[definition{d.Workload.Ref, d.Workload.File}],
			Namespace: d.Workload.Ref.Namespace, Kind: d.Workload.Ref.Kind, Name: d.Workload.Ref.Name, File: d.Workload.File,
			Current: gpus(d.Current, &cur), CurrentForm: string(d.Current.Form),
			Recommended: gpus(d.Recommended, &rec), RecommendedForm: string(d.Recommended.Form),
			Action: string(d.Action), Urgent: d.Urgent, Rule: d.Rule, Reason: d.Reason(),
			Cause: d.Cause, Evidence: roundedEvidence(d.Evidence),
		}
		for _, m := range d.Policies {
			jd.Policies = append(jd.Policies, m.String())
		}
		if d.Workload.Template.Kind != "" {
			jd.Template = d.Workload.Template.String()
		}
		if i == 0 {
			bw.WriteString("[\n    ")
		} else {
			bw.WriteString(",\n    ")
		}
		if err := part(&jd, "    "); err != nil {
			return err
		}
	}
	_, err := bw.WriteString("\n  ]")
	return err
}

// writeEdits writes the plan's edits, each file and its diff, as an
// array one level into the plan's object. The diffs, a third of a large
// plan, are strings with nothing to indent.
func (p *Plan) writeEdits(bw *bufio.Writer, part func(any, string) error) error {
	if len(p.Files) == 0 {
		_, err := bw.WriteString("[]")
		return err
	}
	for i, f := range p.Files {
		if i == 0 {
			bw.WriteString("[\n")
		} else {
			bw.WriteString(",\n")
		}
		bw.WriteString("    {\n      \"file\": ")
		if err := part(f.Path, ""); err != nil {
			return err
		}
		bw.WriteString(",\n      \"diff\": ")
		if err := part(f.Diff(), ""); err != nil {
			return err
		}
		bw.WriteString("\n    }")
	}
	_, err := bw.WriteString("\n  ]")
	return err
}

// Summary is a one-line account of the plan, for logs.
func (p *Plan) Summary() string {
	c := p.Counts()
	parts := []string{fmt.Sprintf("%d %s", c[engine.Upsize], engine.Upsize), fmt.Sprintf("%d %s", c[engine.ScaleBack], engine.ScaleBack),
		fmt.Sprintf("%d file(s) edited", len(p.Files))}
	if len(p.Problems) > 0 {
		parts = append(parts, fmt.Sprintf("%d problem(s)", len(p.Problems)))
	}
	return strings.Join(parts, ", ")
}

// WriteMarkdown renders the plan for a CI job's summary (GitHub's
// $GITHUB_STEP_SUMMARY, a GitLab merge request note): the counts, a table
// of the workloads, each edited file's diff in a fenced block, and the
// problems. Text from the repository is escaped so that it cannot end a
// table cell, a fence or a line, nor reach a terminal as a control
// sequence.
func (p *Plan) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "## GPU rightsizing plan\n\nAt %s: **%s**.\n\n", p.At.UTC().Format(time.RFC3339), p.headline())
	if len(p.Decisions) > 0 {
		fmt.Fprintln(w, "| Workload | Current | Recommended | Action | Reason |\n|---|---|---|---|---|")
		for _, d := range p.byUrgency() {
			rec := "-"
			if d.Action.Changes() {
				rec = d.Recommended.String()
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", mdCell(d.Workload.Ref.String()), mdCell(d.Current.String()),
				mdCell(rec), actionCell(d), mdCell(d.Reason()))
		}
	}
	if net := p.netLine(); net != "" {
		fmt.Fprintf(w, "\n%s.\n", net)
	}
	if p.Hidden > 0 {
		fmt.Fprintf(w, "\n%d Deployment(s) without a GPU request and out of scope not shown.\n", p.Hidden)
	}
	if sets := p.sharedList(); len(sets) > 0 {
		fmt.Fprintln(w, "\nPull requests of several workloads, as run opens them:")
		fmt.Fprintln(w)
		for _, cs := range sets {
			fmt.Fprintf(w, "- %s\n", mdCell(cs))
		}
	}
	for _, f := range p.Files {
		diff := printable(f.Diff(), "\n\t")
		fence := mdFence(diff)
		fmt.Fprintf(w, "\n<details><summary><code>%s</code></summary>\n\n%sdiff\n%s", mdHTML(f.Path), fence, diff)
		if !strings.HasSuffix(diff, "\n") {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n\n</details>\n", fence)
	}
	if len(p.Problems) > 0 {
		fmt.Fprintf(w, "\n### %d problem(s)\n\nWhatever they touch is left alone.\n\n", len(p.Problems))
		for _, pr := range p.Problems {
			fmt.Fprintf(w, "- %s\n", mdCell(pr.String()))
		}
	}
	return nil
}

// mdCell escapes text for one table cell or list item: no line break, no
// pipe that would end the cell, no markup or HTML of the text's own, and
// no mention: a zero-width space after "@" notifies no user or team on
// GitHub or GitLab where the text is posted (a dashboard, a pull request),
// as Renovate writes the names it quotes.
func mdCell(s string) string {
	s = printable(s, "")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '@':
			b.WriteString("@&#8203;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("\\`*_[]|#!~", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdHTML escapes text inside an HTML element of the summary.
func mdHTML(s string) string {
	return html.EscapeString(printable(s, ""))
}

// mdFence is a code fence longer than any run of backticks in s, so that
// no diff can close its block early.
func mdFence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// rounded is v to 12 significant digits: arithmetic leaves noise in the
// last bits (0.19640000000000002), which the JSON would print; no reading
// or allocation means anything at that precision.
func rounded(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil { // an infinity or NaN, which FormatFloat spells out
		return v
	}
	return r
}

// roundedEvidence is e with every amount rounded, its slices copied so the
// plan's own evidence is left as the engine made it.
func roundedEvidence(e engine.Evidence) engine.Evidence {
	e.Allocation, e.Ceiling, e.Floor = rounded(e.Allocation), rounded(e.Ceiling), rounded(e.Floor)
	readings := func(rs []engine.Reading) []engine.Reading {
		if rs == nil {
			return nil
		}
		out := make([]engine.Reading, len(rs))
		for i, r := range rs {
			out[i] = roundedReading(r)
		}
		return out
	}
	e.Upsizes, e.ScaleBacks = readings(e.Upsizes), readings(e.ScaleBacks)
	if e.Baseline != nil {
		b := *e.Baseline
		b.Metrics = readings(b.Metrics)
		e.Baseline = &b
	}
	if e.Blocker != nil {
		r := roundedReading(*e.Blocker)
		e.Blocker = &r
	}
	if e.Proposal != nil {
		pr := *e.Proposal
		pr.Target = rounded(pr.Target)
		e.Proposal = &pr
	}
	if e.Adjustments != nil {
		adj := make([]engine.Adjustment, len(e.Adjustments))
		for i, a := range e.Adjustments {
			a.From, a.To, a.Limit, a.Percent = rounded(a.From), rounded(a.To), rounded(a.Limit), rounded(a.Percent)
			adj[i] = a
		}
		e.Adjustments = adj
	}
	return e
}

func roundedReading(r engine.Reading) engine.Reading {
	r.Value, r.Percent, r.Typical = rounded(r.Value), rounded(r.Percent), rounded(r.Typical)
	r.Target, r.Cap, r.ConfidencePercent = rounded(r.Target), rounded(r.Cap), rounded(r.ConfidencePercent)
	return r
}
