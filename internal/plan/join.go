package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// namesClusters reports whether the plan reads a map that names its
// clusters (a repository's ClusterMap, not the map of one cluster that
// --cluster-label stands for).
func (p *Plan) namesClusters() bool {
	return p.clusters != nil && slices.ContainsFunc(p.clusters.Spec.Clusters, func(c policy.ClusterSpec) bool { return c.Name != "" })
}

// definition is one definition of a workload, as the editor knows it: the
// ref without a cluster, and the file that defines it.
type definition struct {
	ref  usage.Ref
	file string
}

// joinSharedFiles joins the change sets whose edits write one file of the
// preview (Plan.Files), so that no two pull requests write one file: an
// edit the editor made once for several workloads (a shared base every
// overlay building it agrees on) stays whole, and two first patches of
// one overlay, both entries of its kustomization.yaml's patches, stay
// together rather than conflict. Applied alone, each change set then
// writes what the preview shows of its files.
func (p *Plan) joinSharedFiles(sets []ChangeSet) []ChangeSet {
	if len(sets) < 2 {
		return sets
	}
	setOf := map[definition]int{}
	for i, cs := range sets {
		for _, e := range cs.Edits {
			setOf[definition{e.Workload, e.File}] = i
		}
	}
	parent := make([]int, len(sets))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, f := range p.Files {
		first := -1
		for _, c := range f.Changes {
			i, ok := setOf[definition{c.Workload, c.Definition}]
			if !ok {
				continue
			}
			if first < 0 {
				first = i
				continue
			}
			if a, b := find(first), find(i); a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	groups := map[int][]int{}
	for i := range sets {
		groups[find(i)] = append(groups[find(i)], i)
	}
	if len(groups) == len(sets) {
		return sets
	}
	var out []ChangeSet
	for i := range sets {
		members := groups[i]
		switch len(members) {
		case 0:
		case 1:
			out = append(out, sets[i])
		default:
			joined := make([]ChangeSet, len(members))
			for j, m := range members {
				joined[j] = sets[m]
			}
			out = append(out, join(joined))
		}
	}
	return out
}

// join makes one change set of several: their decisions and edits in the
// plan's order, their labels and reviewers. The key says what the sets
// have in common: one workload of several clusters
// (cluster+cluster:namespace/Kind/name), several clusters (grouped by
// cluster), or else every key (Joined).
func join(sets []ChangeSet) ChangeSet {
	out := ChangeSet{}
	// Items point into sets, and the slices are sized once: a Decision
	// is large, and copied into items and again as the slices grew, the
	// decisions of 10,000 edits took 65 MB.
	type item struct{ c, e int }
	n := 0
	for _, cs := range sets {
		n += len(cs.Decisions)
	}
	items := make([]item, 0, n)
	keys := make([]string, 0, len(sets))
	for i, cs := range sets {
		for j := range cs.Decisions {
			items = append(items, item{i, j})
		}
		keys = append(keys, cs.Key)
		out.Labels = Union(out.Labels, cs.Labels)
		out.Reviewers = Union(out.Reviewers, cs.Reviewers)
	}
	slices.SortStableFunc(items, func(a, b item) int {
		x, y := &sets[a.c].Decisions[a.e].Workload, &sets[b.c].Decisions[b.e].Workload
		return cmp.Or(compareRefs(x.Ref, y.Ref), cmp.Compare(x.File, y.File))
	})
	out.Decisions, out.Edits = slices.Grow(out.Decisions, n), slices.Grow(out.Edits, n)
	for _, it := range items {
		out.Decisions = append(out.Decisions, sets[it.c].Decisions[it.e])
		out.Edits = append(out.Edits, sets[it.c].Edits[it.e])
	}
	slices.Sort(keys)
	out.Grouping, out.Key = Joined, strings.Join(keys, " + ")
	switch g := sets[0].Grouping; {
	case !slices.ContainsFunc(sets, func(cs ChangeSet) bool { return cs.Grouping != g }) && g == ByCluster:
		out.Grouping, out.Key = ByCluster, joinClusters(keys)
	case !slices.ContainsFunc(sets, func(cs ChangeSet) bool { return cs.Grouping != g }) && g == ByWorkload:
		local := out.Decisions[0].Workload.Ref.Local()
		if !slices.ContainsFunc(out.Decisions, func(d Decision) bool { return d.Workload.Ref.Local() != local }) {
			var clusters []string
			for _, d := range out.Decisions {
				clusters = append(clusters, d.Workload.Ref.Cluster)
			}
			r := local
			r.Cluster = joinClusters(clusters)
			out.Grouping, out.Key = ByWorkload, r.String()
		}
	}
	return out
}

// joinClusters is the clusters of several names (each one cluster, or
// several joined), each once, sorted, joined.
func joinClusters(names []string) string {
	var all []string
	for _, n := range names {
		all = append(all, strings.Split(n, usage.ClusterSep)...)
	}
	slices.Sort(all)
	return strings.Join(slices.Compact(all), usage.ClusterSep)
}

// sharedSets names, for each definition whose change shares a change set
// with other workloads', that set: what the printed plan shows of how
// run groups them.
func (p *Plan) sharedSets() map[definition]string {
	if len(p.Files) == 0 {
		// Nothing edited, nothing to push.
		return nil
	}
	sets, err := p.ChangeSets(p.grouping)
	if err != nil {
		return nil
	}
	out := map[definition]string{}
	for _, cs := range sets {
		if len(cs.Decisions) < 2 {
			continue
		}
		for _, d := range cs.Decisions {
			out[definition{d.Workload.Ref, d.Workload.File}] = cs.Key
		}
	}
	return out
}

// sharedList says each change set of several workloads in one line: its
// key, how it groups, and its workloads.
func (p *Plan) sharedList() []string {
	if len(p.Files) == 0 {
		return nil
	}
	sets, err := p.ChangeSets(p.grouping)
	if err != nil {
		return nil
	}
	var out []string
	for _, cs := range sets {
		if len(cs.Decisions) < 2 {
			continue
		}
		refs := make([]string, len(cs.Decisions))
		for i, d := range cs.Decisions {
			refs[i] = d.Workload.Ref.String()
		}
		why := "grouped by " + string(cs.Grouping)
		if cs.Grouping == Joined || cs.Grouping == ByWorkload {
			why = "their edits write one file"
		}
		out = append(out, fmt.Sprintf("%s (%s): %s", cs.Key, why, strings.Join(refs, ", ")))
	}
	return out
}
