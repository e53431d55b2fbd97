package run

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// The live fast path of a fleet (docs/clusters.md): one kubeconfig holds
// a context per cluster of the ClusterMap, and an urgent upsize goes only
// to the clusters whose own pods asked for it, each through its context.

// liveConn is the live path's connection to one cluster.
type liveConn struct {
	client  *live.Client
	applier *live.Applier
}

// parseContexts reads `--live-context cluster=context` entries into a
// map, each mistake a *config.FlagError.
func parseContexts(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		name, ctx, ok := strings.Cut(e, "=")
		name, ctx = strings.TrimSpace(name), strings.TrimSpace(ctx)
		switch {
		case !ok || name == "" || ctx == "":
			return nil, config.FlagErrorf("`--live-context` %q: want CLUSTER=CONTEXT, a cluster of the ClusterMap and a context of the kubeconfig", e)
		case out[name] != "":
			return nil, config.FlagErrorf("`--live-context` names cluster %s twice", name)
		}
		if err := plan.CheckClusters([]string{name}); err != nil {
			return nil, config.FlagErrorf("`--live-context` %q: %v", e, err)
		}
		out[name] = ctx
	}
	return out, nil
}

// checkClusters checks the contexts against the clusters a run is
// limited to (`--cluster`). A job of one cluster may go without a context:
// its kubeconfig's current one is that cluster's (one job per cluster).
// A job of several needs a context for each, or it could not tell which
// cluster its kubeconfig reaches.
func (l *Live) checkClusters(only []string) error {
	if !l.Enabled {
		return nil
	}
	contexts, err := parseContexts(l.Contexts)
	if err != nil {
		return err
	}
	if len(contexts) == 0 && len(only) < 2 {
		return nil
	}
	var missing []string
	for _, c := range only {
		if contexts[c] == "" {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return config.FlagErrorf("`--live` over clusters %s needs a `--live-context` for %s: CLUSTER=CONTEXT of the kubeconfig",
			strings.Join(only, ", "), strings.Join(missing, ", "))
	}
	return nil
}

// CheckContexts checks that the kubeconfig holds every context of
// `--live-context` (config validate --check-files): a context missing
// there would stop a run only when it reached the live stage.
func (l *Live) CheckContexts() error {
	contexts, err := parseContexts(l.Contexts)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(contexts)) {
		if _, err := cluster.Config(cluster.Options{Kubeconfig: l.Kubeconfig, Context: contexts[c]}); err != nil {
			errs = append(errs, config.FlagErrorf("`--live-context` %s=%s: %v", c, contexts[c], err))
		}
	}
	return errors.Join(errs...)
}

