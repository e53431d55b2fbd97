// Package publish turns a plan's change sets into pull requests, the way
// Renovate keeps its own (docs/design.md §6): one branch and pull request per
// change set, found again by branch name and a hidden marker; the same
// recommendation writes nothing; a changed one force-updates its branch
// with a lease; one that vanished because the workload fits now is closed,
// one that vanished because the data is in doubt is left alone; one a
// person closed unmerged stays declined until the recommendation moves.
//
// Only the tool's own pull requests count: opened by the forge's user the
// tool acts as, onto the base, from a branch of the repository itself.
// Any other with its branch name or its marker is a look-alike: left
// alone, and named in the report. A box ticked in the body of its own
// counts only when nobody who may not push changed that body
// (docs/security.md).
package publish

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Forge holds pull requests: GitHub, GitLab, or the local stand-in.
type Forge interface {
	// Find lists the pull requests of a head branch, in any state, newest
	// first.
	Find(ctx context.Context, branch string) ([]scm.PullRequest, error)
	// ListOpen lists the open pull requests whose head branch starts with
	// prefix.
	ListOpen(ctx context.Context, prefix string) ([]scm.PullRequest, error)
	Open(ctx context.Context, pr scm.NewPullRequest) (scm.PullRequest, error)
	Update(ctx context.Context, number int, title, body string) error
	// Relabel adds labels to pull request number and removes others,
	// leaving the labels neither names.
	Relabel(ctx context.Context, number int, add, remove []string) error
	Close(ctx context.Context, number int, comment string) error
	// Identity is the forge's user the tool acts as: its pull requests
	// are the ones this user opened.
	Identity(ctx context.Context) (string, error)
	// UntrustedPullEdits names who changed pull request number's body
	// since the tool last wrote it and may not push to the repository.
	UntrustedPullEdits(ctx context.Context, number int) ([]string, error)
}

// Git is the checkout of the base branch the plan was made on.
type Git interface {
	Dir() string
	Base() plumbing.Hash
	Branches(ctx context.Context, prefix string) (map[string]plumbing.Hash, error)
	Commit(files []scm.File, message string, who scm.Signature, at time.Time) (plumbing.Hash, error)
	// PushAll moves the branches in one push, each with a lease, and says
	// each one's outcome: errs[i] is updates[i]'s.
	PushAll(ctx context.Context, updates []scm.Update) (errs []error)
	Head(ctx context.Context, branch string) (scm.Commit, error)
}

// Options configures publishing.
type Options struct {
	// Base is the base branch's name.
	Base string
	// BranchPrefix starts every branch the tool owns.
	BranchPrefix string
	// Grouping, when set, groups every change set; empty leaves it to each
	// strategy's spec.gitops.grouping, by workload by default.
	Grouping plan.Grouping
	Author   scm.Signature
	// DeclinePercent is how far a recommendation must move before a
	// declined pull request's change is proposed again.
	DeclinePercent int
	// MaxOpen caps the tool's open pull requests; MaxNew the ones opened
	// in one run. Zero means no cap.
	MaxOpen, MaxNew int
	// Labels and Reviewers go on every pull request, with those of the
	// strategies governing its workloads (spec.gitops).
	Labels    []string
	Reviewers []string
	Assignees []string
	Draft     bool
	// Conventional makes commit messages Conventional Commits.
	Conventional bool
	// Source names where usage was read, for the body; Matcher is the
	// label matcher the source adds to every selector, "" when none.
	Source  string
	Matcher string
	// Version is the tool's, said in every body's footer.
	Version string
	// Warnings are said in the body of the pull request of each workload
	// (by its ref, namespace/Kind/name), e.g. a KAI queue the upsize would
	// take over its quota.
	Warnings map[string][]string
	// Findings are what the fleet report found of a workload (by its ref):
	// whether its upsize's rollout finds room, who crowded its GPU. Said
	// in a section of their own in its pull request's body.
	Findings map[string][]string
	// Asked is what people asked for on the dashboard, by change set key.
	Asked  Asked
	DryRun bool
	Now    func() time.Time
	Logger *slog.Logger
}

