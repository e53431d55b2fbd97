package plan

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
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
	return []any{"upsize", c[engine.Upsize], "scaleBack", c[engine.ScaleBack], "noChange", c[engine.NoChange], "skipped", c[engine.Skipped]}
}

// WriteTable renders the plan for people: one row per workload, then the
// diff of every edited file, then the problems.
func (p *Plan) WriteTable(w io.Writer) error {
	c := p.Counts()
	fmt.Fprintf(w, "Plan at %s: %d upsize, %d scale-back, %d unchanged, %d skipped\n\n",
		p.At.UTC().Format(time.RFC3339), c[engine.Upsize], c[engine.ScaleBack], c[engine.NoChange], c[engine.Skipped])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tCURRENT\tRECOMMENDED\tACTION\tREASON")
	for _, d := range p.Decisions {
		rec := "-"
		if d.Action == engine.Upsize || d.Action == engine.ScaleBack {
			rec = d.Recommended.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(d.Workload.Ref.String(), ""), d.Current, rec, d.Action, printable(p.tableReason(d), ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Hidden > 0 {
		fmt.Fprintf(w, "(%d Deployment(s) without a GPU request and out of scope not shown)\n", p.Hidden)
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

// jsonPlan is the machine-readable plan; its field names are a contract.
type jsonPlan struct {
	At        string         `json:"at"`
	Decisions []jsonDecision `json:"decisions"`
	Edits     []jsonEdit     `json:"edits"`
	Errors    []Problem      `json:"errors"`
}

type jsonDecision struct {
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
}

type jsonEdit struct {
	File string `json:"file"`
	Diff string `json:"diff"`
}

// WriteJSON renders the plan for machines. Equal plans render to equal
// bytes.
func (p *Plan) WriteJSON(w io.Writer) error {
	out := jsonPlan{At: p.At.UTC().Format(time.RFC3339), Decisions: []jsonDecision{}, Edits: []jsonEdit{}, Errors: []Problem{}}
	gpus := func(a engine.Allocation) *float64 {
		if a.Form == engine.NoGPU || a.Form == engine.GPUMemory {
			return nil
		}
		v := a.GPUs
		return &v
	}
	for _, d := range p.Decisions {
		jd := jsonDecision{
			Namespace: d.Workload.Ref.Namespace, Kind: d.Workload.Ref.Kind, Name: d.Workload.Ref.Name, File: d.Workload.File,
			Current: gpus(d.Current), CurrentForm: string(d.Current.Form),
			Recommended: gpus(d.Recommended), RecommendedForm: string(d.Recommended.Form),
			Action: string(d.Action), Urgent: d.Urgent, Rule: d.Rule, Reason: d.Reason(),
			Cause: d.Cause, Evidence: d.Evidence,
		}
		for _, m := range d.Policies {
			jd.Policies = append(jd.Policies, m.String())
		}
		out.Decisions = append(out.Decisions, jd)
	}
	for _, f := range p.Files {
		out.Edits = append(out.Edits, jsonEdit{File: f.Path, Diff: f.Diff()})
	}
	out.Errors = append(out.Errors, p.Problems...)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// Summary is a one-line account of the plan, for logs.
func (p *Plan) Summary() string {
	c := p.Counts()
	parts := []string{fmt.Sprintf("%d upsize", c[engine.Upsize]), fmt.Sprintf("%d scale-back", c[engine.ScaleBack]),
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
	c := p.Counts()
	fmt.Fprintf(w, "## GPU rightsizing plan\n\nAt %s: **%d upsize, %d scale-back**, %d unchanged, %d skipped.\n\n",
		p.At.UTC().Format(time.RFC3339), c[engine.Upsize], c[engine.ScaleBack], c[engine.NoChange], c[engine.Skipped])
	if len(p.Decisions) > 0 {
		fmt.Fprintln(w, "| Workload | Current | Recommended | Action | Reason |\n|---|---|---|---|---|")
		for _, d := range p.Decisions {
			rec := "-"
			if d.Action.Changes() {
				rec = d.Recommended.String()
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", mdCell(d.Workload.Ref.String()), mdCell(d.Current.String()),
				mdCell(rec), d.Action, mdCell(d.Reason()))
		}
	}
	if p.Hidden > 0 {
		fmt.Fprintf(w, "\n%d Deployment(s) without a GPU request and out of scope not shown.\n", p.Hidden)
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
// pipe that would end the cell, no markup or HTML of the text's own.
func mdCell(s string) string {
	s = printable(s, "")
	var b strings.Builder
	for _, r := range s {
		switch {
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
