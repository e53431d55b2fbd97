// Package plan runs the recommender's pipeline, read-only, in stages a
// caller can run one by one (docs/design.md §2): Govern reads policies and
// workloads from a checkout and batches the usage queries; Fetch runs
// them; Decide asks the engine; ChangeSets groups the edits for
// publishing, and Preview applies them all to one copy for a printed plan.
// Nothing here writes: publishing is another step's job.
package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// UsageSource answers usage queries: a Prometheus server, a recorded file.
type UsageSource interface {
	Usage(ctx context.Context, q usage.Query) (usage.Result, error)
}

// Options configures one plan.
type Options struct {
	// Repo is the checkout to read.
	Repo string
	// PolicyPaths narrows where policies are read from (relative to Repo).
	PolicyPaths []string
	// At is the evaluation time.
	At time.Time
	// Source provides usage.
	Source UsageSource
	// DefaultNamespace is the namespace of manifests that name none.
	DefaultNamespace string
	// Filter narrows the plan to some workloads; the zero Filter keeps
	// them all.
	Filter Filter
	// ClusterLabel, when set, is the map of one cluster a run is given
	// instead of the repository's (`--cluster-label name=value`): every
	// workload keeps its identity, and its usage is read from the series
	// of that label value alone. A repository with a ClusterMap refuses it.
	ClusterLabel ClusterLabel
	// WholeStore reads usage from the whole store rather than by the
	// map's label: a job of one cluster (Filter.Clusters names one) whose
	// Prometheus holds that cluster alone.
	WholeStore bool
	// Grouping is how the run groups every change into pull requests
	// (`--group-by`), "" for each strategy's own: the printed plan shows
	// the pull requests that group several workloads as run opens them.
	Grouping Grouping
	// DropUsage keeps no samples in a decision once it is made: a plan
	// that is printed or written has no pull request body, chart or
	// dashboard to read them, and they are a tenth of what the edits
	// after it hold.
	DropUsage bool
	Logger    *slog.Logger
}

// Plan is one run, filled in stage by stage.
type Plan struct {
	At time.Time
	// Decisions holds one entry per workload in scope or asking for a GPU,
	// sorted by namespace, kind and name.
	Decisions []Decision
	// Files are the files the decisions edit, sorted by path, once Preview
	// has run.
	Files []patcher.File
	// Problems are inputs that were refused: policies, manifests, edits,
	// usage queries. Whatever they touch is left alone.
	Problems []Problem
	// Hidden counts Deployments neither in scope nor asking for a GPU.
	Hidden int
	// Queries are the batched usage queries, one per way of reading usage.
	Queries []usage.Query

	repo  string
	inv   *patcher.Inventory
	log   *slog.Logger
	work  []pending
	usage map[usage.Ref]usage.Workload
	// failed holds, per workload, why its usage query failed.
	failed map[usage.Ref]string
	filter Filter
	// admitted says, for each workload of the checkout (by ref string),
	// whether the filter keeps it; nil without a filter.
	admitted map[string]bool
	// clusters is the map the plan reads clusters by: the repository's,
	// or the one of Options.OneCluster; nil without either. wholeStore
	// is Options.WholeStore.
	clusters   *policy.ClusterMap
	wholeStore bool
	grouping   Grouping
	dropUsage  bool
	// parts holds, for a workload whose usage is read as several
	// workloads' (one per cluster that deploys its definition, or without
	// its cluster from a store of that cluster alone), the refs its
	// queries name.
	parts map[usage.Ref][]usage.Ref
	// mapped is the inventory's workloads with their clusters.
	mapped []patcher.Workload
	// policies counts the policy documents read, valid or not; paths are
	// where they were looked for, when not the whole checkout.
	policies int
	paths    []string
}

// pending is a governed workload waiting for its decision.
type pending struct {
	w   patcher.Workload
	g   policy.Governance
	cur engine.Allocation
}

// Decision is one workload's decision and where it stands.
type Decision struct {
	engine.Decision
	Workload patcher.Workload
	Policies []policy.Meta
	// Rules are what decided, and what the edit may do; Usage is what the
	// decision read. Both are for explaining it (a pull request's body).
	// Usage is released once decided (usage.Workload.Release), but for an
	// urgent upsize of several clusters, which the live path decides again;
	// with Options.DropUsage it is empty.
	Rules engine.Rules
	Usage usage.Workload
	// PullRequest is what the governing strategy's gitops settings say
	// about the pull request that carries this change.
	PullRequest policy.PullRequest
	// Matcher is the label matcher its usage was read under, as a pull
	// request's body shows it (cluster="prod-eu"); "" when the store was
	// read whole.
	Matcher string
}

// Problem is one refused input, located as precisely as known.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Cause is what kind of input was refused, as a decision names it
	// (policy-invalid, manifest-invalid, duplicated, policy-conflict,
	// query-failed, edit-refused): a run's metrics count problems by it.
	Cause engine.Cause `json:"cause,omitempty"`
}

