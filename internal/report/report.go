// Package report makes the consolidation reports of a repository's
// GpuConsolidationPolicies (docs/design.md §8, docs/fleet.md) from a finished
// plan and the placement read from the cluster: the shell around the
// pure consolidate.Evaluate, for `recommender report`. It evicts and
// patches nothing; the cluster is only read, by the placement package.
// With a ClusterMap, each cluster's pools are reported apart.
package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/dashboard"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/neighbours"
	"github.com/gpu-rightsizing/recommender/internal/placement"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Options say where the policies are; the plan gives the
// recommendations, Kube the placement, or Series when Kube is nil (the
// job has no cluster access: kube-state-metrics' series at the plan's
// evaluation time).
type Options struct {
	Repo        string
	PolicyPaths []string
	Plan        *plan.Plan
	// Cluster is the cluster Connect reaches for Kube and Dyn.
	Cluster cluster.Options
	Kube    kubernetes.Interface
	// Dyn, with Kube, reads the KAI queues' quotas for the rollout room.
	Dyn    dynamic.Interface
	Series placement.Series
	// Devices is where per-device usage is read (HAMi's series) for the
	// noisy neighbours, over Window before the plan's evaluation time
	// (DefaultWindow when 0); nil reads none.
	Devices placement.Series
	Window  time.Duration
	// Clusters are the clusters of the plan's ClusterMap the report is
	// limited to (`--cluster`); empty is every one.
	Clusters []string
}

// Connect sets Kube and Dyn to the clients of o.Cluster.
func (o *Options) Connect() error {
	var err error
	o.Kube, o.Dyn, err = cluster.Connect(o.Cluster)
	return err
}

// DefaultWindow is how far back the noisy neighbours are looked for: a
// day holds a service's daily peak.
const DefaultWindow = 24 * time.Hour

// Result is every policy's report, with what the reading left out.
type Result struct {
	Reports []consolidate.Report `json:"reports"`
	// Neighbours are the devices of the policies' pools that were
	// saturated, with who used what of them.
	Neighbours []neighbours.Finding `json:"neighbours,omitempty"`
	// Notes are the pods the placement could not count, and the policies
	// that could not be read.
	Notes []string `json:"notes,omitempty"`
	// hamiCore says, by workload, whether HAMi-core enforces its memory
	// (its strategy's hamiCore), for the neighbours' sentences.
	hamiCore map[usage.Ref]bool
	// window is how far back the neighbours were looked for.
	window time.Duration
	// clusters are those the report is limited to, for the dashboard's
	// marker.
	clusters []string
}

// Make reads the consolidation policies of the repository and the
// placement of the cluster, and reports on each policy's pool, sorted by
// name. With a ClusterMap each cluster is a fleet apart: its placement
// is read from its own series (those under its label value), its pools
// hold its nodes alone, and its reports and findings name it, so that no
// pod is ever packed onto another cluster's GPU.
func Make(ctx context.Context, opts Options) (*Result, error) {
	set, err := policy.Load(ctx, opts.Repo, opts.PolicyPaths...)
	if err != nil {
		return nil, err
	}
	res := &Result{clusters: opts.Clusters}
	for _, b := range set.Broken {
		if b.Kind == policy.KindConsolidation {
			res.Notes = append(res.Notes, fmt.Sprintf("GpuConsolidationPolicy %s is invalid: no report for it (see `recommender policy validate`)", b.Name))
		}
	}
	if len(set.Consolidation) == 0 {
		return res, nil
	}
	views, err := clusterViews(opts)
	if err != nil {
		return nil, err
	}
	placed, notes, err := readPlacement(ctx, opts, set.Consolidation)
	if err != nil {
		return nil, fmt.Errorf("reading the placement: %w", err)
	}
	res.Notes = append(res.Notes, notes...)
	var devices []metrics.Series
	if opts.Devices != nil {
		if devices, err = readDevices(ctx, opts); err != nil {
			return nil, err
		}
		res.window = cmp.Or(opts.Window, DefaultWindow)
	}
	recs := Recommendations(opts.Plan)
	for _, v := range views {
		in, notes := placed(v)
		res.Notes = append(res.Notes, v.notes(notes)...)
		if opts.Kube != nil && opts.Dyn != nil {
			if in.Queues, notes, err = placement.ReadQueues(ctx, opts.Dyn, in.Pods); err != nil {
				return nil, fmt.Errorf("reading the KAI queues: %w", err)
			}
			res.Notes = append(res.Notes, v.notes(notes)...)
		}
		for _, r := range Evaluate(set.Consolidation, in, recs) {
			r.Cluster = v.name
			res.Reports = append(res.Reports, r)
		}
		if opts.Devices != nil {
			res.Neighbours = append(res.Neighbours, neighboursOf(opts, set.Consolidation, in, v.keep(devices))...)
		}
	}
	res.hamiCore = hamiCore(opts.Plan)
	return res, nil
}

