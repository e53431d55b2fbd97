package publish

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// WriteTable prints one row per change set or pull request, the
// summary, and a line for each look-alike left alone.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE SET\tBRANCH\tOUTCOME\tPULL REQUEST\tDETAIL")
	for _, x := range r.Results {
		pr := "-"
		if x.Number > 0 {
			pr = fmt.Sprintf("#%d", x.Number)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", plan.Printable(x.Key), plan.Printable(x.Branch), outcomeText(x.Outcome, r.DryRun), pr, plan.Printable(x.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	prefix := ""
	if r.DryRun {
		prefix = "dry run, nothing written: "
	}
	var counts []string
	for _, o := range []Outcome{Opened, Updated, Unchanged, Closed, Declined, Failed} {
		counts = append(counts, fmt.Sprintf("%d %s", r.Count(o), outcomeText(o, r.DryRun)))
	}
	if _, err := fmt.Fprintf(w, "\n%s%s\n", prefix, strings.Join(counts, ", ")); err != nil {
		return err
	}
	for _, l := range r.LookAlikes {
		if _, err := fmt.Fprintf(w, "left alone, not the tool's: #%d %s (%s)\n", l.Number, plan.Printable(l.Branch), plan.Printable(l.Why)); err != nil {
			return err
		}
	}
	return nil
}

// outcomeText is how an outcome reads: what a dry run would have done is
// not said as done.
func outcomeText(o Outcome, dryRun bool) string {
	if dryRun {
		switch o {
		case Opened:
			return "would open"
		case Updated:
			return "would update"
		case Closed:
			return "would close"
		}
	}
	return string(o)
}

// Summary counts the results by outcome, every outcome named, for a
// run's summary line. A dry run did none of what it would do: those
// counts are named for it (wouldOpen, wouldUpdate, wouldClose), so that
// no reader of the line takes them for pull requests opened.
func (r *Report) Summary() []any {
	would := map[Outcome]string{Opened: "wouldOpen", Updated: "wouldUpdate", Closed: "wouldClose"}
	var counts []any
	for _, o := range []Outcome{Opened, Updated, Unchanged, Closed, Declined, Capped, Kept, Failed} {
		name := string(o)
		if w, ok := would[o]; ok && r.DryRun {
			name = w
		}
		counts = append(counts, name, r.Count(o))
	}
	return counts
}

// conventionalRE matches a Conventional Commits subject.
var conventionalRE = regexp.MustCompile(`^[a-z]+(\([^)]*\))?!?: `)

// Conventional reports whether a commit message is a Conventional Commit:
// the tool writes its commits as the repository's newest one is written
// (Options.Conventional).
func Conventional(message string) bool { return conventionalRE.MatchString(message) }