// Asked is what people ask of the next run by ticking the dashboard's
// checkboxes, each a set of change set keys: Retry forgets a decline,
// Rebase pushes the branch afresh on the base (over a person's commits,
// as asked), Open opens a pull request a cap held back. Retry and Open
// are above the caps: a person asked for that change by name.
type Asked struct {
	Retry, Rebase, Open map[string]bool
}

// Outcome is what happened to one change set or pull request.
type Outcome string

const (
	Opened    Outcome = "opened"
	Updated   Outcome = "updated"
	Unchanged Outcome = "unchanged"
	Closed    Outcome = "closed"
	Declined  Outcome = "declined"
	Capped    Outcome = "capped"
	Kept      Outcome = "kept"
	Failed    Outcome = "failed"
)

// Result is one change set's or pull request's outcome.
type Result struct {
	Key     string
	Branch  string
	Outcome Outcome
	Number  int
	URL     string
	// Detail says why, for the summary: the error of a failure, the cause
	// of a close, what a dry run would do.
	Detail string
}

// Report is what a run did, change set by change set.
type Report struct {
	Results []Result
	DryRun  bool
	// LookAlikes are the pull requests with the tool's branch names or
	// marker that it did not open, by number: left alone.
	LookAlikes []LookAlike
}

// LookAlike is a pull request that looks like one of the tool's — one of
// its branch names, or its marker copied into the body — that the tool
// did not open.
type LookAlike struct {
	Number int
	URL    string
	Branch string
	// Author is who opened it.
	Author string
	// Why says what it lacks: opened by another user, onto another base,
	// from a fork.
	Why string
}

// Count is how many results had outcome o.
func (r *Report) Count(o Outcome) int {
	n := 0
	for _, x := range r.Results {
		if x.Outcome == o {
			n++
		}
	}
	return n
}

// Failed reports whether any change set failed.
func (r *Report) Failed() bool { return r.Count(Failed) > 0 }

// Run publishes p's change sets. The plan must have been made on g's
// checkout, so that policies and files come from the base branch. The
// error is for what stops the whole run (a cancelled ctx, a forge or git
// remote that cannot be listed); one change set's failure is a Failed
// result, and the others go on.
func Run(ctx context.Context, g Git, f Forge, p *plan.Plan, o Options) (*Report, error) {
	o = o.withDefaults()
	sets, err := p.ChangeSets(o.Grouping)
	if err != nil {
		return nil, err
	}
	branches, err := g.Branches(ctx, o.BranchPrefix)
	if err != nil {
		return nil, err
	}
	me, err := f.Identity(ctx)
	if err != nil {
		return nil, fmt.Errorf("who the tool is on the forge: %w", err)
	}
	r := &run{g: g, f: f, p: p, o: o, me: me, branches: branches, report: &Report{DryRun: o.DryRun}}
	listed, err := f.ListOpen(ctx, o.BranchPrefix)
	if err != nil {
		return nil, err
	}
	open := r.sift(listed)
	r.open = len(open)
	kept := map[string]bool{}
	for _, cs := range sets {
		kept[branchName(o.BranchPrefix, cs.Grouping, cs.Key)] = true
	}
	// The pull requests whose change vanished are closed first, so that
	// the room they leave under --max-open is used in this run, not the
	// next: a second run on the same inputs then writes nothing.
	var gone []Result
	for _, pr := range open {
		if kept[pr.Branch] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		gone = append(gone, r.vanished(ctx, pr))
	}
	// Every change set is decided and committed first, the branches all
	// pushed at once, then the pull requests opened or edited: a branch
	// whose push failed leaves its pull request as it was.
	steps := make([]step, 0, len(sets))
	for _, cs := range sets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		steps = append(steps, r.prepareStep(ctx, cs))
	}
	r.pushAll(ctx, steps)
	for i := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.report.Results = append(r.report.Results, r.finish(ctx, &steps[i]))
	}
	r.report.Results = append(r.report.Results, gone...)
	return r.report, nil
}

