package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// A repository with a ClusterMap is a fleet of clusters: the dashboard
// then sums each cluster apart and lists each one's pull requests and
// workloads not served under its own heading. A definition several
// clusters deploy alike (prod-eu+prod-us) has its own heading: its one
// pull request serves all of them.

// clusterNames are the clusters the dashboard sums apart, in the map's
// order: those the run is limited to, else every cluster of the map;
// none without a map that names clusters (`--cluster-label` names none).
func clusterNames(in Input) []string {
	m := in.Plan.ClusterMap()
	if m == nil {
		return nil
	}
	return m.Named(in.Clusters)
}

// setCluster is the cluster of a change set's decisions, their clusters
// joined when they differ; "" for none.
func setCluster(ds []plan.Decision) string {
	var cs []string
	for _, d := range ds {
		cs = append(cs, d.Workload.Ref.Clusters()...)
	}
	return strings.Join(clusterSet(cs), usage.ClusterSep)
}

// byCluster writes items, each of the cluster of(item), under a heading
// per cluster: the named clusters' first, in their order, then any other
// (a shared definition's, "" for none) by name. head starts each group
// (a table's header). Without names, the items go under no heading.
func byCluster[T any](b *strings.Builder, names []string, items []T, of func(T) string, head func(), write func(T)) {
	if len(names) == 0 {
		head()
		for _, it := range items {
			write(it)
		}
		return
	}
	groups := map[string][]T{}
	for _, it := range items {
		groups[of(it)] = append(groups[of(it)], it)
	}
	order := slices.Clone(names)
	var others []string
	for c := range groups {
		if !slices.Contains(names, c) {
			others = append(others, c)
		}
	}
	slices.Sort(others)
	order = append(order, others...)
	first := true
	for _, c := range order {
		if len(groups[c]) == 0 {
			continue
		}
		if !first {
			b.WriteString("\n")
		}
		first = false
		fmt.Fprintf(b, "### %s\n\n", plan.MarkdownCell(clusterHeading(c)))
		head()
		for _, it := range groups[c] {
			write(it)
		}
	}
}

func clusterHeading(c string) string {
	switch {
	case c == "":
		return "No cluster"
	case strings.Contains(c, usage.ClusterSep):
		return "Clusters " + strings.ReplaceAll(c, usage.ClusterSep, " and ")
	}
	return "Cluster " + c
}

// writeClusterTotals writes the fleet's sums per cluster, when the plan
// names clusters: a pod counts in its own cluster's row, so that a
// definition several clusters deploy adds its pods to each one's.
func writeClusterTotals(b *strings.Builder, p *plan.Plan, open map[string]bool, names []string, forge bool) {
	if len(names) == 0 {
		return
	}
	rows := clusterTotals(p, open, names)
	b.WriteString("\n| Cluster | Workloads | Pods | Requested | Recommended | Used (p95) |")
	if forge {
		b.WriteString(" Once the open pull requests merge |")
	}
	b.WriteString("\n|---|---:|---:|---:|---:|---:|")
	if forge {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, c := range rows {
		fmt.Fprintf(b, "| %s | %d | %d | %.2f | %.2f | %.2f |", plan.MarkdownCell(cmp.Or(c.name, "no cluster")), c.t.Workloads, c.t.Pods,
			c.t.Requested, c.t.Recommended, c.t.UsedP95)
		if forge {
			fmt.Fprintf(b, " %.2f (%s) |", c.t.AfterOpen, signed(c.t.AfterOpen-c.t.Requested))
		}
		b.WriteString("\n")
	}
}

type clusterTotal struct {
	name string
	t    Totals
}

// clusterTotals are the totals of each of names, in their order, then of
// the workloads of no cluster ("") when there are some.
func clusterTotals(p *plan.Plan, open map[string]bool, names []string) []clusterTotal {
	rows := make([]clusterTotal, len(names))
	at := map[string]int{}
	for i, n := range names {
		rows[i].name = n
		at[n] = i
	}
	for _, d := range p.Decisions {
		if d.Current.Form == engine.NoGPU || d.Current.GPUs <= 0 {
			continue
		}
		cs := d.Workload.Ref.Clusters()
		if len(cs) == 0 {
			cs = []string{""}
		}
		pods := reporting(d.Usage)
		for _, c := range cs {
			i, ok := at[c]
			if !ok {
				if c != "" {
					continue // a cluster the run is not limited to
				}
				at[c] = len(rows)
				rows = append(rows, clusterTotal{})
				i = len(rows) - 1
			}
			var own []usage.Pod
			for _, pod := range pods {
				// The pods of a definition several clusters deploy are
				// named cluster/pod.
				if pc, _ := plan.PodName(pod.Name); len(cs) == 1 || pc == c {
					own = append(own, pod)
				}
			}
			add(&rows[i].t, d, own, open)
		}
	}
	return rows
}
