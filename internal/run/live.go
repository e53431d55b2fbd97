package run

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
)

// Live are a run's settings of the live fast path (docs/design.md §7,
// docs/live.md).
type Live struct {
	Enabled bool
	// MaxChanges caps the live changes of a run.
	MaxChanges int
	// Namespaces are the only namespaces changed live.
	Namespaces []string
	// Force takes a field another field manager owns.
	Force bool
	// RevertClosed reverts a live change when its pull request is
	// closed unmerged.
	RevertClosed bool
	// Kubeconfig is the cluster's kubeconfig file; "" is found as
	// kubectl finds one (cluster.Config). The run's Event goes there too.
	Kubeconfig string
	// Contexts are `--live-context cluster=context`: the context of
	// Kubeconfig that reaches each cluster of the repository's
	// ClusterMap. Without one, a mapped cluster gets no live change.
	Contexts []string
}

// Check checks the settings, each mistake a *config.FlagError.
func (l *Live) Check() error {
	if l.MaxChanges < 0 {
		return config.FlagErrorf("`--live-max-changes` must be 0 or more, got %d", l.MaxChanges)
	}
	if len(l.Namespaces) > 0 {
		if err := live.CheckNamespaces(l.Namespaces); err != nil {
			return config.FlagErrorf("`--live-namespaces`: %v", err)
		}
	}
	if _, err := parseContexts(l.Contexts); err != nil {
		return err
	}
	if !l.Enabled {
		return nil
	}
	if len(l.Namespaces) == 0 {
		return config.FlagErrorf("`--live` needs `--live-namespaces`: the namespaces whose workloads may be changed live")
	}
	return nil
}

// liveStage is one run's live fast path (the step after publishing):
// which urgent upsizes of the plan go live, with which bounds and pull
// request; the reconcile of earlier live changes against Git's values;
// and what a run prints of it. The cluster work is package live's. It is
// nil when live mode is off, and then every method does nothing.
type liveStage struct {
	o Live
	// conns reach the clusters, by name: "" is the one cluster of a run
	// without a ClusterMap.
	conns map[string]*liveConn
	p     *plan.Plan
	// warnings are by workload ref, for the pull requests and the output.
	warnings map[string][]string
	// targets are the urgent upsizes the policies let go live.
	targets []target
	// results are what Finish did, for the run's summary line, and
	// clusters the cluster of each.
	results  []live.Result
	clusters []string
}

type target struct {
	// cluster is the one cluster the change goes to.
	cluster string
	d       plan.Decision
	t       live.Target
	// refused, when not "", is why the fast path does not apply d: it is
	// reported, not applied.
	refused string
}

// prepareLive starts the live stage: it connects to the clusters (each
// by its context; only is `--cluster`) and reads, for every upsize of
// the plan, its KAI queue, before anything is published, so that a
// warning reaches the pull request's body. It is nil
// when live mode is off.
func prepareLive(ctx context.Context, p *plan.Plan, o Live, only []string, dryRun bool, now func() time.Time) (*liveStage, error) {
	if !o.Enabled {
		return nil, nil
	}
	lr := &liveStage{o: o, p: p, warnings: map[string][]string{}, conns: map[string]*liveConn{}}
	opts := live.Options{Namespaces: o.Namespaces, MaxChanges: o.MaxChanges, Force: o.Force,
		RevertClosed: o.RevertClosed, DryRun: dryRun, Now: now}
	if err := lr.connect(p, only, opts); err != nil {
		return nil, err
	}
	for _, d := range p.Decisions {
		ref := d.Workload.Ref
		apply, refused := liveUpsize(d, o.Namespaces)
		if refused != "" {
			lr.targets = append(lr.targets, target{cluster: ref.Cluster, d: d, refused: refused})
			continue
		}
		if d.Action != engine.Upsize || !liveKind(ref.Kind) || !slices.Contains(o.Namespaces, ref.Namespace) {
			continue
		}
		if d.Recommended.Form == engine.Fraction {
			lr.checkQueues(ctx, d)
		}
		if apply {
			lr.targets = append(lr.targets, lr.targetsOf(d, p.At)...)
		}
	}
	return lr, nil
}

// checkQueues reads the KAI queue of an upsize in each cluster it runs
// in that the run reaches.
func (lr *liveStage) checkQueues(ctx context.Context, d plan.Decision) {
	ref := d.Workload.Ref
	cs := ref.Clusters()
	if len(cs) == 0 {
		cs = []string{""}
	}
	for _, c := range cs {
		conn := lr.conns[c]
		if conn == nil {
			continue
		}
		prefix := ""
		if len(cs) > 1 {
			prefix = "cluster " + c + ": "
		}
		q, err := conn.client.CheckQueue(ctx, ref.Kind, ref.Namespace, ref.Name, d.Recommended.GPUs, lr.o.Namespaces)
		if err != nil {
			lr.warnings[ref.String()] = append(lr.warnings[ref.String()], prefix+err.Error())
		} else if w := q.Warning(); w != "" {
			lr.warnings[ref.String()] = append(lr.warnings[ref.String()], prefix+w)
		}
	}
}

