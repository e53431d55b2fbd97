package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
)

// WriteJSON renders the summary for machines, indented; equal summaries
// render to equal bytes (maps are written sorted by key).
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// outcomeTexts say an outcome to a person.
var outcomeTexts = map[Outcome]string{
	NothingToDo:     "nothing to do",
	ChangesProposed: "changes proposed",
	Problems:        "finished with problems",
	Failed:          "failed",
}

// Headline is the run in one line, for an Event's note and a webhook's
// first line: its outcome, the pull requests, the decisions, the
// problems, its duration. Text from outside is escaped.
func (s Summary) Headline() string {
	var b strings.Builder
	b.WriteString("GPU rightsizing run ")
	if s.DryRun {
		b.WriteString("(dry run) ")
	}
	b.WriteString(outcomeTexts[s.Outcome])
	b.WriteString(": ")
	parts := []string{s.pullRequestCounts(), s.decisionCounts()}
	if n := len(s.Problems.Items); n > 0 {
		parts = append(parts, fmt.Sprintf("%d problem(s)", n))
	}
	if s.Live != nil {
		parts = append(parts, fmt.Sprintf("%d live change(s)", len(s.Live.Items)))
	}
	parts = append(parts, fmt.Sprintf("took %.1fs", s.DurationSeconds))
	b.WriteString(strings.Join(parts, "; "))
	if s.Error != "" {
		b.WriteString("; error: ")
		b.WriteString(plan.Printable(s.Error))
	}
	return b.String()
}

// pullRequestCounts says the pull requests by the outcomes that happened.
func (s Summary) pullRequestCounts() string {
	var parts []string
	for _, o := range PullRequestOutcomes() {
		if n := s.PullRequests.Counts[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, outcomeText(o, s.DryRun)))
		}
	}
	if len(parts) == 0 {
		return "no pull request"
	}
	return "pull requests " + strings.Join(parts, ", ")
}

// decisionCounts counts the decisions by action, each named as the plan,
// its JSON and the pull requests name it.
func (s Summary) decisionCounts() string {
	var parts []string
	for _, a := range Actions() {
		parts = append(parts, fmt.Sprintf("%d %s", s.Decisions[a], a))
	}
	return strings.Join(parts, ", ")
}

// outcomeText says what a dry run would have done as such, as the table
// does.
func outcomeText(o publish.Outcome, dryRun bool) string {
	if dryRun {
		switch o {
		case publish.Opened:
			return "would open"
		case publish.Updated:
			return "would update"
		case publish.Closed:
			return "would close"
		}
	}
	return string(o)
}

// Lines are the headline, then one line per pull request opened,
// updated or closed with its URL, then the problems: the body of a chat
// message. At most limit lines of pull requests and of problems each are
// listed; the rest are counted.
func (s Summary) Lines(limit int) []string {
	lines := []string{s.Headline()}
	var prs []string
	for _, x := range s.PullRequests.Items {
		switch x.Outcome {
		case publish.Opened, publish.Updated, publish.Closed, publish.Failed:
		default:
			continue
		}
		l := fmt.Sprintf("- %s %s", outcomeText(x.Outcome, s.DryRun), plan.Printable(x.ChangeSet))
		if x.URL != "" {
			l += " " + plan.Printable(x.URL)
		}
		if x.Outcome == publish.Failed && x.Detail != "" {
			l += ": " + plan.Printable(x.Detail)
		}
		prs = append(prs, l)
	}
	lines = append(lines, capped(prs, limit, "pull request(s)")...)
	var probs []string
	for _, pr := range s.Problems.Items {
		probs = append(probs, "- problem: "+plan.Printable(pr.String()))
	}
	return append(lines, capped(probs, limit, "problem(s)")...)
}

func capped(lines []string, limit int, what string) []string {
	if len(lines) <= limit {
		return lines
	}
	return append(lines[:limit:limit], fmt.Sprintf("- … and %d more %s", len(lines)-limit, what))
}

// WriteMarkdown renders the summary for a CI job's summary page
// ($GITHUB_STEP_SUMMARY): the outcome, the pull requests with their
// links, the problems and the live changes. Text from outside is escaped
// as the plan's Markdown escapes it.
func (s Summary) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "## GPU rightsizing run\n\n**%s**", outcomeTexts[s.Outcome])
	if s.DryRun {
		fmt.Fprint(w, " (dry run, nothing written)")
	}
	fmt.Fprintf(w, " in %.1fs", s.DurationSeconds)
	if s.At != "" {
		fmt.Fprintf(w, ", usage evaluated at %s", s.At)
	}
	fmt.Fprintf(w, ".\n\n- Decisions: %s.\n- GPU share: %.2f requested, %.2f recommended.\n- %s.\n",
		s.decisionCounts(), s.GPUs.Requested, s.GPUs.Recommended, upper(s.pullRequestCounts()))
	if s.Error != "" {
		fmt.Fprintf(w, "\nError: %s\n", plan.MarkdownCell(s.Error))
	}
	if len(s.PullRequests.Items) > 0 {
		fmt.Fprint(w, "\n| Change set | Outcome | Pull request | Detail |\n|---|---|---|---|\n")
		for _, x := range s.PullRequests.Items {
			pr := "-"
			switch {
			case x.Number > 0 && strings.HasPrefix(x.URL, "https://"):
				pr = fmt.Sprintf("[#%d](%s)", x.Number, markdownURL(x.URL))
			case x.Number > 0:
				pr = fmt.Sprintf("#%d", x.Number)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", plan.MarkdownCell(x.ChangeSet), outcomeText(x.Outcome, s.DryRun), pr, plan.MarkdownCell(x.Detail))
		}
	}
	if len(s.Problems.Items) > 0 {
		fmt.Fprintf(w, "\n### %d problem(s)\n\nWhatever they touch is left alone.\n\n", len(s.Problems.Items))
		for _, pr := range s.Problems.Items {
			fmt.Fprintf(w, "- %s (%s)\n", plan.MarkdownCell(pr.String()), plan.MarkdownCell(string(problemCause(pr))))
		}
	}
	if s.Live != nil {
		fmt.Fprint(w, "\n### Live changes\n\n")
		if len(s.Live.Items) == 0 {
			fmt.Fprintln(w, "No urgent upsize to apply and no live change to reconcile.")
		} else {
			fmt.Fprint(w, "| Workload | Outcome | Change | Detail |\n|---|---|---|---|\n")
			for _, x := range s.Live.Items {
				ref := x.Namespace + "/" + x.Name
				if x.Cluster != "" {
					ref = x.Cluster + ":" + ref
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s |\n", plan.MarkdownCell(ref), x.Outcome,
					plan.MarkdownCell(strings.Join(x.Fields, ", ")), plan.MarkdownCell(x.Detail))
			}
		}
	}
	return nil
}

// markdownURL keeps a link's target inside its parentheses.
func markdownURL(u string) string {
	return strings.NewReplacer("(", "%28", ")", "%29", " ", "%20", "\n", "", "\r", "").Replace(plan.Printable(u))
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
