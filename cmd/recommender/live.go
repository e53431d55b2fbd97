package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
)

// liveFlags are run's settings of the live fast path (DESIGN §7, docs/live.md).
type liveFlags struct {
	Enabled      bool
	MaxChanges   int
	Namespaces   []string
	Force        bool
	RevertClosed bool
	Kubeconfig   string
}

func (l *liveFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&l.Enabled, "live", false, "apply urgent upsizes to the live Deployments at once, where the policy sets gitops.liveUpsize (docs/live.md)")
	fs.IntVar(&l.MaxChanges, "live-max-changes", 3, "make at most this many live changes per run")
	fs.StringArrayVar(&l.Namespaces, "live-namespaces", nil, "change live only Deployments in this `namespace` (repeatable; required with --live)")
	fs.BoolVar(&l.Force, "live-force-conflicts", false, "take a field another field manager owns (server-side apply's force) instead of reporting the conflict")
	fs.BoolVar(&l.RevertClosed, "live-revert-closed", false, "revert a live change to Git's value when its pull request is closed unmerged")
	fs.StringVar(&l.Kubeconfig, "kubeconfig", "", "reach the cluster with this kubeconfig `file` (default: the pod's service account)")
}

func (l *liveFlags) check() error {
	if !l.Enabled {
		return nil
	}
	if len(l.Namespaces) == 0 {
		return flagErrorf("`--live` needs `--live-namespaces`: the namespaces whose Deployments may be changed live")
	}
	if err := live.CheckNamespaces(l.Namespaces); err != nil {
		return flagErrorf("`--live-namespaces`: %v", err)
	}
	if l.MaxChanges < 0 {
		return flagErrorf("`--live-max-changes` must be 0 or more, got %d", l.MaxChanges)
	}
	return nil
}

// liveRun is one run's live fast path: nil when --live is off, and then
// every method does nothing.
type liveRun struct {
	flags   *liveFlags
	client  *live.Client
	applier *live.Applier
	p       *plan.Plan
	// warnings are by workload ref, for the pull requests and the output.
	warnings map[string][]string
	// targets are the urgent upsizes the policies let go live.
	targets []liveTarget
	// results are what finish did, for the run's summary line.
	results []live.Result
}

type liveTarget struct {
	d plan.Decision
	t live.Target
}

// prepareLive connects to the cluster and reads, for every upsize of the
// plan, its KAI queue, before anything is published, so that a warning
// reaches the pull request's body.
func (l *liveFlags) prepare(ctx context.Context, p *plan.Plan, dryRun bool, now func() time.Time) (*liveRun, error) {
	if !l.Enabled {
		return nil, nil
	}
	cfg, err := live.RESTConfig(l.Kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := live.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	lr := &liveRun{flags: l, client: c, p: p, warnings: map[string][]string{},
		applier: live.NewApplier(c, live.Options{Namespaces: l.Namespaces, MaxChanges: l.MaxChanges, Force: l.Force,
			RevertClosed: l.RevertClosed, DryRun: dryRun, Now: now})}
	for _, d := range p.Decisions {
		if d.Action != engine.Upsize || d.Workload.Ref.Kind != "Deployment" || !slices.Contains(l.Namespaces, d.Workload.Ref.Namespace) {
			continue
		}
		ref := d.Workload.Ref.String()
		if d.Recommended.Form == engine.Fraction {
			q, err := c.CheckQueue(ctx, d.Workload.Ref.Namespace, d.Workload.Ref.Name, d.Recommended.GPUs, l.Namespaces)
			if err != nil {
				lr.warnings[ref] = append(lr.warnings[ref], err.Error())
			} else if w := q.Warning(); w != "" {
				lr.warnings[ref] = append(lr.warnings[ref], w)
			}
		}
		if d.Urgent && d.Rules.Strategy != nil && d.Rules.Strategy.LiveUpsize {
			lr.targets = append(lr.targets, liveTarget{d: d, t: targetOf(d)})
		}
	}
	return lr, nil
}

// publishWarnings are the warnings for the pull requests' bodies.
func (lr *liveRun) publishWarnings() map[string][]string {
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

// finish runs after publishing: first the reconcile of earlier live
// changes, then the new ones, each carried by the pull request just
// opened or updated for it. A change set whose pull request is not open
// (failed, capped, declined) makes no live change: every live change has
// a pull request that brings Git to it. It prints what it did, and
// reports whether anything failed.
func (lr *liveRun) finish(ctx context.Context, forge publish.Forge, rep *publish.Report, grouping plan.Grouping, w io.Writer) (failed bool, err error) {
	if lr == nil {
		return false, nil
	}
	git := map[string]live.GitValues{}
	for _, d := range lr.p.Decisions {
		g := live.GitValues{Fraction: d.Workload.GPU.FractionText, VLLM: map[string]string{}}
		for _, c := range d.Workload.Containers {
			g.VLLM[c.Name] = c.GPUMemoryUtilization
		}
		git[d.Workload.Ref.Namespace+"/"+d.Workload.Ref.Name] = g
	}
	results, err := lr.applier.Reconcile(ctx, forge, func(ns, name string) (live.GitValues, bool) {
		g, ok := git[ns+"/"+name]
		return g, ok
	})
	if err != nil {
		return false, err
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
	for _, tg := range lr.targets {
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
			results = append(results, live.Result{Namespace: t.Namespace, Name: t.Name, Outcome: live.Refused,
				Detail: fmt.Sprintf("its pull request is not open (%s%s): no live change without one", orNone(string(pr.Outcome)), detail(pr.Detail))})
			continue
		}
		res, err := lr.applier.Apply(ctx, t)
		if err != nil {
			return false, err
		}
		results = append(results, res)
	}
	lr.results = results
	for _, r := range results {
		failed = failed || r.Outcome == live.Failed
	}
	return failed, lr.write(w, results)
}

// summary counts what finish did by outcome, for the run's summary line;
// nil when live mode is off.
func (lr *liveRun) summary() []any {
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
func (lr *liveRun) write(w io.Writer, results []live.Result) error {
	fmt.Fprintln(w)
	if len(results) == 0 {
		fmt.Fprintln(w, "live: no urgent upsize to apply and no live change to reconcile")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LIVE DEPLOYMENT\tOUTCOME\tCHANGE\tDETAIL")
		for _, r := range results {
			fields := strings.Join(r.Fields, ", ")
			if fields == "" {
				fields = "-"
			}
			fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\n", plan.Printable(r.Namespace), plan.Printable(r.Name), r.Outcome,
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
	for _, r := range results {
		for _, x := range r.Warnings {
			lines = append(lines, fmt.Sprintf("warning: %s/%s: %s", r.Namespace, r.Name, x))
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