// String reads as the error it came from: every located problem is told
// the same way.
func (p Problem) String() string {
	return (&located.Error{File: p.File, Line: p.Line, Column: p.Column, Field: p.Field, Err: errors.New(p.Message)}).Error()
}

// Make runs every stage once, for a printed plan.
func Make(ctx context.Context, opts Options) (*Plan, error) {
	if opts.Source == nil {
		return nil, errors.New("plan: no usage source")
	}
	p, err := Govern(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := p.Evaluate(ctx, opts.Source, opts.At); err != nil {
		return nil, err
	}
	return p, nil
}

// Evaluate runs the stages after Govern at evaluation time at: Fetch,
// Decide and Preview. A caller that needs the queries before it can open
// its usage source (a recording kept to what they read, whose end is the
// default time) governs first and evaluates once it has both.
func (p *Plan) Evaluate(ctx context.Context, src UsageSource, at time.Time) error {
	if err := p.Use(ctx, src, at); err != nil {
		return err
	}
	return p.Preview(ctx)
}

// Use is Evaluate without the Preview: Fetch and Decide at evaluation
// time at. After it the plan holds nothing of src, so a caller that holds
// a large source (a recording) can let go of it before the edits.
func (p *Plan) Use(ctx context.Context, src UsageSource, at time.Time) error {
	p.At = at
	for i := range p.Queries {
		p.Queries[i].At = at
	}
	if err := p.Fetch(ctx, src); err != nil {
		return err
	}
	p.Decide()
	// The decisions hold what the preview and the output need: the
	// governed workloads and their usage by ref would only be held
	// beside them, a tenth of the plan's memory at 10,000 workloads.
	p.work, p.usage, p.failed = nil, nil, nil
	return nil
}

// Govern is the first stage: it reads the policies and workloads of the
// checkout, decides who governs each workload, and batches the usage
// queries so that workloads read alike share one.
func Govern(ctx context.Context, opts Options) (*Plan, error) {
	p, _, err := governSet(ctx, opts)
	return p, err
}

// governSet is Govern that also returns the policies it read, for a
// caller that reports on the policies themselves (Validate).
func governSet(ctx context.Context, opts Options) (*Plan, *policy.Set, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Plan{At: opts.At, repo: opts.Repo, log: log, filter: opts.Filter, wholeStore: opts.WholeStore, grouping: opts.Grouping,
		dropUsage: opts.DropUsage,
		parts:     map[usage.Ref][]usage.Ref{}}
	if !opts.Filter.IsZero() {
		p.admitted = map[string]bool{}
	}
	set, inv, err := p.read(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if p.clusters, err = clusterMap(set, opts); err != nil {
		return nil, nil, err
	}
	if opts.Grouping == ByCluster && !p.namesClusters() {
		return nil, nil, optionsErrorf("`--group-by` %s needs a ClusterMap in the repository", ByCluster)
	}
	ns := cmp.Or(opts.DefaultNamespace, "default")
	p.inv = withNamespaces(inv, ns)
	ws, unmapped := p.mapClusters(p.inv.Workloads)
	p.mapped = ws
	p.policies = len(set.Strategies) + len(set.Proactive) + len(set.Reactive) + len(set.Consolidation) + len(set.Broken)
	p.paths = opts.PolicyPaths
	definitions := map[usage.Ref][]string{}
	for _, w := range ws {
		definitions[w.Ref] = append(definitions[w.Ref], w.Where())
		p.admit(w.Ref, w.Labels)
	}
	p.unsupported(set, ns)
	groups, keys := map[string]int{}, map[rulesRef]string{}
	p.work = slices.Grow(p.work, len(ws))
	for i, w := range ws {
		if p.Excludes(w.Ref.String()) {
			continue
		}
		pw, ok := p.govern(set, w, definitions[w.Ref], unmapped[i])
		if !ok {
			p.Hidden++
			continue
		}
		p.work = append(p.work, pw)
		p.batch(opts.At, pw, groups, keys)
	}
	if p.admitted != nil {
		out := 0
		for _, in := range p.admitted {
			if !in {
				out++
			}
		}
		p.log.Info("workloads filtered out", "count", out)
	}
	p.sortProblems()
	return p, set, nil
}

// Unselected says what selected nothing, one line each: no policy in the
// checkout (or under its policy paths), or a filter that admits none of
// its workloads. Each is a plan of nothing that a mistake, not the
// fleet, made: a command says so on stderr rather than print an empty
// table alone.
func (p *Plan) Unselected() []string {
	var out []string
	if p.policies == 0 {
		where := "the repository"
		if len(p.paths) > 0 {
			where = strings.Join(p.paths, ", ")
		}
		out = append(out, fmt.Sprintf("no policy found in %s: no workload is governed (policies are documents of apiVersion %s/%s)", where, policy.ProjectGroup, policy.Version))
	}
	if p.admitted != nil && !slices.Contains(slices.Collect(maps.Values(p.admitted)), true) {
		out = append(out, fmt.Sprintf("the filter (%s) admits none of the repository's %d workload(s)", p.filter, len(p.admitted)))
	}
	return out
}

// admit applies the filter to one definition of ref, and remembers the
// answer for Excludes. A ref defined twice is in when either definition
// is: which one is deployed is not known, and the duplicate must still be
// reported.
func (p *Plan) admit(ref usage.Ref, labels map[string]string) {
	if p.admitted != nil {
		p.admitted[ref.String()] = p.admitted[ref.String()] || p.filter.Admits(ref, labels)
	}
}

// Excludes reports whether the plan's filter leaves out the workload ref
// (namespace/Kind/name), so that a run neither updates nor closes a pull
// request about it: the run did not look at it. A workload the checkout
// no longer holds is excluded unless the filter can tell it would be in
// (with a selector it cannot, its labels being gone).
func (p *Plan) Excludes(ref string) bool {
	if p.admitted == nil {
		return false
	}
	if in, ok := p.admitted[ref]; ok {
		return !in
	}
	r, ok := usage.ParseRef(ref)
	if !ok {
		return true
	}
	return !p.filter.MayAdmit(r)
}

// read reads the checkout once, for both the policies and discovery; the
// problems of either become the plan's.
func (p *Plan) read(ctx context.Context, opts Options) (*policy.Set, *patcher.Inventory, error) {
	dir, err := checkout.OpenDir(opts.Repo)
	if err != nil {
		return nil, nil, fmt.Errorf("open checkout: %w", err)
	}
	defer dir.Close()
	files, err := checkout.Read(ctx, dir, checkout.Options{})
	if err != nil {
		return nil, nil, err
	}
	set, err := policy.LoadFiles(files, opts.PolicyPaths...)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range set.Errors {
		p.problem(engine.CausePolicyInvalid, e)
	}
	p.log.Info("policies loaded", "strategies", len(set.Strategies), "proactive", len(set.Proactive),
		"reactive", len(set.Reactive), "invalid", len(set.Broken))

	inv, err := patcher.DiscoverFiles(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	for _, pr := range inv.Problems {
		if reported(pr, set) {
			continue
		}
		p.problem(engine.CauseManifestInvalid, nearest(pr))
	}
	p.log.Info("workloads discovered", "count", len(inv.Workloads), "unreadable", len(inv.Problems))
	if len(inv.Unreleased) > 0 {
		// Which release name, namespace and values they are deployed with
		// is not in the checkout: their workloads are not read.
		if len(inv.ApplicationSets) > 0 {
			// An ApplicationSet may well render them: saying so only at
			// INFO would read as "nothing to do" for a chart that runs.
			p.log.Warn("charts that no Application, HelmRelease or helmCharts of the checkout renders are not read; the checkout's ApplicationSets may render them, and their generators are not read",
				"charts", inv.Unreleased, "applicationSets", inv.ApplicationSets)
		} else {
			p.log.Info("charts that no Application, HelmRelease or helmCharts of the checkout renders are not read", "charts", inv.Unreleased)
		}
	}
	return set, inv, nil
}

// govern says which rules govern workload w, defined where says, or why
// it is left alone; ok is false for a workload no policy selects that
// asks for no GPU, which the plan does not show. unmapped says no
// cluster of the map deploys its definition.
func (p *Plan) govern(set *policy.Set, w patcher.Workload, where []string, unmapped bool) (pending, bool) {
	g := set.Govern(policy.Target{Ref: w.Ref, Labels: w.Labels})
	cur, bad := allocation(w.GPU)
	if g.Skip != "" && cur.Form == engine.NoGPU && bad == "" {
		return pending{}, false
	}
	switch {
	case unmapped:
		m := p.clusters
		g = policy.Governance{Skip: engine.CauseUnmapped, Policies: g.Policies,
			Why: fmt.Sprintf("%s lies under no cluster's paths in %s (%s:%d), so which cluster runs it, and which usage is its own, is not known", w.File, m.Meta, m.File, m.Line)}
	case len(where) > 1:
		// One problem for the lot, at the first definition.
		if where[0] == w.Where() {
			p.Problems = append(p.Problems, Problem{File: w.File, Line: w.Line, Cause: engine.CauseDuplicated,
				Message: fmt.Sprintf("%s is defined %d times (%s): which one is deployed is not known", w.Ref, len(where), strings.Join(where, ", "))})
		}
		g = policy.Governance{Skip: engine.CauseDuplicated, Why: fmt.Sprintf("defined %d times, so which one is deployed is not known", len(where))}
	case bad != "":
		// The manifest itself is in doubt: leave it alone, and say so.
		p.Problems = append(p.Problems, Problem{File: w.File, Line: w.Line, Message: bad, Cause: engine.CauseManifestInvalid})
		g = policy.Governance{Skip: engine.CauseManifestInvalid, Why: bad}
	case g.Skip == engine.CausePolicyConflict:
		// Nobody should resolve a conflict by guessing, and nobody
		// should miss that one is left unresolved.
		p.Problems = append(p.Problems, Problem{File: w.File, Line: w.Line, Message: fmt.Sprintf("%s is left alone: %s", w.Ref, g.Why),
			Cause: engine.CausePolicyConflict})
	}
	if cur.Form == engine.GPUMemory && g.Skip == "" && g.Strategy != nil && g.Strategy.GPUMemoryMiB > 0 {
		cur.GPUs = float64(cur.MiB) / float64(g.Strategy.GPUMemoryMiB)
	}
	return pending{w, g, cur}, true
}

// batch adds the workload of pw to the query of the workloads governed
// alike (groups finds it by queryKey), one query per such group, never
// one per workload (docs/design.md §2). A workload with nothing to measure gets
// none.
func (p *Plan) batch(at time.Time, pw pending, groups map[string]int, keys map[rulesRef]string) {
	g, cur := pw.g, pw.cur
	if g.Skip != "" || cur.Form == engine.NoGPU || cur.Form == engine.GPUMemory && cur.GPUs == 0 {
		return
	}
	r := rulesRef{g.Proactive, g.Reactive, unsafe.SliceData(g.Containers), len(g.Containers)}
	k, ok := keys[r]
	if !ok {
		k = queryKey(g)
		keys[r] = k
	}
	i, ok := groups[k]
	if !ok {
		q := usage.Query{At: at, Lookback: g.Lookback(), Metrics: map[usage.Metric]usage.Mapping{}, Containers: g.Containers}
		for m, mr := range g.Sources() {
			q.Metrics[m] = mr.Source
		}
		if p.clusters != nil && !p.wholeStore {
			q.ClusterLabel, q.ClusterValues = p.clusters.Spec.Label, p.clusters.Values()
		}
		i = len(p.Queries)
		groups[k] = i
		p.Queries = append(p.Queries, q)
	}
	q := &p.Queries[i]
	for _, ref := range p.queried(pw.w.Ref) {
		q.Workloads = append(q.Workloads, ref)
		if c := pw.w.Component; c != "" {
			if q.Components == nil {
				q.Components = make(map[usage.Ref]string)
			}
			q.Components[ref] = c
		}
		if t := pw.w.Template; t.Kind != "" {
			// A Rollout's referenced Deployment may still run pods of its
			// own (Argo scales it down as workloadRef.scaleDown says, by
			// default never), named as the Rollout's would be when both
			// share a name: queried beside it, those count for the
			// Deployment, a pod no owner series tells apart for neither,
			// never for the Rollout.
			t.Cluster = ref.Cluster
			if !slices.Contains(q.Workloads, t) {
				q.Workloads = append(q.Workloads, t)
			}
		}
	}
}

// Fetch is the second stage: it runs the batched queries. A failed query
// is a problem, not an error: its workloads get no change. The error is
// for a cancelled ctx.
func (p *Plan) Fetch(ctx context.Context, src UsageSource) error {
	// Sized for every workload asked about: grown from empty, the maps
	// of 10,000 workloads rehashed a dozen times.
	n := 0
	for _, q := range p.Queries {
		n += len(q.Workloads)
	}
	got := make(map[usage.Ref]usage.Workload, n)
	failed := map[usage.Ref]string{}
	for _, q := range p.Queries {
		res, err := src.Usage(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A usage error must never shrink anything: the workloads of
			// this query get no decision beyond "no change".
			p.problem(engine.CauseQueryFailed, fmt.Errorf("usage query for %d workload(s) failed: %w", len(q.Workloads), err))
			for _, r := range q.Workloads {
				failed[r] = err.Error()
			}
			continue
		}
		for _, warn := range res.Warnings {
			p.log.Warn("usage", "warning", warn)
		}
		for r, u := range res.Workloads {
			got[r] = u
		}
		// A pod that may be a workload's and counts for none is said in
		// that workload's decision (engine's Evidence), not only logged.
		for r, warns := range res.Unattributed {
			u := got[r]
			u.Unattributed = append(u.Unattributed, warns...)
			got[r] = u
		}
		// A workload the source could not answer for (a cluster whose
		// label value has no series) is a problem once per reason.
		whys := map[string]int{}
		for _, r := range slices.SortedFunc(maps.Keys(res.Failed), compareRefs) {
			failed[r] = res.Failed[r]
			whys[res.Failed[r]]++
		}
		for _, why := range slices.Sorted(maps.Keys(whys)) {
			p.problem(engine.CauseQueryFailed, fmt.Errorf("usage of %d workload(s) unavailable: %s", whys[why], why))
		}
	}
	p.usage = make(map[usage.Ref]usage.Workload, len(p.work))
	p.failed = map[usage.Ref]string{}
	for _, pw := range p.work {
		ref := pw.w.Ref
		u, why, ok := p.gather(ref, got, failed)
		switch {
		case why != "":
			p.failed[ref] = why
		case ok:
			p.usage[ref] = u
		}
	}
	p.sortProblems()
	return nil
}

// Decide is the third stage: one decision per governed workload.
func (p *Plan) Decide() {
	p.Decisions = slices.Grow(p.Decisions[:0], len(p.work))
	for _, pw := range p.work {
		d := Decision{Workload: pw.w, Policies: pw.g.Policies, Rules: pw.g.Rules, Usage: p.usage[pw.w.Ref], PullRequest: pw.g.PullRequest,
			Matcher: p.Matcher(pw.w.Ref)}
		switch why, failed := p.failed[pw.w.Ref]; {
		case pw.g.Skip != "":
			d.Decision = engine.LeftAlone(pw.cur, pw.g.Skip, pw.g.Why)
		case failed:
			d.Decision = engine.Unjudged(pw.cur, engine.CauseQueryFailed, why)
		default:
			d.Decision = engine.Decide(engine.Input{At: p.At, Current: pw.cur, Rules: pw.g.Rules, Usage: p.usage[pw.w.Ref]})
		}
		// Decided, the samples serve only a chart and a percentile, but an
		// urgent upsize of several clusters is decided again per cluster.
		switch {
		case p.dropUsage:
			d.Usage = usage.Workload{}
		case !d.Urgent || len(d.Workload.Ref.Clusters()) < 2:
			d.Usage = d.Usage.Release(d.Evidence.Longest(), d.Rules.ChartScale(d.Current.GPUs))
		}
		p.Decisions = append(p.Decisions, d)
	}
	slices.SortFunc(p.Decisions, func(a, b Decision) int {
		return cmp.Or(compareRefs(a.Workload.Ref, b.Workload.Ref), cmp.Compare(a.Workload.File, b.Workload.File))
	})
}

// Grouping says which decisions share a change set, and so a pull request.
type Grouping string

const (
	ByWorkload  Grouping = "workload"
	ByNamespace Grouping = "namespace"
	ByPolicy    Grouping = "policy"
	// ByCluster groups the workloads of each cluster of the repository's
	// ClusterMap.
	ByCluster Grouping = "cluster"
	// Joined is the grouping of change sets joined because their edits
	// write one file (Plan.ChangeSets); it is never asked for.
	Joined Grouping = "joined"
)

// ChangeSet is the edits of one pull request: applied together, alone, on
// a fresh copy of the base branch.
type ChangeSet struct {
	// Key names the change set: the workload, namespace, policies or
	// cluster it groups; for change sets joined because their edits
	// write one file, their keys.
	Key string
	// Grouping is how Key groups: ByWorkload, ByNamespace, ByPolicy,
	// ByCluster or Joined.
	Grouping  Grouping
	Decisions []Decision
	Edits     []patcher.Edit
	// Labels and Reviewers are those the governing strategies of the
	// decisions ask for (spec.gitops), sorted and without repeats.
	Labels, Reviewers []string
}

// ChangeSets is the publishing stage: the decisions that change something,
// grouped, with their edits. Nothing is applied: each change set is
// applied on its own (ChangeSet.Apply), so that one refused edit or one
// merged pull request does not touch the others.
//
// by groups every decision when set: the run's choice wins. When empty,
// each decision is grouped as its strategy's spec.gitops.grouping says,
// and by workload when that is not set either, so that a team's strategy
// can gather its workloads into one pull request without changing how
// another team's are proposed.
//
// Change sets whose edits write one file in the plan's preview are then
// joined into one: an edit of a shared base that every cluster building
// it agrees on, or two first patches of one overlay, which would
// conflict on its kustomization.yaml. So each change set, applied alone,
// writes exactly what the preview shows of its files, and the preview is
// the union of what the pull requests push. It needs Preview to have run.
func (p *Plan) ChangeSets(by Grouping) ([]ChangeSet, error) {
	switch by {
	case "", ByWorkload, ByNamespace, ByPolicy:
	case ByCluster:
		if !p.namesClusters() {
			return nil, fmt.Errorf("grouping by %s needs a ClusterMap in the repository", ByCluster)
		}
	default:
		return nil, fmt.Errorf("unknown grouping %q: use %s, %s, %s or %s", by, ByWorkload, ByNamespace, ByPolicy, ByCluster)
	}
	type setID struct {
		by  Grouping
		key string
	}
	var sets []ChangeSet
	index := map[setID]int{}
	for _, d := range p.Decisions {
		e, ok := editFor(d)
		if !ok {
			continue
		}
		g := cmp.Or(by, Grouping(d.PullRequest.Grouping), ByWorkload)
		var key string
		switch {
		case g == ByNamespace:
			key = d.Workload.Ref.Namespace
		case g == ByPolicy:
			names := make([]string, len(d.Policies))
			for i, m := range d.Policies {
				names[i] = m.String()
			}
			key = strings.Join(names, " + ")
		case g == ByCluster && p.namesClusters():
			key = d.Workload.Ref.Cluster
		default:
			// Policies are validated: nothing else reaches here but a
			// strategy's cluster grouping in a repository without a map.
			g, key = ByWorkload, d.Workload.Ref.String()
		}
		id := setID{g, key}
		i, ok := index[id]
		if !ok {
			i = len(sets)
			index[id] = i
			sets = append(sets, ChangeSet{Key: key, Grouping: g})
		}
		cs := &sets[i]
		cs.Decisions = append(cs.Decisions, d)
		cs.Edits = append(cs.Edits, e)
		cs.Labels = Union(cs.Labels, d.PullRequest.Labels)
		cs.Reviewers = Union(cs.Reviewers, d.PullRequest.Reviewers)
	}
	sets = p.joinSharedFiles(sets)
	slices.SortFunc(sets, func(a, b ChangeSet) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Grouping, b.Grouping))
	})
	return sets, nil
}

