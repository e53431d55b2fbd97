// Package run is one run of the recommender as a Go API: Options in,
// Run, a Result out. It is the use case behind `recommender run`. The
// command parses flags and a config file into Options, and maps the
// Result to an exit code.
//
// The steps, in order:
//   - open the forge and clone the base branch (forge.go);
//   - plan on it, with usage from package source;
//   - the fleet report's findings for the pull requests (findings.go);
//   - the live stage's queue check (live.go), the dashboard's ticked
//     boxes (dashboard.go);
//   - publish the change sets (package publish);
//   - the live stage after publishing, then the dashboard written;
//   - tell how it went (observe.go): the log's summary line, the summary
//     on Out, the metrics, the Kubernetes Event, the chat message.
package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/summary"
)

// Outcome is how a run ended.
type Outcome = summary.Outcome

// The outcomes of a run.
const (
	// NothingToDo: the run went well and proposed nothing.
	NothingToDo = summary.NothingToDo
	// ChangesProposed: the run went well and opened or updated a pull
	// request.
	ChangesProposed = summary.ChangesProposed
	// Problems: the run finished but refused some of its input (a bad
	// policy, an unreadable manifest, a refused edit, a failed usage
	// query, a failed pull request); the output says what.
	Problems = summary.Problems
	// Failed: the run failed; nothing was proposed.
	Failed = summary.Failed
)

// Result is how a run went, as far as it got.
type Result struct {
	Outcome Outcome
	// Plan is the plan made on the base branch; nil when the run failed
	// before it.
	Plan *plan.Plan
	// Report is what publishing did; nil when the run failed before it.
	Report *publish.Report
}

// Run runs once. Its error is what made the run fail (Outcome Failed);
// else, a failure to write the summary on Out (the run's work stands).
// A mistake in o is a *config.FlagError, returned before the run starts.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return &Result{Outcome: Failed}, err
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &runner{o: &o}
	start := time.Now()
	err := r.run(ctx)
	return r.ended(ctx, start, err)
}

// runner is one run under way: what it has got so far, for the summary
// of a run that ends at any step.
type runner struct {
	o   *Options
	p   *plan.Plan
	rep *publish.Report
	lr  *liveStage
	// problems says the run finished but refused some of its input.
	problems bool
}

