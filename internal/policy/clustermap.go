package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/located"
)

// DefaultClusterLabel is a ClusterMap's spec.label when it names none:
// the label Thanos, Mimir and VictoriaMetrics set-ups most often use.
const DefaultClusterLabel = "cluster"

// clusterNameRE is a DNS label, as a cluster name must be: it stands in
// branch names and filters, and never holds the separator of a group of
// clusters (usage.ClusterSep) nor the colon of a ref.
var clusterNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidClusterName reports whether name can name a cluster of a map.
func ValidClusterName(name string) bool { return clusterNameRE.MatchString(name) }

// clusterMap checks a ClusterMap and fills in its defaults.
func (v validator) clusterMap(m *ClusterMap) {
	v.meta(&m.Meta)
	sp := &m.Spec
	switch {
	case sp.Label == "":
		sp.Label = DefaultClusterLabel
	case !labelNameRE.MatchString(sp.Label):
		v.fail("spec.label", "%q is not a label name", sp.Label)
	}
	if len(sp.Clusters) == 0 {
		v.fail("spec.clusters", "missing: name each cluster the repository deploys, with its paths")
	}
	names, values := map[string]int{}, map[string]int{}
	for i := range sp.Clusters {
		c := &sp.Clusters[i]
		at := fmt.Sprintf("spec.clusters[%d]", i)
		switch j, dup := names[c.Name]; {
		case c.Name == "":
			v.fail(at+".name", "missing")
		case !clusterNameRE.MatchString(c.Name):
			v.fail(at+".name", "%q is not a DNS label (lowercase letters, digits and '-', at most 63): it names branches", c.Name)
		case dup:
			v.fail(at+".name", "%q is spec.clusters[%d]'s name too", c.Name, j)
		default:
			names[c.Name] = i
		}
		if c.LabelValue == "" {
			c.LabelValue = c.Name
		}
		if j, dup := values[c.LabelValue]; dup {
			v.fail(at+".labelValue", "%s=%q is spec.clusters[%d]'s too: the two clusters' series could not be told apart", sp.Label, c.LabelValue, j)
		} else {
			values[c.LabelValue] = i
		}
		if len(c.Paths) == 0 {
			v.fail(at+".paths", "missing: the directories or files of the repository the cluster deploys")
		}
		for j, p := range c.Paths {
			if clean, err := repoPath(p); err != nil {
				v.fail(fmt.Sprintf("%s.paths[%d]", at, j), "%v", err)
			} else {
				c.Paths[j] = clean
			}
		}
		for j, p := range c.Policies {
			if clean, err := repoPath(p); err != nil {
				v.fail(fmt.Sprintf("%s.policies[%d]", at, j), "%v", err)
			} else {
				c.Policies[j] = clean
			}
		}
	}
}