// liveUpsize says what the live stage does with one decision: apply when
// it applies it (an urgent upsize of a kind whose pod templates the fast
// path owns by server-side apply, in one of namespaces, whose strategy
// sets liveUpsize); refused, when the rules would send it live but the
// fast path does not handle its kind. Such an upsize is refused by name,
// never skipped in silence: whoever set liveUpsize expects it live, and
// must learn that it waits for its pull request. Whether the kind's
// controller would roll the pods (a StatefulSet under OnDelete would
// not, nor KServe a stopped InferenceService) is read from the live
// object by package live, which refuses it by name too.
func liveUpsize(d plan.Decision, namespaces []string) (apply bool, refused string) {
	ref := d.Workload.Ref
	if d.Action != engine.Upsize || !d.Urgent || d.Rules.Strategy == nil || !d.Rules.Strategy.LiveUpsize ||
		!slices.Contains(namespaces, ref.Namespace) {
		return false, ""
	}
	if !liveKind(ref.Kind) {
		return false, fmt.Sprintf("the live fast path applies Deployments, StatefulSets, Rollouts, LeaderWorkerSets, InferenceServices and DynamoGraphDeployments' services only; %s %s/%s waits for its pull request", ref.Kind, ref.Namespace, ref.Name)
	}
	if t := d.Workload.Template; t.Kind != "" {
		// The repository says so already; package live refuses it from
		// the live object too, should the two differ.
		return false, fmt.Sprintf("%s %s/%s runs the pod template of %s %s (spec.workloadRef), not its own: the live fast path refuses it; it waits for its pull request",
			ref.Kind, ref.Namespace, ref.Name, t.Kind, t.Name)
	}
	return true, ""
}

// liveKind reports whether package live applies kind.
func liveKind(kind string) bool {
	switch kind {
	case "Deployment", "StatefulSet", "Rollout", "LeaderWorkerSet", "InferenceService", "DynamoGraphDeployment":
		return true
	}
	return false
}

// Warnings are the warnings for the pull requests' bodies, by workload.
func (lr *liveStage) Warnings() map[string][]string {
	if lr == nil {
		return nil
	}
	return lr.warnings
}

// targetOf is the live change of an urgent upsize: Git's values and the
// recommended ones, with the rules' bounds.
func targetOf(d plan.Decision) live.Target {
	ref := d.Workload.Ref
	t := live.Target{Namespace: ref.Namespace, Name: ref.Name, Kind: ref.Kind, Reason: d.Reason()}
	if d.Current.Form == engine.Fraction {
		t.Fraction.Old = d.Workload.GPU.FractionText
	}
	if d.Recommended.Form == engine.Fraction {
		t.Fraction.New = kai.FormatFraction(d.Recommended.GPUs)
	}
	t.Ceiling, t.MaxPercent = liveBounds(d.Rules)

	if v, ok := plan.VLLMUtilization(d); ok {
		for _, c := range d.Workload.Containers {
			if c.Name == d.Workload.GPU.Container && c.GPUMemoryUtilization != v {
				t.VLLM = &live.VLLMValues{Container: c.Name, Values: live.Values{Old: c.GPUMemoryUtilization, New: v}}
			}
		}
	}
	return t
}

// liveBounds are the bounds the live path checks again, as the engine
// applied them: the strategy's ceiling (the policy default when unset),
// and the step limit, the tightest maxPercent of the reactive metrics that
// have one (the engine's default when none does). The largest would let
// a live change past the rule that limits the step.
func liveBounds(r engine.Rules) (ceiling float64, maxPercent int) {
	ceiling = engine.DefaultCeiling
	if r.Strategy != nil && r.Strategy.Ceiling > 0 {
		ceiling = r.Strategy.Ceiling
	}
	if r.Reactive != nil {
		for _, m := range r.Reactive.Metrics {
			if m.Upsize != nil && m.Upsize.MaxPercent > 0 && (maxPercent == 0 || m.Upsize.MaxPercent < maxPercent) {
				maxPercent = m.Upsize.MaxPercent
			}
		}
	}
	if maxPercent == 0 {
		maxPercent = engine.DefaultMaxPercent
	}
	return ceiling, maxPercent
}