func (r *runner) run(ctx context.Context) (err error) {
	o := r.o
	table := o.tables()
	forge, url, auth, err := o.forge(ctx)
	if err != nil {
		return err
	}
	url, auth = o.Git.remote(url, auth)
	work, err := os.MkdirTemp("", "recommender-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	g, err := scm.Clone(ctx, url, o.Base, filepath.Join(work, "checkout"), auth)
	if err != nil {
		return err
	}
	var source string
	r.p, source, err = o.Usage.Plan(ctx, plan.Options{Repo: g.Dir(), PolicyPaths: o.PolicyPaths, DefaultNamespace: o.DefaultNamespace,
		Filter: o.Filter, Grouping: plan.Grouping(o.GroupBy)}, o.Logger, o.Now)
	if err != nil {
		return err
	}
	p := r.p
	o.Logger.Info("plan ready", "summary", p.Summary())
	for _, w := range p.Unselected() {
		o.Logger.Warn("nothing selected", "why", w)
		fmt.Fprintf(o.Err, "warning: %s\n", plan.Printable(w))
	}
	findings := o.fleetFindings(ctx, g.Dir(), p)
	r.lr, err = prepareLive(ctx, p, o.Live, o.Filter.Clusters, o.DryRun, o.Now)
	if err != nil {
		return err
	}
	author := scm.Signature{Name: o.AuthorName, Email: o.AuthorEmail}
	if o.SigningKeyFile != "" {
		if author.Key, err = scm.ReadSigningKey(o.SigningKeyFile); err != nil {
			return err
		}
	}
	dash := o.readDashboard(ctx, forge)
	r.rep, err = publish.Run(ctx, o.countPushes(g), forge, p, publish.Options{
		Base: o.Base, BranchPrefix: o.BranchPrefix, Grouping: plan.Grouping(o.GroupBy),
		Author:         author,
		DeclinePercent: o.DeclinePercent, MaxOpen: o.MaxOpen, MaxNew: o.MaxNew,
		Labels: o.Labels, Reviewers: o.Reviewers, Assignees: o.Assignees, Draft: o.Draft,
		Conventional: publish.Conventional(g.Message()), Source: source, Version: o.Version,
		Warnings: r.lr.Warnings(), Findings: findings, Asked: dash.Asked(),
		DryRun: o.DryRun, Now: func() time.Time { return p.At }, Logger: o.Logger,
	})
	o.clearProgress()
	if err != nil {
		return err
	}
	rep := r.rep
	if err := rep.WriteTable(table); err != nil {
		return err
	}
	liveFailed, err := r.lr.Finish(ctx, forge, rep, plan.Grouping(o.GroupBy), table)
	if err != nil {
		return err
	}
	dashFailed := o.writeDashboard(ctx, dash, p, rep, findings)
	if rep.Failed() || liveFailed || dashFailed || len(p.Problems) > 0 {
		for _, pr := range p.Problems {
			fmt.Fprintf(o.Err, "problem: %s\n", plan.Printable(pr.String()))
		}
		r.problems = true
	}
	return nil
}

// outcome is how the run ended, from its error and what it did.
func (r *runner) outcome(err error) Outcome {
	switch {
	case err != nil:
		return Failed
	case r.problems:
		return Problems
	case r.rep != nil && r.rep.Count(publish.Opened)+r.rep.Count(publish.Updated) > 0:
		return ChangesProposed
	}
	return NothingToDo
}

// ended tells how a run that began at start went, once it ended with
// err: the log's summary line, then the run's summary where Observe
// says. It returns err, or else a failure to write Out.
func (r *runner) ended(ctx context.Context, start time.Time, err error) (*Result, error) {
	o := r.o
	end := time.Now()
	outcome := r.outcome(err)
	logSummary(o.Logger, outcome, r.p, r.rep, r.lr.Summary(), o.DryRun, end.Sub(start), err)
	s := summary.New(summary.Run{Outcome: outcome, Err: err, DryRun: o.DryRun, Started: start, Duration: end.Sub(start),
		Plan: r.p, Report: r.rep, LiveOn: r.lr != nil, Live: r.lr.Results(), LiveClusters: r.lr.Clusters()})
	werr := o.Observe.finish(ctx, o.Out, o.Logger, o.Live.Kubeconfig, s, r.p, end)
	if err == nil {
		err = werr
	}
	return &Result{Outcome: outcome, Plan: r.p, Report: r.rep}, err
}

// logSummary logs the one line that sums a run up: its outcome, what the
// plan decided, what happened to the pull requests, how long it took.
func logSummary(log *slog.Logger, o Outcome, p *plan.Plan, rep *publish.Report, live []any, dryRun bool, took time.Duration, err error) {
	outcome := map[Outcome]string{NothingToDo: "nothing to do", ChangesProposed: "changes proposed",
		Problems: "problems", Failed: "failed"}[o]
	attrs := []any{"outcome", outcome, "dryRun", dryRun, "duration", took.Round(time.Millisecond).String()}
	if p != nil {
		attrs = append(attrs, slog.Group("decisions", p.DecisionCounts()...), "problems", len(p.Problems))
	}
	if rep != nil {
		attrs = append(attrs, slog.Group("pullRequests", rep.Summary()...))
	}
	if live != nil {
		attrs = append(attrs, slog.Group("live", live...))
	}
	level := slog.LevelInfo
	if outcome == "failed" || outcome == "problems" {
		level = slog.LevelError
		if outcome == "failed" {
			attrs = append(attrs, "error", err.Error())
		}
	}
	log.Log(context.Background(), level, "run finished", attrs...)
}