// repoPath checks a path of the repository as a map writes it, and
// returns it clean: slash-separated, relative, inside the checkout.
func repoPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("empty")
	case strings.Contains(p, `\`):
		return "", fmt.Errorf("%q: write paths with /", p)
	case path.IsAbs(p):
		return "", fmt.Errorf("%q: a path relative to the repository's root, without a leading /", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q leads outside the repository", p)
	}
	return clean, nil
}

// under reports whether the repository file f is p or lies below it.
func under(f, p string) bool {
	return p == "." || f == p || strings.HasPrefix(f, p+"/")
}

// Clusters returns the names of the clusters whose paths hold file (a
// workload's definition root), in the map's order; none when no
// cluster's do.
func (m *ClusterMap) Clusters(file string) []string {
	var out []string
	for _, c := range m.Spec.Clusters {
		if slices.ContainsFunc(c.Paths, func(p string) bool { return under(file, p) }) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Cluster returns the cluster called name, and false when the map has
// none.
func (m *ClusterMap) Cluster(name string) (ClusterSpec, bool) {
	i := slices.IndexFunc(m.Spec.Clusters, func(c ClusterSpec) bool { return c.Name == name })
	if i < 0 {
		return ClusterSpec{}, false
	}
	return m.Spec.Clusters[i], true
}

// Names are the clusters' names, in the map's order.
func (m *ClusterMap) Names() []string {
	out := make([]string, len(m.Spec.Clusters))
	for i, c := range m.Spec.Clusters {
		out[i] = c.Name
	}
	return out
}

// Named are the clusters' names among limit (all of them when limit is
// empty), in the map's order, leaving out the one cluster without a name
// that `--cluster-label` maps.
func (m *ClusterMap) Named(limit []string) []string {
	var out []string
	for _, c := range m.Spec.Clusters {
		if c.Name != "" && (len(limit) == 0 || slices.Contains(limit, c.Name)) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Values are the clusters' label values, by name.
func (m *ClusterMap) Values() map[string]string {
	out := make(map[string]string, len(m.Spec.Clusters))
	for _, c := range m.Spec.Clusters {
		out[c.Name] = c.LabelValue
	}
	return out
}

// policyClusters are the clusters whose policy directories hold file.
func (m *ClusterMap) policyClusters(file string) []string {
	var out []string
	for _, c := range m.Spec.Clusters {
		if slices.ContainsFunc(c.Policies, func(p string) bool { return under(file, p) }) {
			out = append(out, c.Name)
		}
	}
	return out
}

// OneCluster is the map of one cluster that `--cluster-label name=value`
// stands for: every path of the repository, series of label=value, and
// no name, so that workloads keep the identity of a run without a map.
func OneCluster(label, value string) *ClusterMap {
	return &ClusterMap{Meta: Meta{Kind: KindClusterMap, Name: "--cluster-label"},
		Spec: ClusterMapSpec{Label: label, Clusters: []ClusterSpec{{LabelValue: value, Paths: []string{"."}}}}}
}

// clusterMaps keeps the one ClusterMap of the repository; two are each
// an error, none used, and every workload is left alone (Broken): which
// map is meant is not known.
func (l *loader) clusterMaps(maps []*ClusterMap) {
	if len(maps) == 1 {
		l.set.ClusterMap = maps[0]
		return
	}
	for i, m := range maps {
		other := maps[(i+1)%len(maps)]
		l.fail(m.Meta, nil, position{File: m.File, Line: m.Line}, "kind",
			"a repository holds one %s; another is at %s:%d, and neither is used", KindClusterMap, other.File, other.Line)
	}
}

// scopeToClusters gives each policy the clusters whose policy
// directories hold its file.
func (l *loader) scopeToClusters() {
	m := l.set.ClusterMap
	if m == nil {
		return
	}
	for _, p := range l.set.Strategies {
		p.Clusters = m.policyClusters(p.File)
	}
	for _, p := range l.set.Proactive {
		p.Clusters = m.policyClusters(p.File)
	}
	for _, p := range l.set.Reactive {
		p.Clusters = m.policyClusters(p.File)
	}
	for _, p := range l.set.Broken {
		p.Clusters = m.policyClusters(p.File)
	}
}

// covers reports whether a policy scoped to the clusters of m governs a
// workload of the clusters of ref: every cluster it runs in must be the
// policy's (a policy of every cluster covers all).
func (m Meta) covers(clusters []string) bool {
	if len(m.Clusters) == 0 {
		return true
	}
	if len(clusters) == 0 {
		return false
	}
	for _, c := range clusters {
		if !slices.Contains(m.Clusters, c) {
			return false
		}
	}
	return true
}

// ClusterMapError is a problem of the map a run was given beside the
// repository's: it cannot be both.
func ClusterMapError(m *ClusterMap, flag string) error {
	return &located.Error{File: m.File, Line: m.Line, Field: "kind",
		Err: fmt.Errorf("the repository maps its clusters, so %s, the map of one cluster, cannot be used with it", flag)}
}
