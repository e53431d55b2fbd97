package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// Issues holds the dashboard: a GitHub or GitLab issue, or the local
// provider's Markdown file.
type Issues interface {
	// Issues lists the open issues carrying label, oldest first.
	Issues(ctx context.Context, label string) ([]scm.Issue, error)
	OpenIssue(ctx context.Context, title, body string, labels []string) (scm.Issue, error)
	EditIssue(ctx context.Context, number int, title, body string) error
	// Identity is the forge's user the tool acts as: the dashboard is an
	// issue this user opened.
	Identity(ctx context.Context) (string, error)
	// UntrustedIssueEdits names who changed issue number's body since
	// the tool last wrote it and may not push to the repository.
	UntrustedIssueEdits(ctx context.Context, number int) ([]string, error)
}

var (
	_ Issues = (*scm.GitHub)(nil)
	_ Issues = (*scm.GitLab)(nil)
	_ Issues = (*scm.Local)(nil)
)

// Options configure the dashboard's issue.
type Options struct {
	// Title is the issue's title; Label the label it is found by.
	Title, Label string
	// DryRun reads the dashboard, but neither acts on its boxes nor
	// writes it.
	DryRun bool
	// Clusters are the clusters a run limited by `--cluster` reads: its
	// dashboard is its own, its title and marker naming them, so that
	// one job per cluster leaves another's alone. Empty is the run over
	// every cluster, or a repository without a ClusterMap.
	Clusters []string
	Logger   *slog.Logger
}