// Union is the names of a and b, sorted, without repeats or empty names;
// nil when there are none. Pull requests' labels and reviewers are sets:
// their order must not make two equal changes differ.
func Union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, s := range slices.Concat(a, b) {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Apply applies the change set's edits to the checkout at root, which must
// hold the same files the plan read (e.g. a fresh copy of the base
// branch). It writes nothing: its caller writes or commits the files.
func (cs ChangeSet) Apply(ctx context.Context, root string, inv *patcher.Inventory) (*patcher.Result, error) {
	return patcher.Apply(ctx, root, inv, cs.Edits)
}

// Inventory is the workloads the plan discovered, with default namespaces
// filled in, for ChangeSet.Apply on a copy of the same checkout.
func (p *Plan) Inventory() *patcher.Inventory { return p.inv }

// Preview applies every change to one copy of the checkout, in memory, so
// that the plan shows each file's diff once however many workloads it
// holds. Refused edits turn their decisions into no change.
func (p *Plan) Preview(ctx context.Context) error {
	var edits []patcher.Edit
	for _, d := range p.Decisions {
		if e, ok := editFor(d); ok {
			edits = append(edits, e)
		}
	}
	// What discovery held of the files no edit changes would be kept
	// beside the edits' work: at 10,000 Deployments, one in ten edited,
	// a fifth of the heap.
	p.inv.Keep(edits)
	if len(edits) > 0 {
		res, err := patcher.Apply(ctx, p.repo, p.inv, edits)
		if err != nil {
			return err
		}
		p.Files = res.Files
		for _, r := range res.Refused {
			p.refuse(r)
		}
		for _, n := range res.Notes {
			p.note(n)
		}
	}
	p.sortProblems()
	return nil
}

// WriteFiles writes the changed files of the plan (Files) into repo, the
// checkout it read, all or nothing: every file is checked before any is
// replaced, since an edit can span files (a Kustomize patch and its
// kustomization) and half of one must never be left on disk. errs holds
// one entry per file; written says whether any was replaced
// (patcher.WriteAll).
func (p *Plan) WriteFiles(repo string) (errs []error, written bool) {
	return patcher.WriteAll(repo, p.Files)
}

// sortProblems orders the problems by where they are, so that equal
// inputs print equal plans.
func (p *Plan) sortProblems() {
	slices.SortFunc(p.Problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
}

// reported says whether a discovery problem is a file the reader could
// not read that policy loading already reported, with what it means for
// governance: once is enough.
func reported(pr patcher.Problem, set *policy.Set) bool {
	for _, e := range set.Errors {
		var le *located.Error
		if errors.As(e, &le) && le.File == pr.File && errors.Is(e, pr.Err) {
			return true
		}
	}
	return false
}

// unsupported gives a row to every object the tool does not size that
// asks for GPUs, or that a policy selects: never a silent drop.
func (p *Plan) unsupported(set *policy.Set, ns string) {
	for _, u := range p.inv.Unsupported {
		u.Ref.Namespace = cmp.Or(u.Ref.Namespace, ns)
		if p.clusters != nil {
			u.Ref.Cluster = strings.Join(p.clusters.Clusters(u.File), usage.ClusterSep)
		}
		p.admit(u.Ref, u.Labels)
		if p.Excludes(u.Ref.String()) {
			continue
		}
		g := set.Govern(policy.Target{Ref: u.Ref, Labels: u.Labels})
		if !u.GPU && g.Skip != "" {
			continue
		}
		var about []string
		if u.GPU {
			about = append(about, "it asks for GPUs")
		}
		if g.Skip == "" {
			about = append(about, "a policy selects it")
		}
		why := fmt.Sprintf("kind %s (%s) is not sized (%s are); %s", u.Ref.Kind, u.APIVersion, sizedKinds(), strings.Join(about, ", and "))
		if u.Why != "" {
			why = fmt.Sprintf("kind %s (%s) is sized, but %s; %s", u.Ref.Kind, u.APIVersion, u.Why, strings.Join(about, ", and "))
		}
		p.work = append(p.work, pending{
			w: patcher.Workload{Ref: u.Ref, File: u.File, Line: u.Line, Labels: u.Labels},
			g: policy.Governance{Skip: engine.CauseUnsupported, Why: why, Policies: g.Policies},
		})
	}
}

// sizedKinds lists the kinds the editor sizes, for a reason.
func sizedKinds() string {
	ks := patcher.Kinds()
	return strings.Join(ks[:len(ks)-1], ", ") + " and " + ks[len(ks)-1]
}

// withNamespaces returns the inventory with the default namespace filled
// in, so that the editor finds workloads by the refs the decisions use.
func withNamespaces(inv *patcher.Inventory, ns string) *patcher.Inventory {
	c := *inv
	c.Workloads = slices.Clone(inv.Workloads)
	for i := range c.Workloads {
		w := &c.Workloads[i]
		if w.Ref.Namespace == "" {
			w.Ref.Namespace = ns
		}
		if w.Template.Kind != "" && w.Template.Namespace == "" {
			w.Template.Namespace = ns
		}
	}
	return &c
}

// refuse records a refused edit: nothing changes for its workload, whose
// decision says what it wanted and why it could not be written.
func (p *Plan) refuse(r patcher.Refusal) {
	for i := range p.Decisions {
		d := &p.Decisions[i]
		if d.Workload.Ref.Local() == r.Workload && d.Workload.File == r.File {
			d.Decision = d.Refused(r.Err.Error())
		}
	}
	ref := r.Workload
	if i := slices.IndexFunc(p.Decisions, func(d Decision) bool { return d.Workload.Ref.Local() == r.Workload && d.Workload.File == r.File }); i >= 0 {
		ref = p.Decisions[i].Workload.Ref
	}
	p.Problems = append(p.Problems, Problem{File: r.File, Message: fmt.Sprintf("edit of %s refused: %v", ref, r.Err),
		Cause: engine.CauseEditRefused})
}

// note adds to a decision what its edit left alone on purpose, e.g. a vLLM
// flag that --kv-cache-memory-bytes makes moot: the reviewer must know.
func (p *Plan) note(n patcher.Note) {
	for i := range p.Decisions {
		d := &p.Decisions[i]
		if d.Workload.Ref.Local() == n.Workload && d.Workload.File == n.File {
			d.Decision = d.Note(n.Field, n.Err.Error())
		}
	}
}

// problem records err as a problem of kind c, at the place it names.
func (p *Plan) problem(c engine.Cause, err error) {
	var le *located.Error
	if errors.As(err, &le) && le.Err != nil {
		p.Problems = append(p.Problems, Problem{File: le.File, Line: le.Line, Column: le.Column, Field: le.Field, Message: le.Err.Error(), Cause: c})
		return
	}
	p.Problems = append(p.Problems, Problem{Message: err.Error(), Cause: c})
}

// nearest is where a discovery problem is, as precisely as known: the
// place its cause names, when it names one (a chart's file a release
// could not read), else the problem's own file and line.
func nearest(pr patcher.Problem) error {
	var le *located.Error
	if errors.As(pr.Err, &le) && le.Err != nil {
		return le
	}
	return pr
}

// allocation reads a workload's GPU request the way KAI does. bad says why
// the request cannot be worked with, when it cannot.
func allocation(g patcher.GPU) (a engine.Allocation, bad string) {
	switch {
	case g.Err != nil:
		return engine.Allocation{Form: engine.NoGPU}, fmt.Sprintf("its GPU request cannot be edited: %v", g.Err)
	case len(g.WholeContainers) > 1:
		return engine.Allocation{Form: engine.WholeGPUs, GPUs: float64(g.Whole)},
			fmt.Sprintf("nvidia.com/gpu is requested by several containers (%s): a fraction reaches one only", strings.Join(g.WholeContainers, ", "))
	case g.FractionErr != nil:
		// An annotation KAI would not read as written: taking it for no
		// request would hide it.
		return engine.Allocation{Form: engine.NoGPU}, g.FractionErr.Error()
	case g.MemoryMiB > 0:
		// GPUs is set once the governing strategy says the GPU's memory.
		return engine.Allocation{Form: engine.GPUMemory, MiB: g.MemoryMiB}, ""
	case g.Fraction > 0 && g.NumDevices > 1:
		// The request is N × the fraction; deciding on the fraction alone
		// would misread usage by a factor of N.
		return engine.Allocation{Form: engine.Fraction, GPUs: g.Fraction},
			fmt.Sprintf("gpu-fraction-num-devices %d: fractions over several devices are not supported yet", g.NumDevices)
	case g.Fraction > 0:
		return engine.Allocation{Form: engine.Fraction, GPUs: g.Fraction}, ""
	case g.Whole > 0:
		return engine.Allocation{Form: engine.WholeGPUs, GPUs: float64(g.Whole)}, ""
	}
	return engine.Allocation{Form: engine.NoGPU}, ""
}

// rulesRef finds a query key by the rules and containers it was made of,
// which the workloads of one pair of policies share (policy.Set).
type rulesRef struct {
	p          *engine.ProactiveRules
	r          *engine.ReactiveRules
	containers *string
	n          int
}

// queryKey identifies how a governance reads usage: workloads with equal
// keys share one query.
func queryKey(g policy.Governance) string {
	var b strings.Builder
	// Sources makes a map each call: once, not once a metric.
	src := g.Sources()
	for _, m := range usage.Metrics {
		if mr := src[m]; mr != nil {
			fmt.Fprintf(&b, "%s=%+v;", m, mr.Source)
		}
	}
	fmt.Fprintf(&b, "containers=%q;lookback=%s", g.Containers, g.Lookback())
	return b.String()
}

// editFor turns a decision into the edit of its workload's manifest.
func editFor(d Decision) (patcher.Edit, bool) {
	if !d.Action.Changes() {
		return patcher.Edit{}, false
	}
	st := d.Rules.Strategy
	w, rec := d.Workload, d.Recommended
	// The editor knows workloads as the manifests name them, without a
	// cluster: the file tells one cluster's definition from another's.
	e := patcher.Edit{Workload: w.Ref.Local(), File: w.File, Reason: d.Reason()}
	switch rec.Form {
	case engine.Fraction:
		e.Ops = append(e.Ops, patcher.SetGPUFraction(kai.FormatFraction(rec.GPUs)))
		if d.Current.Form == engine.WholeGPUs {
			e.Ops = append(e.Ops, patcher.RemoveWholeGPUs())
		}
		if st.MoveToKAI && w.SchedulerName != kai.SchedulerName {
			e.Ops = append(e.Ops, patcher.SetSchedulerName(kai.SchedulerName))
		}
		switch {
		case w.Queue == "":
			e.Ops = append(e.Ops, patcher.SetPodLabel(kai.QueueLabel, st.Queue))
		case st.SetQueueWhenSpecified && w.Queue != st.Queue:
			// KAI reads the workload's own label before the template's:
			// change it wherever it is set.
			if _, ok := w.Labels[kai.QueueLabel]; ok {
				e.Ops = append(e.Ops, patcher.SetWorkloadLabel(kai.QueueLabel, st.Queue))
			}
			if _, ok := w.PodLabels[kai.QueueLabel]; ok {
				e.Ops = append(e.Ops, patcher.SetPodLabel(kai.QueueLabel, st.Queue))
			}
		}
	case engine.GPUMemory:
		e.Ops = append(e.Ops, patcher.SetGPUMemory(rec.MiB))
	case engine.WholeGPUs:
		if d.Current.Form == engine.Fraction {
			e.Ops = append(e.Ops, patcher.RemovePodAnnotation(kai.FractionAnnotation))
		}
		e.Ops = append(e.Ops, patcher.SetWholeGPUs(int64(rec.GPUs)))
	}
	if v, ok := VLLMUtilization(d); ok {
		e.Ops = append(e.Ops, patcher.SetVLLMMemoryUtilization(v))
	}
	return e, true
}

// VLLMUtilization is the --gpu-memory-utilization that leaves the
// strategy's buffer of the new allocation unused (docs/design.md §5), when the
// decision's edit sets one. vLLM measures against the memory it sees: the
// whole GPU without HAMi-core, its share with it.
func VLLMUtilization(d Decision) (string, bool) {
	st := d.Rules.Strategy
	// Only the container the GPU goes to is sized by the fraction.
	gpu := d.Workload.GPU.Container
	if st == nil || st.VLLMBufferPercent < 0 || !slices.ContainsFunc(d.Workload.Containers, func(c patcher.Container) bool { return c.VLLM && c.Name == gpu }) {
		return "", false
	}
	keep := 1 - float64(st.VLLMBufferPercent)/100
	share := d.Recommended.GPUs
	if st.HAMiCore || d.Recommended.Form == engine.WholeGPUs {
		share = 1
	}
	// Round down: a utilization above the share would let vLLM take memory
	// its neighbours were promised.
	return kai.FormatFraction(kai.FloorFraction(share * keep)), true
}