// view is one cluster's part of the store: its name in the ClusterMap
// ("" without one), and the label value its series carry, when the
// store holds several clusters.
type view struct {
	name         string
	label, value string
	filter       bool
}

// clusterViews are the clusters a report is made of, in the map's order:
// those the run is limited to, else every one of the map; one view of
// the whole store without a map. A kubeconfig reaches one cluster, so it
// serves one cluster only.
func clusterViews(opts Options) ([]view, error) {
	var m *policy.ClusterMap
	if opts.Plan != nil {
		m = opts.Plan.ClusterMap()
	}
	if m == nil {
		return []view{{}}, nil
	}
	values := m.Values()
	var out []view
	for _, n := range m.Names() {
		if len(opts.Clusters) > 0 && !slices.Contains(opts.Clusters, n) {
			continue
		}
		// A store of this cluster alone (--whole-store) carries no label.
		whole := opts.Plan.Matcher(usage.Ref{Cluster: n}) == ""
		out = append(out, view{name: n, label: m.Spec.Label, value: values[n], filter: !whole})
	}
	if len(out) > 1 && opts.Kube != nil {
		names := make([]string, len(out))
		for i, v := range out {
			names[i] = v.name
		}
		return nil, fmt.Errorf("the kubeconfig reaches one cluster, and the report is of %d clusters of the ClusterMap (%s): name one with `--cluster`, or read each one's placement with `--placement metrics`",
			len(out), strings.Join(names, ", "))
	}
	return out, nil
}