func (o Options) withDefaults() Options {
	o.Title = cmp.Or(o.Title, Title(o.Clusters))
	o.Label = cmp.Or(o.Label, "gpu-rightsizing-dashboard")
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Dashboard is the run's dashboard issue: the one found, what its ticked
// boxes ask, and the duplicates and look-alikes left alone.
type Dashboard struct {
	issues Issues
	o      Options
	found  *scm.Issue
	// Duplicates are the numbers of the tool's other open dashboards,
	// newer than the one kept up to date.
	Duplicates []int
	// LookAlikes are the numbers of the open issues with the label and
	// the marker that the tool did not open.
	LookAlikes []int
	others     []scm.Issue
	// Ignored says why the boxes ticked on the dashboard were not acted
	// on, "" when they were (or none was).
	Ignored string
	asked   publish.Asked
}

// Read finds the dashboard: the oldest open issue with the label that the
// tool's own user opened, whose body holds the marker (or is longer than
// a body is kept: a person pasted into it, and the run writes it afresh).
// A newer one of its own is a duplicate (two runs raced); one another
// user opened, the marker copied into it, is a look-alike. Both are named
// in the log and the outcome, and left alone, so that boxes ticked there
// ask nothing. The dashboard's own boxes ask only when nobody who may not
// push to the repository changed its body since the tool wrote it.
func Read(ctx context.Context, is Issues, o Options) (*Dashboard, error) {
	o = o.withDefaults()
	me, err := is.Identity(ctx)
	if err != nil {
		return nil, fmt.Errorf("dashboard: who the tool is on the forge: %w", err)
	}
	all, err := is.Issues(ctx, o.Label)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	d := &Dashboard{issues: is, o: o}
	marker := MarkerOf(o.Clusters)
	for i := range all {
		mine := scm.MineIssue(all[i], me)
		switch {
		case !strings.Contains(all[i].Body, marker) && !(mine && all[i].Oversized && oversizedIsMine(all[i], o)):
		case !mine:
			d.LookAlikes = append(d.LookAlikes, all[i].Number)
			d.others = append(d.others, all[i])
		case d.found == nil:
			d.found = &all[i]
		default:
			d.Duplicates = append(d.Duplicates, all[i].Number)
		}
	}
	if d.found != nil {
		d.asked = d.trusted(ctx, Parse(d.found.Body))
	}
	if len(d.Duplicates) > 0 {
		o.Logger.Warn("dashboard: more than one open; the oldest is kept up to date, the others are left alone",
			"kept", d.found.Number, "duplicates", d.Duplicates)
	}
	if len(d.LookAlikes) > 0 {
		o.Logger.Warn("dashboard: issues hold the dashboard's marker but the tool did not open them; left alone", "issues", d.LookAlikes)
	}
	return d, nil
}

// oversizedIsMine says whether an issue of the tool's, its body too long
// to be read, is the dashboard of o's cluster set: by its title, or the
// whole fleet's when no title is known (the local stand-in reads none).
func oversizedIsMine(is scm.Issue, o Options) bool {
	return is.Title == o.Title || is.Title == "" && len(o.Clusters) == 0
}

// trusted is what the dashboard's ticked boxes ask, when nobody who may
// not push changed its body since the tool wrote it; else nothing, and
// d.Ignored says why.
func (d *Dashboard) trusted(ctx context.Context, asked publish.Asked) publish.Asked {
	if Empty(asked) {
		return asked
	}
	who, err := d.issues.UntrustedIssueEdits(ctx, d.found.Number)
	switch {
	case err != nil:
		d.Ignored = fmt.Sprintf("the ticked boxes were not acted on: who changed the dashboard could not be told (%v)", err)
	case len(who) > 0:
		d.Ignored = fmt.Sprintf("the ticked boxes were not acted on: %s changed the dashboard and may not push to the repository", strings.Join(who, ", "))
	default:
		return asked
	}
	d.o.Logger.Warn("dashboard: " + d.Ignored)
	return publish.Asked{}
}

// Asked is what the ticked boxes ask of this run's publishing; nothing in
// a dry run, which must not act.
func (d *Dashboard) Asked() publish.Asked {
	if d == nil || d.o.DryRun {
		return publish.Asked{}
	}
	return d.asked
}

// Outcome is what writing the dashboard did.
type Outcome string

const (
	Created   Outcome = "created"
	Edited    Outcome = "edited"
	Unchanged Outcome = "unchanged"
)

// Result is the dashboard's outcome and where it is.
type Result struct {
	Outcome Outcome
	Number  int
	URL     string
	// Detail says what a dry run would do, or which duplicates were left.
	Detail string
}

// Write renders the dashboard of the options' cluster set, bounded to MaxBody, and creates it, or edits it when its title
// or body would change (a ticked box counts: writing it afresh unticks
// it). Line endings are compared as text: a forge's web editor may save
// the body with CRLF.
func (d *Dashboard) Write(ctx context.Context, in Input) (Result, error) {
	in.others = d.others
	in.Clusters = d.o.Clusters
	body, err := Render(in)
	if err != nil {
		return Result{}, fmt.Errorf("dashboard: %w", err)
	}
	body = bounded(body, MaxBody)
	var res Result
	var said []string
	if len(d.Duplicates) > 0 {
		said = append(said, fmt.Sprintf("also open: %s; the oldest is kept up to date", numbers(d.Duplicates)))
	}
	if len(d.LookAlikes) > 0 {
		said = append(said, fmt.Sprintf("left alone: %s, with the marker but not opened by the tool", numbers(d.LookAlikes)))
	}
	if d.Ignored != "" {
		said = append(said, d.Ignored)
	}
	res.Detail = strings.Join(said, "; ")
	switch {
	case d.found == nil && d.o.DryRun:
		res.Outcome, res.Detail = Created, "would open the dashboard"
	case d.found == nil:
		is, err := d.issues.OpenIssue(ctx, d.o.Title, body, []string{d.o.Label})
		if err != nil {
			return Result{}, fmt.Errorf("dashboard: %w", err)
		}
		res.Outcome, res.Number, res.URL = Created, is.Number, is.URL
	case d.found.Title == d.o.Title && normal(d.found.Body) == normal(body):
		res.Outcome, res.Number, res.URL = Unchanged, d.found.Number, d.found.URL
	case d.o.DryRun:
		res.Outcome, res.Number, res.URL, res.Detail = Edited, d.found.Number, d.found.URL, "would edit the dashboard"
	default:
		if err := d.issues.EditIssue(ctx, d.found.Number, d.o.Title, body); err != nil {
			return Result{}, fmt.Errorf("dashboard: %w", err)
		}
		res.Outcome, res.Number, res.URL = Edited, d.found.Number, d.found.URL
	}
	return res, nil
}

func normal(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func numbers(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("#%d", n)
	}
	return strings.Join(out, ", ")
}