// Finish runs after publishing: first the reconcile of earlier live
// changes, then the new ones, each carried by the pull request just
// opened or updated for it. A change set whose pull request is not open
// (failed, capped, declined) makes no live change: every live change has
// a pull request that brings Git to it. It prints what it did, and
// reports whether anything failed.
func (lr *liveStage) Finish(ctx context.Context, forge live.PullRequests, rep *publish.Report, grouping plan.Grouping, w io.Writer) (failed bool, err error) {
	if lr == nil {
		return false, nil
	}
	for _, c := range slices.Sorted(maps.Keys(lr.conns)) {
		results, err := lr.conns[c].applier.Reconcile(ctx, forge, lr.gitValues(c))
		if err != nil {
			return false, err
		}
		lr.add(c, results...)
	}
	sets, err := lr.p.ChangeSets(grouping)
	if err != nil {
		return false, err
	}
	setOf := map[string]string{}
	for _, cs := range sets {
		for _, d := range cs.Decisions {
			setOf[d.Workload.Ref.String()] = cs.Key
		}
	}
	applied := 0
	for _, tg := range lr.targets {
		if tg.refused != "" {
			ref := tg.d.Workload.Ref
			lr.add(tg.cluster, live.Result{Namespace: ref.Namespace, Name: ref.Name, Outcome: live.Refused, Detail: tg.refused})
			continue
		}
		t := tg.t
		ref := tg.d.Workload.Ref.String()
		i := slices.IndexFunc(rep.Results, func(r publish.Result) bool { return r.Key == setOf[ref] })
		var pr publish.Result
		if i >= 0 {
			pr = rep.Results[i]
		}
		switch {
		case pr.Number > 0 && slices.Contains([]publish.Outcome{publish.Opened, publish.Updated, publish.Unchanged}, pr.Outcome):
			t.PullRequest, t.Number, t.Branch = pr.URL, pr.Number, pr.Branch
		case rep.DryRun && pr.Outcome == publish.Opened:
			t.Branch = pr.Branch
		default:
			lr.add(tg.cluster, live.Result{Namespace: t.Namespace, Name: t.Name, Outcome: live.Refused,
				Detail: fmt.Sprintf("its pull request is not open (%s%s): no live change without one", orNone(string(pr.Outcome)), detail(pr.Detail))})
			continue
		}
		if applied >= lr.o.MaxChanges {
			// Each cluster's applier counts its own changes; the cap is
			// the run's.
			lr.add(tg.cluster, live.Result{Namespace: t.Namespace, Name: t.Name, Outcome: live.Capped,
				Detail: fmt.Sprintf("at the cap of %d live changes per run", lr.o.MaxChanges)})
			continue
		}
		res, err := lr.conns[tg.cluster].applier.Apply(ctx, t)
		if err != nil {
			return false, err
		}
		if res.Outcome == live.Applied || res.Outcome == live.WouldApply {
			applied++
		}
		lr.add(tg.cluster, res)
	}
	for _, r := range lr.results {
		failed = failed || r.Outcome == live.Failed
	}
	return failed, lr.write(w)
}

func (lr *liveStage) add(cluster string, rs ...live.Result) {
	for _, r := range rs {
		lr.results = append(lr.results, r)
		lr.clusters = append(lr.clusters, cluster)
	}
}

// Summary counts what Finish did by outcome, for the run's summary line;
// nil when live mode is off.
func (lr *liveStage) Summary() []any {
	if lr == nil {
		return nil
	}
	n := map[live.Outcome]int{}
	for _, r := range lr.results {
		n[r.Outcome]++
	}
	var counts []any
	for _, o := range slices.Sorted(maps.Keys(n)) {
		counts = append(counts, string(o), n[o])
	}
	return counts
}

// Clusters are the cluster of each of Results, "" where the repository
// maps none; nil when live mode is off.
func (lr *liveStage) Clusters() []string {
	if lr == nil {
		return nil
	}
	return lr.clusters
}

// Results are what Finish did, for the run's summary; nil when live mode
// is off.
func (lr *liveStage) Results() []live.Result {
	if lr == nil {
		return nil
	}
	return lr.results
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func detail(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// write prints one row per live change or marker, then the warnings.
func (lr *liveStage) write(w io.Writer) error {
	results := lr.results
	fmt.Fprintln(w)
	if len(results) == 0 {
		fmt.Fprintln(w, "live: no urgent upsize to apply and no live change to reconcile")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LIVE WORKLOAD\tOUTCOME\tCHANGE\tDETAIL")
		for i, r := range results {
			fields := strings.Join(r.Fields, ", ")
			if fields == "" {
				fields = "-"
			}
			fmt.Fprintf(tw, "%s%s/%s\t%s\t%s\t%s\n", clusterPrefix(lr.clusters[i]), plan.Printable(r.Namespace), plan.Printable(r.Name), r.Outcome,
				plan.Printable(fields), plan.Printable(r.Detail))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var lines []string
	for ref, ws := range lr.warnings {
		// A ref is namespace/Kind/name; live results say namespace/name.
		ns, rest, _ := strings.Cut(ref, "/")
		_, name, _ := strings.Cut(rest, "/")
		for _, x := range ws {
			lines = append(lines, fmt.Sprintf("warning: %s/%s: %s", ns, name, x))
		}
	}
	for i, r := range results {
		for _, x := range r.Warnings {
			lines = append(lines, fmt.Sprintf("warning: %s%s/%s: %s", clusterPrefix(lr.clusters[i]), r.Namespace, r.Name, x))
		}
	}
	slices.Sort(lines)
	for _, l := range slices.Compact(lines) {
		if _, err := fmt.Fprintln(w, plan.Printable(l)); err != nil {
			return err
		}
	}
	return nil
}
