package metrics

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// usageByCluster answers a query that keys series by cluster
// (q.ClusterLabel): each cluster's workloads from the series whose label
// is that cluster's value alone, as a set of their own, so that a pod
// name two clusters share is two pods, never one. The answer's refs keep
// their cluster.
func (set *Set) usageByCluster(ctx context.Context, q usage.Query) (usage.Result, error) {
	res := usage.Result{Workloads: make(map[usage.Ref]usage.Workload)}
	byCluster := map[string][]usage.Ref{}
	for _, ref := range q.Workloads {
		byCluster[ref.Cluster] = append(byCluster[ref.Cluster], ref)
	}
	for _, c := range slices.Sorted(maps.Keys(byCluster)) {
		refs := byCluster[c]
		value, ok := q.ClusterValues[c]
		if !ok {
			set.fail(&res, refs, fmt.Sprintf("cluster %q has no value of the label %s to read its series by", c, q.ClusterLabel))
			continue
		}
		sub := set.cluster(q.ClusterLabel, value)
		if len(sub.series) == 0 {
			set.fail(&res, refs, set.noSeries(q.ClusterLabel, value, c))
			continue
		}
		local := q
		local.ClusterLabel, local.ClusterValues = "", nil
		local.Workloads = make([]usage.Ref, len(refs))
		local.Components = nil
		for i, r := range refs {
			local.Workloads[i] = r.Local()
			if comp, ok := q.Components[r]; ok {
				if local.Components == nil {
					local.Components = map[usage.Ref]string{}
				}
				local.Components[r.Local()] = comp
			}
		}
		part, err := sub.Usage(ctx, local)
		if err != nil {
			return usage.Result{}, err
		}
		in := func(r usage.Ref) usage.Ref { r.Cluster = c; return r }
		for r, w := range part.Workloads {
			res.Workloads[in(r)] = w
		}
		for r, u := range part.Unattributed {
			if res.Unattributed == nil {
				res.Unattributed = map[usage.Ref][]string{}
			}
			res.Unattributed[in(r)] = u
		}
		for _, w := range part.Warnings {
			res.Warnings = append(res.Warnings, clusterWarning(c, q.ClusterLabel, value, w))
		}
	}
	return res, nil
}

// clusterWarning says a warning of one cluster's part of an answer.
func clusterWarning(cluster, label, value, w string) string {
	if cluster == "" {
		return fmt.Sprintf("%s=%q: %s", label, value, w)
	}
	return fmt.Sprintf("cluster %s: %s", cluster, w)
}

// fail marks refs unanswered, each with why.
func (set *Set) fail(res *usage.Result, refs []usage.Ref, why string) {
	if res.Failed == nil {
		res.Failed = map[usage.Ref]string{}
	}
	for _, r := range refs {
		res.Failed[r] = why
	}
}

// noSeries says that no series of the set carries label=value, and which
// values the set does hold: a cluster map with a typo must not read as a
// cluster without pods.
func (set *Set) noSeries(label, value, cluster string) string {
	return NoSeries(set.name, label, value, cluster, set.LabelValues(label))
}

// NoSeries says that a store (named by store) has no series of a cluster
// with label=value, and which values of label it does hold: a cluster
// map with a typo must not read as a cluster without pods.
func NoSeries(store, label, value, cluster string, held []string) string {
	who := "cluster " + cluster
	if cluster == "" {
		who = "the cluster"
	}
	if len(held) == 0 {
		return fmt.Sprintf("%s: no series of %s has %s=%q, nor any other value of %s", who, store, label, value, label)
	}
	quoted := make([]string, len(held))
	for i, v := range held {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%s: no series of %s has %s=%q; the values of %s it holds are %s", who, store, label, value, label, strings.Join(quoted, ", "))
}

// LabelValues returns the values label takes on the set's series, sorted.
func (set *Set) LabelValues(label string) []string {
	seen := map[string]bool{}
	for _, s := range set.series {
		if v, ok := exactLabel(s.Labels, label); ok {
			seen[v] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// exactLabel is the value of the label called name in ls, without the
// exported_ reading of label: a store's cluster label is the store's
// (an external label, a remote-write relabelling), never an exporter's.
func exactLabel(ls []Label, name string) (string, bool) {
	i, ok := slices.BinarySearchFunc(ls, name, func(l Label, n string) int { return cmp.Compare(l.Name, n) })
	if !ok {
		return "", false
	}
	return ls[i].Value, true
}

// cluster returns the set of the series whose label is value, built on
// first use: it shares their samples, and the scrape intervals the set
// was given or has inferred.
func (set *Set) cluster(label, value string) *Set {
	key := label + "\x00" + value
	set.mu.Lock()
	if sub, ok := set.clusters[key]; ok {
		set.mu.Unlock()
		return sub
	}
	steps := maps.Clone(set.steps)
	set.mu.Unlock()
	var ss []Series
	for _, s := range set.series {
		if v, ok := exactLabel(s.Labels, label); ok && v == value {
			ss = append(ss, s)
		}
	}
	sub := NewSet(fmt.Sprintf("%s (%s=%q)", set.name, label, value), ss, nil)
	maps.Copy(sub.steps, steps)
	set.mu.Lock()
	defer set.mu.Unlock()
	if prev, ok := set.clusters[key]; ok {
		return prev
	}
	set.clusters[key] = sub
	return sub
}
