package plan

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Clusters: a repository that deploys several clusters maps them
// (policy.ClusterMap). A workload is then (cluster, namespace/Kind/name):
// its cluster is the one whose paths hold its definition root, its usage
// is read from that cluster's series alone, and its edit goes where that
// cluster's value lives. A definition several clusters deploy alike (a
// root they share) is one workload of all of them, decided on the pods
// of every one.

// OptionsError is a mistake in the options a plan is made with that
// only the repository shows (a cluster its map does not hold): a usage
// mistake, which names its flag in backticks.
type OptionsError struct{ Msg string }

func (e *OptionsError) Error() string { return e.Msg }

func optionsErrorf(format string, args ...any) error {
	return &OptionsError{fmt.Sprintf(format, args...)}
}

// ClusterLabel is `--cluster-label name=value`: the series of one
// cluster in a store that holds several.
type ClusterLabel struct{ Name, Value string }

// clusterMap is the map a plan reads clusters by, checked against the
// run's options: the repository's, or the one of --cluster-label.
func clusterMap(set *policy.Set, opts Options) (*policy.ClusterMap, error) {
	m := set.ClusterMap
	one := opts.ClusterLabel.Name != ""
	if one {
		if m != nil {
			return nil, optionsErrorf("`--cluster-label` is the map of one cluster, and the repository maps its clusters (%s, %s:%d): use `--cluster` to read some of them", m.Meta, m.File, m.Line)
		}
		m = policy.OneCluster(opts.ClusterLabel.Name, opts.ClusterLabel.Value)
	}
	f := opts.Filter
	if len(f.Clusters) > 0 {
		if m == nil || one {
			return nil, optionsErrorf("`--cluster` names clusters of the repository's ClusterMap, and it has none")
		}
		for _, c := range f.Clusters {
			if _, ok := m.Cluster(c); !ok {
				return nil, optionsErrorf("`--cluster` %q: %s (%s) maps %s", c, m.Meta, m.File, strings.Join(m.Names(), ", "))
			}
		}
	}
	if opts.WholeStore && (m == nil || len(f.Clusters) != 1) {
		return nil, optionsErrorf("`--whole-store` reads a store that holds one cluster alone: name that cluster with `--cluster`")
	}
	return m, nil
}

// mapClusters gives each workload the cluster whose paths hold its
// definition (the clusters, joined, when several do), and says which no
// cluster's do: those keep no cluster and are left alone.
func (p *Plan) mapClusters(ws []patcher.Workload) ([]patcher.Workload, map[int]bool) {
	if p.clusters == nil {
		return ws, nil
	}
	out := slices.Clone(ws)
	unmapped := map[int]bool{}
	for i := range out {
		cs := p.clusters.Clusters(out[i].File)
		if len(cs) == 0 {
			unmapped[i] = true
			continue
		}
		out[i].Ref.Cluster = strings.Join(cs, usage.ClusterSep)
		if out[i].Template.Kind != "" {
			out[i].Template.Cluster = out[i].Ref.Cluster
		}
	}
	if len(unmapped) > 0 {
		var files []string
		for i := range unmapped {
			files = append(files, out[i].File)
		}
		slices.Sort(files)
		p.log.Warn("definitions under no cluster's paths of the ClusterMap are left alone (unmapped)", "files", slices.Compact(files))
	}
	return out, unmapped
}

// queried are the refs a workload's usage is asked for by: its own, one
// per cluster of a definition several deploy, or its ref without a
// cluster from a store that holds its cluster alone (WholeStore).
func (p *Plan) queried(ref usage.Ref) []usage.Ref {
	var refs []usage.Ref
	switch cs := ref.Clusters(); {
	case p.wholeStore:
		refs = []usage.Ref{ref.Local()}
	case len(cs) > 1:
		for _, c := range cs {
			r := ref
			r.Cluster = c
			refs = append(refs, r)
		}
	default:
		return []usage.Ref{ref}
	}
	p.parts[ref] = refs
	return refs
}