// keep is the series of v's cluster: those whose label holds its value.
func (v view) keep(ss []metrics.Series) []metrics.Series {
	if !v.filter {
		return ss
	}
	var out []metrics.Series
	for _, s := range ss {
		for _, l := range s.Labels {
			if l.Name == v.label && l.Value == v.value {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// tag makes the workloads of a placement read for v those of its
// cluster, as the plan names them.
func (v view) tag(in consolidate.Placement) consolidate.Placement {
	if v.name == "" {
		return in
	}
	for i := range in.Pods {
		in.Pods[i].Workload.Cluster = v.name
	}
	for i := range in.Rollouts {
		in.Rollouts[i].Workload.Cluster = v.name
	}
	return in
}

// notes names v's cluster in each note, when it has a name.
func (v view) notes(ns []string) []string {
	if v.name == "" {
		return ns
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = "cluster " + v.name + ": " + n
	}
	return out
}

// readDevices reads HAMi's per-device series over the window before
// the plan's evaluation time, once for every cluster.
func readDevices(ctx context.Context, opts Options) ([]metrics.Series, error) {
	var at time.Time
	if opts.Plan != nil {
		at = opts.Plan.At
	}
	ss, _, err := opts.Devices.Series(ctx, neighbours.HAMiMetrics(), at, cmp.Or(opts.Window, DefaultWindow))
	if err != nil {
		return nil, fmt.Errorf("reading per-device usage: %w", err)
	}
	return ss, nil
}

// neighboursOf keeps the saturated devices of one cluster's series on
// the nodes of the policies' pools (or on no node the series and
// placement tell).
func neighboursOf(opts Options, policies []*policy.ConsolidationPolicy, in consolidate.Placement, ss []metrics.Series) []neighbours.Finding {
	var at time.Time
	if opts.Plan != nil {
		at = opts.Plan.At
	}
	window := cmp.Or(opts.Window, DefaultWindow)
	pods := map[string]neighbours.Pod{}
	for _, p := range in.Pods {
		pods[p.Key()] = neighbours.Pod{Workload: p.Workload, Node: p.Node, Share: p.Share.Per}
	}
	pooled := map[string]bool{"": true}
	for _, n := range in.Nodes {
		for _, cp := range policies {
			if cp.Spec.NodeSelector.Matches(n.Labels) {
				pooled[n.Name] = true
			}
		}
	}
	var out []neighbours.Finding
	for _, f := range neighbours.Find(neighbours.FromHAMi(ss, pods), at, window) {
		if pooled[f.Node] {
			out = append(out, f)
		}
	}
	return out
}

// hamiCore is each planned workload's strategy's hamiCore.
func hamiCore(p *plan.Plan) map[usage.Ref]bool {
	out := map[usage.Ref]bool{}
	if p == nil {
		return out
	}
	for _, d := range p.Decisions {
		if st := d.Rules.Strategy; st != nil {
			out[d.Workload.Ref] = st.HAMiCore
		}
	}
	return out
}

// readPlacement reads the cluster, or else kube-state-metrics' series
// once for every cluster, where the node labels the policies select by
// are asked for by key. It gives each view's placement: the cluster
// read (a kubeconfig reaches one), or the series of the view's cluster.
func readPlacement(ctx context.Context, opts Options, policies []*policy.ConsolidationPolicy) (func(view) (consolidate.Placement, []string), []string, error) {
	if opts.Kube != nil || opts.Series == nil {
		in, notes, err := placement.Read(ctx, opts.Kube)
		if err != nil {
			return nil, nil, err
		}
		return func(v view) (consolidate.Placement, []string) { return v.tag(in), nil }, notes, nil
	}
	var keys []string
	for _, cp := range policies {
		keys = append(keys, slices.Collect(maps.Keys(cp.Spec.NodeSelector.MatchLabels))...)
		for _, r := range cp.Spec.NodeSelector.MatchExpressions {
			keys = append(keys, r.Key)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var at time.Time
	if opts.Plan != nil {
		at = opts.Plan.At
	}
	ss, warnings, err := opts.Series.Series(ctx, placement.SeriesMetrics(), at, placement.Lookback)
	if err != nil {
		return nil, nil, fmt.Errorf("kube-state-metrics series: %w", err)
	}
	var notes []string
	for _, w := range warnings {
		notes = append(notes, "the server's answer may be partial: "+w)
	}
	return func(v view) (consolidate.Placement, []string) {
		in, notes := placement.FromSeries(v.keep(ss), at, keys)
		return v.tag(in), notes
	}, notes, nil
}

// Evaluate reports on each policy's pool.
func Evaluate(policies []*policy.ConsolidationPolicy, in consolidate.Placement, recs map[usage.Ref]engine.Allocation) []consolidate.Report {
	out := make([]consolidate.Report, 0, len(policies))
	for _, cp := range policies {
		threshold := policy.DefaultConsolidationUtil
		if t := cp.Spec.UtilizationThresholdPercent; t != nil {
			threshold = *t
		}
		out = append(out, consolidate.Evaluate(consolidate.Policy{Name: cp.Name, Nodes: &cp.Spec.NodeSelector, ThresholdPercent: threshold}, in, recs))
	}
	slices.SortFunc(out, func(a, b consolidate.Report) int { return cmp.Compare(a.Policy, b.Policy) })
	return out
}

// Recommendations are the allocations the open pull requests set: a
// decision that changes nothing leaves its workload at its current
// share, which the placement already holds.
func Recommendations(p *plan.Plan) map[usage.Ref]engine.Allocation {
	recs := map[usage.Ref]engine.Allocation{}
	if p == nil {
		return recs
	}
	for _, d := range p.Decisions {
		if !d.Action.Changes() {
			continue
		}
		recs[d.Workload.Ref] = d.Recommended
		// A definition several clusters deploy alike resizes its pods
		// in each of them.
		if cs := d.Workload.Ref.Clusters(); len(cs) > 1 {
			for _, c := range cs {
				r := d.Workload.Ref
				r.Cluster = c
				recs[r] = d.Recommended
			}
		}
	}
	return recs
}

// WriteText prints each report, a blank line apart, then the notes.
func (r *Result) WriteText(w io.Writer) error {
	if len(r.Reports) == 0 {
		fmt.Fprintln(w, "no GpuConsolidationPolicy in the repository: nothing to report")
	}
	for i, rep := range r.Reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := rep.WriteText(w); err != nil {
			return err
		}
	}
	if len(r.Neighbours) > 0 {
		fmt.Fprintf(w, "\nGPUs saturated (at or above %.0f%%) in the %s before the plan:\n", 100*neighbours.SaturatedAt, engine.FormatDuration(r.window))
	}
	for _, f := range r.Neighbours {
		if err := writeFinding(w, f); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", plan.Printable(n)); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the reports as the dashboard's body, for the plan
// p they were made from: the consolidation reports and the findings,
// without the pull requests, which a report does not read.
func (r *Result) WriteMarkdown(w io.Writer, p *plan.Plan) error {
	body, err := dashboard.Render(dashboard.Input{Plan: p, ReadCluster: true, Consolidation: r.Reports, Notes: r.Notes,
		Findings: r.Findings(), Clusters: r.clusters})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, body)
	return err
}

// WriteJSON writes the result as one indented JSON document.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Findings are what the reports found of each workload, by its ref
// (namespace/Kind/name), for its pull request's body: an upsize whose
// rollout would stall, with the settings that fit; a saturated GPU where
// it used more than its share.
func (r *Result) Findings() map[string][]string {
	out := map[string][]string{}
	for _, f := range r.Neighbours {
		for ref, ss := range f.Sentences(false) {
			if r.hamiCore[ref] {
				ss = f.Sentences(true)[ref]
			}
			out[ref.String()] = append(out[ref.String()], ss...)
		}
	}
	for _, rep := range r.Reports {
		for _, room := range rep.Rollouts {
			if !room.Fits {
				key := room.Workload.String()
				out[key] = append(out[key], room.Sentence())
			}
		}
	}
	return out
}

// writeFinding prints one saturated device: how long, and each tenant's
// use against its share then.
func writeFinding(w io.Writer, f neighbours.Finding) error {
	node := f.Node
	if node == "" {
		node = "an unknown node"
	}
	uses := make([]string, len(f.Uses))
	for i, u := range f.Uses {
		share := "an unknown share"
		if u.Share > 0 {
			share = kai.FormatFraction(u.Share)
		}
		uses[i] = fmt.Sprintf("%s %s of %s", u.Pod, kai.FormatFraction(u.Used), share)
		if u.Over {
			uses[i] += fmt.Sprintf(" (%s over)", kai.FormatFraction(u.Used-u.Share))
		}
	}
	_, err := fmt.Fprintf(w, "saturated: GPU %s on %s for %.0f minutes: %s\n", plan.Printable(f.Device), plan.Printable(node),
		f.Saturated.Minutes(), plan.Printable(strings.Join(uses, ", ")))
	return err
}
