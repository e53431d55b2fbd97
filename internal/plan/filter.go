package plan

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Filter narrows a plan to some of the checkout's workloads. It is applied
// before any usage query, so a workload it leaves out costs no series, and
// a run neither proposes nor closes anything for it. The zero Filter
// admits every workload.
type Filter struct {
	// Namespaces admits workloads in any of these namespaces: names or
	// path.Match patterns (team-*). Empty admits every namespace.
	Namespaces []string
	// Selector admits workloads whose own labels match; nil admits any.
	Selector labels.Selector
	// Workloads admits the workloads named namespace/Kind/name,
	// namespace/name or name, each part a name or a path.Match pattern,
	// after cluster: when the repository maps its clusters. Empty admits
	// every workload.
	Workloads []string
	// Clusters admits the workloads of these clusters of the
	// repository's ClusterMap; a definition several clusters deploy, when
	// it names all of them. Empty admits every cluster.
	Clusters []string
}

// ParseSelector reads a label selector the way kubectl does:
// `a=b,c!=d,e in (x,y),!f`.
func ParseSelector(s string) (labels.Selector, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", s, err)
	}
	return sel, nil
}

// CheckNamespaces checks namespace names and patterns, so that a typo in
// a pattern is an error rather than a filter that admits nothing.
func CheckNamespaces(namespaces []string) error {
	for _, ns := range namespaces {
		if err := checkPattern(ns); err != nil {
			return fmt.Errorf("namespace %q: %w", ns, err)
		}
	}
	return nil
}

// CheckClusters checks cluster names, before the map that must hold
// them is read.
func CheckClusters(clusters []string) error { return checkClusterNames(clusters) }

// CheckWorkloads checks workload names: namespace/Kind/name,
// namespace/name or name, each part a name or a pattern, each after
// cluster: when given one.
func CheckWorkloads(workloads []string) error {
	for _, w := range workloads {
		if c, rest, ok := strings.Cut(w, ":"); ok {
			if err := checkPattern(c); err != nil {
				return fmt.Errorf("workload %q: cluster: %w", w, err)
			}
			w = rest
		}
		parts := strings.Split(w, "/")
		if len(parts) > 3 {
			return fmt.Errorf("workload %q: use namespace/Kind/name, namespace/name or name", w)
		}
		for _, part := range parts {
			if err := checkPattern(part); err != nil {
				return fmt.Errorf("workload %q: %w", w, err)
			}
		}
	}
	return nil
}

func checkPattern(p string) error {
	if p == "" {
		return errors.New("empty")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("bad pattern: %w", err)
	}
	return nil
}

// String says the filter as the flags that make it, e.g. `--namespace
// ml-*, --selector team=a`.
func (f Filter) String() string {
	var parts []string
	for _, n := range f.Namespaces {
		parts = append(parts, "--namespace "+n)
	}
	if f.Selector != nil {
		parts = append(parts, "--selector "+f.Selector.String())
	}
	for _, w := range f.Workloads {
		parts = append(parts, "--workload "+w)
	}
	return strings.Join(parts, ", ")
}

// IsZero reports whether the filter admits every workload.
func (f Filter) IsZero() bool {
	return len(f.Namespaces) == 0 && f.Selector == nil && len(f.Workloads) == 0 && len(f.Clusters) == 0
}

// Admits reports whether the workload ref, with its own labels, is in the
// filter.
func (f Filter) Admits(ref usage.Ref, lbls map[string]string) bool {
	return f.admitsRef(ref) && (f.Selector == nil || f.Selector.Matches(labels.Set(lbls)))
}

// MayAdmit reports whether a workload whose labels are unknown (one no
// longer in the checkout) could be in the filter: only when no selector
// is set can that be told, so with one the answer is no, and what the run
// does not see it leaves alone.
func (f Filter) MayAdmit(ref usage.Ref) bool {
	return f.admitsRef(ref) && f.Selector == nil
}

func (f Filter) admitsRef(ref usage.Ref) bool {
	if len(f.Namespaces) > 0 && !matchAny(f.Namespaces, ref.Namespace, false) {
		return false
	}
	if len(f.Clusters) > 0 {
		// A definition several clusters deploy is decided on the usage
		// of all of them: a run that reads only some cannot decide it.
		cs := ref.Clusters()
		if len(cs) == 0 {
			return false
		}
		for _, c := range cs {
			if !slices.Contains(f.Clusters, c) {
				return false
			}
		}
	}
	if len(f.Workloads) == 0 {
		return true
	}
	for _, w := range f.Workloads {
		if namesWorkload(w, ref) {
			return true
		}
	}
	return false
}

// namesWorkload reports whether w (namespace/Kind/name, namespace/name or
// name, each after cluster: when given one) names ref. Kinds are matched
// without regard to case, as kubectl reads deployment for Deployment. A
// cluster matches a definition several clusters deploy when it matches
// one of them, or all of them joined.
func namesWorkload(w string, ref usage.Ref) bool {
	if c, rest, ok := strings.Cut(w, ":"); ok {
		if !match(c, ref.Cluster, false) && !slices.ContainsFunc(ref.Clusters(), func(rc string) bool { return match(c, rc, false) }) {
			return false
		}
		w = rest
	}
	parts := strings.Split(w, "/")
	switch len(parts) {
	case 1:
		return match(parts[0], ref.Name, false)
	case 2:
		return match(parts[0], ref.Namespace, false) && match(parts[1], ref.Name, false)
	case 3:
		return match(parts[0], ref.Namespace, false) && match(parts[1], ref.Kind, true) && match(parts[2], ref.Name, false)
	}
	return false
}

func matchAny(patterns []string, s string, fold bool) bool {
	for _, p := range patterns {
		if match(p, s, fold) {
			return true
		}
	}
	return false
}

// match matches s against a name or a path.Match pattern; patterns are
// checked beforehand, so a bad one matches nothing here.
func match(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}