func (o Options) withDefaults() Options {
	o.BranchPrefix = cmp.Or(o.BranchPrefix, "gpu-rightsizing/")
	o.Author.Name = cmp.Or(o.Author.Name, "gpu-rightsizing")
	o.Author.Email = cmp.Or(o.Author.Email, "gpu-rightsizing@users.noreply.github.com")
	o.Source = cmp.Or(o.Source, "the usage source")
	if o.DeclinePercent <= 0 {
		o.DeclinePercent = 10
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

type run struct {
	g Git
	f Forge
	p *plan.Plan
	o Options
	// me is the forge's user the tool acts as.
	me       string
	branches map[string]plumbing.Hash
	open     int
	opened   int
	report   *Report
}

// step is one change set on its way: its result so far, what is left to
// do, and the commit its branch is to hold.
type step struct {
	cs     plan.ChangeSet
	res    Result
	act    action
	ch     change
	commit plumbing.Hash
	// done: the result is final (nothing to do, a dry run, a failure).
	done bool
}

// fail makes the step's result a failure.
func (r *run) fail(st *step, err error) {
	st.res.Outcome, st.res.Detail, st.done = Failed, err.Error(), true
	r.o.Logger.Error("publish", "set", st.cs.Key, "branch", st.res.Branch, "err", err)
}

// prepareStep readies one change set's pull request: it prepares the
// change, observes the forge and the branch, decides with decidePublish
// (which reads nothing), and commits what the branch is to hold; dry run
// in one place. The caps count a pull request to open from here on.
func (r *run) prepareStep(ctx context.Context, cs plan.ChangeSet) step {
	st := step{cs: cs, res: Result{Key: cs.Key, Branch: branchName(r.o.BranchPrefix, cs.Grouping, cs.Key)}}
	ch, err := r.prepare(ctx, cs)
	if err != nil {
		r.fail(&st, err)
		return st
	}
	if len(ch.files) == 0 {
		// Nothing differs from the base: never an empty pull request.
		st.res.Outcome, st.res.Detail, st.done = Unchanged, "the base already holds the recommendation", true
		return st
	}
	s, err := r.observe(ctx, cs, st.res.Branch, ch.marker)
	if err != nil {
		r.fail(&st, err)
		return st
	}
	s.labels = labels(cs, r.o.Labels)
	st.ch, st.act = ch, decidePublish(s, r.o.DeclinePercent)
	st.res.Outcome, st.res.Detail = st.act.outcome, st.act.detail
	if s.ignored != "" {
		st.res.Detail = strings.TrimPrefix(st.res.Detail+"; "+s.ignored, "; ")
	}
	if st.act.pr != nil {
		st.res.Number, st.res.URL = st.act.pr.Number, st.act.pr.URL
	}
	if !st.act.push && !st.act.edit && !st.act.open && !st.act.relabel() {
		st.done = true
		return st
	}
	if st.act.open {
		// Counted before it opens, so that the next change set sees the
		// cap as this one leaves it.
		r.open++
		r.opened++
	}
	if r.o.DryRun {
		st.res.Detail, st.done = "would update the branch or the pull request", true
		if st.act.open {
			st.res.Detail = "would push the branch and open a pull request"
		}
		return st
	}
	if st.act.push {
		msg := commitMessage(cs, r.o.Conventional) + "\n" + fingerprintTrailer + ": " + ch.marker.Fingerprint + "\n"
		if st.commit, err = r.g.Commit(ch.files, msg, r.o.Author, r.o.Now()); err != nil {
			r.fail(&st, err)
		}
	}
	// The commit holds the files now: a run of many change sets keeps
	// only what their pull requests say until it opens them.
	st.ch.files = nil
	return st
}

// pushAll pushes the branches of every step that has a commit, in one
// push, each with a lease on what its branch held when the run started.
func (r *run) pushAll(ctx context.Context, steps []step) {
	var updates []scm.Update
	var of []int
	for i, st := range steps {
		if !st.done && !st.commit.IsZero() {
			updates = append(updates, scm.Update{Branch: st.res.Branch, Commit: st.commit, Expected: r.branches[st.res.Branch]})
			of = append(of, i)
		}
	}
	if len(updates) == 0 {
		return
	}
	for k, err := range r.g.PushAll(ctx, updates) {
		if err != nil {
			r.fail(&steps[of[k]], err)
		}
	}
}

// finish edits or opens the step's pull request, once its branch holds
// its commit.
func (r *run) finish(ctx context.Context, st *step) Result {
	if st.done {
		return st.res
	}
	var text string
	if st.act.edit || st.act.open {
		var err error
		if text, err = r.body(st); err != nil {
			r.fail(st, err)
			return st.res
		}
	}
	if st.act.edit {
		if err := r.f.Update(ctx, st.act.pr.Number, st.ch.title, text); err != nil {
			r.fail(st, err)
			return st.res
		}
	}
	if st.act.relabel() {
		if err := r.f.Relabel(ctx, st.act.pr.Number, st.act.addLabels, st.act.removeLabels); err != nil {
			r.fail(st, err)
			return st.res
		}
	}
	if st.act.open {
		pr, err := r.f.Open(ctx, scm.NewPullRequest{Branch: st.res.Branch, Base: r.o.Base, Title: st.ch.title, Body: text,
			Labels: labels(st.cs, r.o.Labels), Reviewers: plan.Union(r.o.Reviewers, st.cs.Reviewers), Assignees: r.o.Assignees, Draft: r.o.Draft})
		if err != nil {
			r.fail(st, err)
			return st.res
		}
		st.res.Number, st.res.URL = pr.Number, pr.URL
	}
	return st.res
}

// change is one change set made ready to publish: its files, marker,
// title, and when its body is dated. The body is rendered when the pull
// request is opened or edited (run.body), not held from the commit to
// then: at 10,000 change sets the bodies were a sixth of the run's heap.
type change struct {
	files  []scm.File
	marker marker
	title  string
	now    time.Time
}

// prepare applies a change set's edits to the base and renders what its
// pull request says.
func (r *run) prepare(ctx context.Context, cs plan.ChangeSet) (change, error) {
	applied, err := cs.Apply(ctx, r.g.Dir(), r.p.Inventory())
	if err != nil {
		return change{}, err
	}
	if len(applied.Refused) > 0 {
		return change{}, fmt.Errorf("edit refused: %w", applied.Refused[0])
	}
	var ch change
	for _, f := range applied.Files {
		ch.files = append(ch.files, scm.File{Path: f.Path, Data: f.New})
	}
	if len(ch.files) == 0 {
		return ch, nil
	}
	ch.marker = marker{Set: cs.Key, Fingerprint: fingerprint(cs, ch.files), Recommended: recommended(cs), Current: current(cs), Urgent: urgent(cs)}
	for _, f := range ch.files {
		ch.marker.Files = append(ch.marker.Files, f.Path)
	}
	ch.title = title(cs)
	ch.now = r.o.Now()
	// The body's one error is its marker's: found here, before the
	// branch is committed, as when the body was rendered here.
	_, err = ch.marker.encode()
	return ch, err
}

// body renders the pull request's body of a prepared step.
func (r *run) body(st *step) (string, error) {
	return body(st.cs, st.ch.marker, bodyOptions{DeclinePercent: r.o.DeclinePercent, Source: r.o.Source, Now: st.ch.now, Warnings: r.o.Warnings,
		Findings: r.o.Findings, Matcher: r.o.Matcher, Version: r.o.Version})
}

// published is what publishing one change set observes: all that
// decidePublish needs.
type published struct {
	// current is the tool's open pull request for the change set, and
	// declined the newest one a person closed unmerged; nil when none.
	current, declined *scm.PullRequest
	// head is the branch's newest commit: a person's, or the tool's with
	// the fingerprint it holds.
	head branchHead
	// want is the marker of the change as it is now.
	want marker
	// capped, when not "", says which cap opening one more would pass
	// (--max-open, --max-new).
	capped string
	// excluded are the workloads of the open pull request that the run's
	// filter left out of the plan.
	excluded []string
	// rebase is set when a person asked on the dashboard, or in the pull
	// request's body, for the branch to be made afresh on the base;
	// untick when the body's box asked, so that the body is written again
	// with it unticked.
	rebase, untick bool
	// ignored says why a box ticked in the body was not acted on, "" when
	// none was.
	ignored string
	// labels are what the pull request is to be labelled now.
	labels []string
}

// observe reads the pull requests of the change set's branch and the
// branch's head.
func (r *run) observe(ctx context.Context, cs plan.ChangeSet, branch string, want marker) (published, error) {
	s := published{want: want}
	s.rebase = r.o.Asked.Rebase[cs.Key]
	// A person who asks for this very change by name on the dashboard,
	// to open it or to retry it, is above the caps.
	asked := r.o.Asked.Open[cs.Key] || r.o.Asked.Retry[cs.Key]
	if !asked && ((r.o.MaxOpen > 0 && r.open >= r.o.MaxOpen) || (r.o.MaxNew > 0 && r.opened >= r.o.MaxNew)) {
		s.capped = fmt.Sprintf("at the cap of open (%d) or new (%d) pull requests", r.o.MaxOpen, r.o.MaxNew)
	}
	found, err := r.f.Find(ctx, branch)
	if err != nil {
		return s, err
	}
	prs := r.sift(found)
	// The newest of the tool's pull requests for the branch decides: open
	// is updated, closed unmerged is declined, merged is history.
	for i := range prs {
		// Only the tool's pull requests for this very change set count.
		mk, ok := markerOf(prs[i].Body)
		if !ok || mk.Set != cs.Key {
			continue
		}
		// A box ticked in the pull request's own body asks as the
		// dashboard's does.
		switch {
		case prs[i].State == scm.Open:
			s.current = &prs[i]
			s.excluded = r.excluded(mk)
			if askedIn(prs[i].Body, rebaseBox) && r.trusted(ctx, prs[i], &s) {
				s.rebase, s.untick = true, true
			}
		case prs[i].State == scm.Closed && !mk.Autoclosed && !r.o.Asked.Retry[cs.Key] &&
			!(askedIn(prs[i].Body, retryBox) && r.trusted(ctx, prs[i], &s)):
			s.declined = &prs[i]
		}
		break
	}
	s.head, err = r.head(ctx, branch)
	return s, err
}

// sift keeps the tool's own pull requests of prs and records the others
// as look-alikes: anything else with its branch name or marker asks
// nothing of it.
func (r *run) sift(prs []scm.PullRequest) []scm.PullRequest {
	var own []scm.PullRequest
	for _, pr := range prs {
		why := ""
		switch {
		case pr.Fork:
			why = "from a fork"
		case !scm.Mine(pr, r.me):
			why = fmt.Sprintf("opened by %s, not by %s", cmp.Or(pr.Author, "someone unknown"), cmp.Or(r.me, "the tool"))
		case r.o.Base != "" && pr.Base != r.o.Base:
			why = fmt.Sprintf("onto %s, not %s", pr.Base, r.o.Base)
		default:
			own = append(own, pr)
			continue
		}
		if !slices.ContainsFunc(r.report.LookAlikes, func(l LookAlike) bool { return l.Number == pr.Number }) {
			r.report.LookAlikes = append(r.report.LookAlikes, LookAlike{Number: pr.Number, URL: pr.URL, Branch: pr.Branch, Author: pr.Author, Why: why})
			r.o.Logger.Warn("publish: a pull request looks like the tool's but is not its own; left alone", "number", pr.Number,
				"branch", pr.Branch, "author", pr.Author, "why", why)
		}
	}
	return own
}

// trusted reports whether the boxes ticked in pr's body count: nobody who
// may not push to the repository changed it since the tool wrote it. When
// they do not, or the forge cannot say, s says so.
func (r *run) trusted(ctx context.Context, pr scm.PullRequest, s *published) bool {
	who, err := r.f.UntrustedPullEdits(ctx, pr.Number)
	switch {
	case err != nil:
		s.ignored = fmt.Sprintf("a box ticked in #%d was not acted on: who changed its body could not be told (%v)", pr.Number, err)
	case len(who) > 0:
		s.ignored = fmt.Sprintf("a box ticked in #%d was not acted on: %s changed its body and may not push to the repository", pr.Number, strings.Join(who, ", "))
	default:
		return true
	}
	r.o.Logger.Warn("publish: "+s.ignored, "number", pr.Number)
	return false
}

// action is what decidePublish says to do with one change set.
type action struct {
	outcome Outcome
	detail  string
	// pr is the pull request the outcome is about.
	pr *scm.PullRequest
	// push the branch, edit the pull request's title and body, open one.
	push, edit, open bool
	// addLabels and removeLabels bring the open pull request's labels to
	// its change's direction and urgency.
	addLabels, removeLabels []string
}

func (a action) relabel() bool { return len(a.addLabels)+len(a.removeLabels) > 0 }

// decidePublish is the pull-request lifecycle of one change set, as a
// function of what is seen (README, "Pull requests"): every case of it is
// a row of TestDecidePublish. It reads nothing and writes nothing.
func decidePublish(s published, declinePercent int) action {
	if s.current != nil {
		a := action{pr: s.current}
		if len(s.excluded) > 0 {
			// The change set lacks them only because the run did not look:
			// updating would drop their change from the pull request.
			a.outcome = Kept
			a.detail = fmt.Sprintf("%s: outside this run's filter, so the pull request stays as it is", strings.Join(s.excluded, ", "))
			return a
		}
		// The branch and the body each record what they hold: the branch
		// in its commit's trailer, the body in its marker. A run killed
		// between the push and the edit leaves them apart; this one brings
		// whichever is behind up to date.
		old, _ := markerOf(s.current.Body)
		// The urgency is in the title, not in the fingerprint: a change
		// that became urgent, or no longer is, edits the body and title
		// without a push. A title a person wrote stays otherwise.
		edited := old.Fingerprint == s.want.Fingerprint && !old.Autoclosed && old.Urgent == s.want.Urgent
		if s.rebase {
			a.addLabels, a.removeLabels = relabel(s.current.Labels, s.labels)
			a.outcome, a.push, a.edit = Updated, true, !edited || s.untick
			a.detail = "made afresh on the base, as asked on the dashboard"
			if s.untick {
				a.detail = "made afresh on the base, as asked in the pull request"
			}
			return a
		}
		if s.head.who != "" {
			a.outcome = Kept
			a.detail = fmt.Sprintf("%s pushed to the branch, so the tool leaves it alone; close the pull request to let the tool start over", s.head.who)
			return a
		}
		a.addLabels, a.removeLabels = relabel(s.current.Labels, s.labels)
		pushed := s.head.fingerprint == s.want.Fingerprint
		if pushed && edited && !a.relabel() {
			a.outcome = Unchanged
			return a
		}
		if pushed && edited {
			a.outcome, a.detail = Updated, "labels: "+labelChange(a.addLabels, a.removeLabels)
			return a
		}
		a.outcome, a.push, a.edit = Updated, !pushed, true
		return a
	}
	if s.declined != nil {
		if old, _ := markerOf(s.declined.Body); !moved(old, s.want, declinePercent) {
			return action{outcome: Declined, pr: s.declined,
				detail: fmt.Sprintf("#%d was closed unmerged; the recommendation has not moved by more than %d%% since", s.declined.Number, declinePercent)}
		}
	}
	if s.capped != "" {
		return action{outcome: Capped, detail: s.capped}
	}
	if s.head.who != "" {
		return action{outcome: Kept, detail: fmt.Sprintf("the branch holds a commit by %s and no open pull request; delete the branch to let the tool start over", s.head.who)}
	}
	return action{outcome: Opened, push: true, open: true}
}

// branchHead is what the publisher knows of a branch's newest commit.
type branchHead struct {
	// who names the person who pushed it, "" when the branch is new or
	// the tool's own: a person's work on a branch is never overwritten.
	who string
	// fingerprint is the change the tool's commit holds.
	fingerprint string
}

func (r *run) head(ctx context.Context, branch string) (branchHead, error) {
	if r.branches[branch].IsZero() {
		return branchHead{}, nil
	}
	c, err := r.g.Head(ctx, branch)
	if err != nil {
		return branchHead{}, err
	}
	if c.Author.Email != r.o.Author.Email {
		return branchHead{who: cmp.Or(c.Author.Name, c.Author.Email)}, nil
	}
	return branchHead{fingerprint: trailer(c.Message)}, nil
}

// vanished decides about an open pull request whose change set the plan
// no longer has: closed when every workload it changes was judged on good
// data and needs nothing now; left alone when the data is in doubt.
func (r *run) vanished(ctx context.Context, pr scm.PullRequest) Result {
	res := Result{Key: pr.Branch, Branch: pr.Branch, Number: pr.Number, URL: pr.URL}
	mk, ok := markerOf(pr.Body)
	if !ok {
		res.Outcome, res.Detail = Kept, "no marker of the tool in its body: not ours to close"
		return res
	}
	res.Key = mk.Set
	if out := r.excluded(mk); len(out) > 0 {
		res.Outcome = Kept
		res.Detail = fmt.Sprintf("%s: outside this run's filter, so the pull request stays as it is", strings.Join(out, ", "))
		return res
	}
	var why []string
	for _, ref := range slices.Sorted(maps.Keys(mk.Recommended)) {
		d, found := r.decision(ref)
		upsize := found && mk.Recommended[ref] > d.Current.GPUs
		switch {
		case !found && r.troubled(mk.Files):
			// Gone from the plan because its file could not be read is
			// not gone from the repository: a broken merge must not close
			// every pull request of that file.
			res.Outcome = Kept
			res.Detail = fmt.Sprintf("%s is missing from the plan, and a file it was in has a problem: the pull request stays as it is", ref)
			return res
		case !found:
			why = append(why, fmt.Sprintf("%s is no longer in the repository", ref))
		case d.Action.Changes():
			// Still changing, under another change set (the grouping
			// changed): this one is superseded.
			why = append(why, fmt.Sprintf("%s now changes in another pull request", ref))
		case d.Cause.Conclusive(), upsize && d.NoUpsizeNeeded():
			why = append(why, fmt.Sprintf("%s: %s", ref, d.Reason()))
		default:
			res.Outcome = Kept
			res.Detail = fmt.Sprintf("%s: %s (%s): the data is in doubt, so the pull request stays as it is", ref, d.Cause, d.Reason())
			return res
		}
	}
	slices.Sort(why)
	if r.o.DryRun {
		res.Outcome, res.Detail = Closed, "would close: "+strings.Join(why, "; ")
		return res
	}
	said := make([]string, len(why))
	for i, w := range why {
		said[i] = cell(w)
	}
	comment := "The recommendation is gone, so this pull request is closed:\n\n- " + strings.Join(said, "\n- ")
	// Mark it closed by the tool first, so that it never counts as
	// declined: when the change is needed again, a new one opens.
	mk.Autoclosed = true
	b, err := withMarker(pr.Body, mk)
	if err == nil {
		err = r.f.Update(ctx, pr.Number, pr.Title, b)
	}
	if err == nil {
		err = r.f.Close(ctx, pr.Number, comment)
	}
	if err != nil {
		res.Outcome, res.Detail = Failed, err.Error()
		return res
	}
	r.open--
	res.Outcome, res.Detail = Closed, strings.Join(why, "; ")
	return res
}

// troubled reports whether the plan has a problem in one of files, or
// any problem at all when the marker does not say which files.
func (r *run) troubled(files []string) bool {
	for _, pr := range r.p.Problems {
		if len(files) == 0 || pr.File == "" || slices.Contains(files, pr.File) {
			return true
		}
	}
	return false
}

// excluded is the workloads of a pull request's marker that the plan's
// filter left out, sorted: the run did not look at them, so it can say
// nothing about their change.
func (r *run) excluded(mk marker) []string {
	var out []string
	for _, ref := range slices.Sorted(maps.Keys(mk.Recommended)) {
		if r.p.Excludes(ref) {
			out = append(out, ref)
		}
	}
	return out
}

func (r *run) decision(ref string) (plan.Decision, bool) {
	for _, d := range r.p.Decisions {
		if d.Workload.Ref.String() == ref {
			return d, true
		}
	}
	return plan.Decision{}, false
}

// recommended is the marker's record of a change set's values.
func recommended(cs plan.ChangeSet) map[string]float64 {
	out := map[string]float64{}
	for _, d := range cs.Decisions {
		out[d.Workload.Ref.String()] = d.Recommended.GPUs
	}
	return out
}

// current is the marker's record of the values a change set starts from.
func current(cs plan.ChangeSet) map[string]float64 {
	out := map[string]float64{}
	for _, d := range cs.Decisions {
		out[d.Workload.Ref.String()] = d.Current.GPUs
	}
	return out
}

// moved reports whether a change differs enough from one a person
// declined to be proposed again: a workload came or went, a
// recommendation moved by more than pct percent, or it now goes the other
// way (a declined scale-back says nothing about an upsize).
func moved(declined, now marker, pct int) bool {
	if len(declined.Recommended) != len(now.Recommended) {
		return true
	}
	for ref, v := range now.Recommended {
		o, ok := declined.Recommended[ref]
		if !ok || o <= 0 || math.Abs(v-o)/o*100 > float64(pct) {
			return true
		}
		if c, ok := declined.Current[ref]; ok && (o > c) != (v > now.Current[ref]) {
			return true
		}
	}
	return false
}

// ownLabels are the labels the tool sets by the change's direction and
// urgency: it removes them from a pull request whose change no longer has
// them. Other labels (the run's, the strategies', a person's) it only
// adds.
var ownLabels = []string{"upsize", string(engine.ScaleBack), "urgent"}

// relabel is what brings labels have to want: the labels of want
// missing, and the tool's own labels present that want lacks.
func relabel(have, want []string) (add, remove []string) {
	for _, l := range want {
		if !slices.Contains(have, l) {
			add = append(add, l)
		}
	}
	for _, l := range ownLabels {
		if slices.Contains(have, l) && !slices.Contains(want, l) {
			remove = append(remove, l)
		}
	}
	return add, remove
}

// labelChange says a change of labels, as +added -removed.
func labelChange(add, remove []string) string {
	var out []string
	for _, l := range add {
		out = append(out, "+"+l)
	}
	for _, l := range remove {
		out = append(out, "-"+l)
	}
	return strings.Join(out, " ")
}

// labels are the pull request's labels: the run's, those of the strategies
// governing its workloads, the direction of the change, and urgent when it
// is.
func labels(cs plan.ChangeSet, extra []string) []string {
	out := slices.Concat(extra, cs.Labels)
	out = append(out, "gpu-rightsizing")
	for _, d := range cs.Decisions {
		switch d.Action {
		case engine.Upsize:
			out = append(out, "upsize")
		case engine.ScaleBack:
			out = append(out, string(engine.ScaleBack))
		}
		if d.Urgent {
			out = append(out, "urgent")
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var unsafeBranch = regexp.MustCompile(`[^a-z0-9.-]+`)

// branchName derives a change set's branch from its key, injectively: two
// change sets never share a branch, whatever their names. A workload's
// branch is <prefix><namespace>/<name> (names are DNS labels and
// subdomains, so that is unique, and readable), and
// <prefix><cluster>/<namespace>/<name> for a workload of a mapped
// cluster (one more segment, so never another's; clusters a shared
// definition builds are joined by '+'); a kind other than Deployment and
// the other groupings put a '_', which no Kubernetes name holds, in
// their first segment, and a policy key or the keys of joined change
// sets, which may hold any text, carry a hash of themselves.
func branchName(prefix string, by plan.Grouping, key string) string {
	switch by {
	case plan.ByNamespace:
		return prefix + "by_namespace/" + refComponent(key)
	case plan.ByCluster:
		return prefix + "by_cluster/" + refComponent(key)
	case plan.ByPolicy:
		return prefix + "by_policy/" + hashedSlug(key)
	case plan.Joined:
		return prefix + "by_file/" + hashedSlug(key)
	}
	ref, ok := usage.ParseRef(key)
	if !ok {
		// Plan keys are refs; anything else still gets a branch of its own.
		return prefix + "by_key/" + hashedSlug(key)
	}
	ns, name := refComponent(ref.Namespace), refComponent(ref.Name)
	if ref.Cluster != "" {
		ns = refComponent(ref.Cluster) + "/" + ns
	}
	if ref.Kind == "Deployment" {
		return prefix + ns + "/" + name
	}
	return prefix + ns + "/" + strings.ToLower(ref.Kind) + "_" + name
}

// hashedSlug is a readable slug of any text and a hash of it, so that two
// texts that slug alike still name two branches.
func hashedSlug(key string) string {
	sum := sha256.Sum256([]byte(key))
	slug := strings.Trim(unsafeBranch.ReplaceAllString(strings.ToLower(key), "-"), "-.")
	if len(slug) > 60 {
		slug = slug[:60]
	}
	return slug + "-" + hex.EncodeToString(sum[:4])
}

// refComponent makes a Kubernetes name a component git accepts in a
// branch name. Of git's rules, a name (a DNS label or subdomain) can
// break only one: a component must not end in ".lock". Its '.' becomes
// '_', which no Kubernetes name holds, so the mapping stays injective.
func refComponent(n string) string {
	if base, ok := strings.CutSuffix(n, ".lock"); ok {
		return base + "_lock"
	}
	return n
}