// Uncontexted are the clusters of workloads that no `--live-context`
// reaches, when the live path is on and names contexts (config validate
// --check-files, on the repository's ClusterMap).
func (l *Live) Uncontexted(refs []string) []string {
	contexts, err := parseContexts(l.Contexts)
	if !l.Enabled || err != nil || len(contexts) == 0 {
		return nil
	}
	var out []string
	for _, r := range refs {
		cs, _, ok := strings.Cut(r, ":")
		if !ok {
			continue
		}
		for _, c := range strings.Split(cs, "+") {
			if contexts[c] == "" && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// connect reaches the clusters the plan's workloads run in. A run
// without named clusters reaches the kubeconfig's current context, as
// ever. With a ClusterMap, each cluster that has a context is reached
// through it; one without is not reached, and its urgent upsizes are
// refused by name (targetsOf). A context naming no cluster of the map
// is an error: it is a typo, and its cluster would go without.
func (lr *liveStage) connect(p *plan.Plan, only []string, opts live.Options) error {
	contexts, err := parseContexts(lr.o.Contexts)
	if err != nil {
		return err
	}
	if len(contexts) == 0 && len(only) == 1 {
		// A job of one cluster: its kubeconfig reaches that cluster.
		contexts[only[0]] = ""
	}
	var names []string
	if m := p.ClusterMap(); m != nil {
		names = m.Named(nil)
	}
	for c := range contexts {
		if !slices.Contains(names, c) && !slices.Contains(only, c) {
			have := "the repository has no ClusterMap that names clusters"
			if len(names) > 0 {
				have = "its clusters are " + strings.Join(names, ", ")
			}
			return config.FlagErrorf("`--live-context` names cluster %s, which is not in the repository's ClusterMap: %s", c, have)
		}
	}
	want := map[string]string{}
	if len(names) == 0 {
		want[""] = ""
	}
	for _, d := range p.Decisions {
		for _, c := range d.Workload.Ref.Clusters() {
			if ctx, ok := contexts[c]; ok && (len(only) == 0 || slices.Contains(only, c)) {
				want[c] = ctx
			}
		}
	}
	for c, ctx := range want {
		cfg, err := cluster.Config(cluster.Options{Kubeconfig: lr.o.Kubeconfig, Context: ctx})
		if err != nil {
			if c != "" {
				return fmt.Errorf("live: cluster %s, context %s: %w", c, ctx, err)
			}
			return err
		}
		client, err := live.NewClient(cfg)
		if err != nil {
			return err
		}
		lr.conns[c] = &liveConn{client: client, applier: live.NewApplier(client, opts)}
	}
	return nil
}

// targetsOf are the live changes of an urgent upsize the rules send live:
// one per cluster whose own pods are urgent, each refused by name when no
// context reaches its cluster.
func (lr *liveStage) targetsOf(d plan.Decision, at time.Time) []target {
	ref := d.Workload.Ref
	cs := urgentClusters(d, at)
	if len(cs) == 0 {
		return []target{{cluster: ref.Cluster, d: d, refused: fmt.Sprintf(
			"no cluster's own pods of %s are urgent alone, only all of them read together: it waits for its pull request", ref)}}
	}
	var out []target
	for _, c := range cs {
		if lr.conns[c] == nil {
			out = append(out, target{cluster: c, d: d, refused: fmt.Sprintf(
				"no kubeconfig context reaches cluster %s (`--live-context %s=CONTEXT`); %s waits for its pull request", c, c, ref)})
			continue
		}
		out = append(out, target{cluster: c, d: d, t: targetOf(d)})
	}
	return out
}

// urgentClusters are the clusters an urgent upsize goes live in. A
// workload of one cluster, or of none, goes to its own. A definition
// several clusters deploy is decided on all their pods; the live change
// goes only to each cluster whose own pods, decided alone under the same
// rules, fire a reactive upsize. A quiet cluster keeps Git's value until
// the pull request merges, as it would if it deployed its own copy.
func urgentClusters(d plan.Decision, at time.Time) []string {
	cs := d.Workload.Ref.Clusters()
	switch len(cs) {
	case 0:
		return []string{""}
	case 1:
		return cs
	}
	var out []string
	for _, c := range cs {
		u := d.Usage
		u.Pods = nil
		for _, p := range d.Usage.Pods {
			if pc, _ := plan.PodName(p.Name); pc == c {
				u.Pods = append(u.Pods, p)
			}
		}
		if len(u.Pods) == 0 {
			continue
		}
		own := engine.Decide(engine.Input{At: at, Current: d.Current, Rules: d.Rules, Usage: u})
		if len(own.Evidence.Upsizes) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// gitValues gives the base branch's values of the workloads of cluster c
// ("" for a run without named clusters), for the reconcile of the live
// changes in that cluster.
func (lr *liveStage) gitValues(c string) func(namespace, name string) (live.GitValues, bool) {
	git := map[string]live.GitValues{}
	for _, d := range lr.p.Decisions {
		ref := d.Workload.Ref
		if c != "" && !slices.Contains(ref.Clusters(), c) {
			continue
		}
		g := live.GitValues{Fraction: d.Workload.GPU.FractionText, VLLM: map[string]string{}}
		for _, ct := range d.Workload.Containers {
			g.VLLM[ct.Name] = ct.GPUMemoryUtilization
		}
		git[ref.Namespace+"/"+ref.Name] = g
	}
	return func(ns, name string) (live.GitValues, bool) {
		g, ok := git[ns+"/"+name]
		return g, ok
	}
}

// clusterPrefix names a live row's cluster: "prod-us:" before
// namespace/name, nothing without one.
func clusterPrefix(c string) string {
	if c == "" {
		return ""
	}
	return plan.Printable(c) + ":"
}