// gather is a workload's usage from the answers to its queried refs:
// one cluster's as it came, with each pod named after its cluster when
// the map names clusters; several clusters' pods together, since they
// run one template. why says why the usage is unavailable, when it is.
func (p *Plan) gather(ref usage.Ref, got map[usage.Ref]usage.Workload, failed map[usage.Ref]string) (u usage.Workload, why string, ok bool) {
	parts, split := p.parts[ref]
	if !split {
		parts = []usage.Ref{ref}
	}
	var whys []string
	var ws []usage.Workload
	var clusters []string
	for _, r := range parts {
		if f, bad := failed[r]; bad {
			whys = append(whys, f)
			continue
		}
		if w, found := got[r]; found {
			ws = append(ws, w)
			clusters = append(clusters, cmp.Or(r.Cluster, ref.Cluster))
		}
	}
	if len(whys) > 0 {
		return usage.Workload{}, strings.Join(slices.Compact(whys), "; "), false
	}
	if len(ws) == 0 {
		return usage.Workload{}, "", false
	}
	return mergeUsage(ws, clusters), "", true
}

// mergeUsage is the usage of one workload read in several parts, each of
// a cluster (clusters[i], "" without names): every pod, named
// cluster/pod when the cluster has a name; the longest step; liveness
// known only when every part knows it; what one part says of its data
// (partial, mixed, unattributed) said of the whole.
func mergeUsage(ws []usage.Workload, clusters []string) usage.Workload {
	out := usage.Workload{LiveKnown: true}
	var partial []string
	for i, w := range ws {
		c := clusters[i]
		out.Step = max(out.Step, w.Step)
		for m, d := range w.Steps {
			if out.Steps == nil {
				out.Steps = map[usage.Metric]time.Duration{}
			}
			out.Steps[m] = max(out.Steps[m], d)
		}
		out.LiveKnown = out.LiveKnown && w.LiveKnown
		for _, pod := range w.Pods {
			if c != "" {
				pod.Name = c + "/" + pod.Name
			}
			out.Pods = append(out.Pods, pod)
		}
		prefix := ""
		if c != "" && len(ws) > 1 {
			prefix = "cluster " + c + ": "
		}
		if w.Partial != "" {
			partial = append(partial, prefix+w.Partial)
		}
		if w.Mixed != "" && out.Mixed == "" {
			out.Mixed = prefix + w.Mixed
		}
		for _, un := range w.Unattributed {
			out.Unattributed = append(out.Unattributed, prefix+un)
		}
	}
	out.Partial = strings.Join(partial, "; ")
	return out
}

// ClusterMap is the map the plan read clusters by: the repository's, or
// the one of `--cluster-label`; nil without either.
func (p *Plan) ClusterMap() *policy.ClusterMap { return p.clusters }

// Matcher is the label matcher that selects the series of ref's
// cluster(s) in the store (cluster="prod-eu", or cluster=~"a|b" for a
// definition several clusters deploy), as a pull request's body shows
// it; "" when the plan reads the store whole.
func (p *Plan) Matcher(ref usage.Ref) string {
	if p.clusters == nil || p.wholeStore {
		return ""
	}
	values := p.clusters.Values()
	var vs []string
	cs := ref.Clusters()
	if len(cs) == 0 {
		cs = []string{""}
	}
	for _, c := range cs {
		if v, ok := values[c]; ok {
			vs = append(vs, v)
		}
	}
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return p.clusters.Spec.Label + "=" + strconv.Quote(vs[0])
	}
	for i, v := range vs {
		vs[i] = regexp.QuoteMeta(v)
	}
	return p.clusters.Spec.Label + "=~" + strconv.Quote(strings.Join(vs, "|"))
}

// PodName splits the name of a pod of a workload's usage into its cluster
// and its own name: a pod of a mapped cluster is named cluster/pod.
func PodName(name string) (cluster, pod string) {
	if c, n, ok := strings.Cut(name, "/"); ok {
		return c, n
	}
	return "", name
}

// compareRefs orders workloads as the plan lists them: by namespace,
// kind and name, then by cluster, so that one workload's rows of several
// clusters stand together.
func compareRefs(a, b usage.Ref) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Cluster, b.Cluster))
}

// checkClusterNames checks the clusters a filter names, before the map
// is read: names a map could hold.
func checkClusterNames(names []string) error {
	for _, n := range names {
		if !policy.ValidClusterName(n) {
			return fmt.Errorf("cluster %q: not a cluster's name (a ClusterMap names them as DNS labels)", n)
		}
	}
	return nil
}
