package policy

import (
	"fmt"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/located"
)

// link resolves every policy's automationStrategyRef and refuses
// duplicates, turning policies that cannot be resolved into Broken ones.
func (l *loader) link() {
	s := l.set
	strategies := map[string][]*Strategy{}
	for _, st := range s.Strategies {
		strategies[key(st.Meta)] = append(strategies[key(st.Meta)], st)
	}
	brokenStrategies := map[string]bool{}
	for _, b := range s.Broken {
		if b.Kind == KindStrategy || b.Kind == KindClusterStrategy {
			m := b.Meta
			if m.Name == "" {
				// Unnamed, it could be any strategy of its scope.
				m.Name = "*"
			}
			brokenStrategies[key(m)] = true
		}
	}
	var good []*Strategy
	for _, st := range s.Strategies {
		if dups := strategies[key(st.Meta)]; len(dups) > 1 {
			l.fail(st.Meta, nil, position{File: st.File, Line: st.Line}, "metadata.name",
				"%s is defined %d times (%s); none of them is used", st, len(dups), places(dups))
			brokenStrategies[key(st.Meta)] = true
			continue
		}
		good = append(good, st)
	}
	s.Strategies = good

	resolve := func(m Meta, name string) (*Strategy, string) {
		// A policy of a cluster's own directory finds a strategy of that
		// directory first, then one of every cluster.
		scopes := [][]string{nil}
		if len(m.Clusters) > 0 {
			scopes = [][]string{m.Clusters, nil}
		}
		var candidates []Meta
		for _, cs := range scopes {
			if !m.Clustered() {
				candidates = append(candidates, Meta{Kind: KindStrategy, Namespace: m.Namespace, Name: name, Clusters: cs})
			}
			candidates = append(candidates, Meta{Kind: KindClusterStrategy, Name: name, Clusters: cs})
		}
		for _, c := range candidates {
			unnamed := c
			unnamed.Name = "*"
			if brokenStrategies[key(c)] || brokenStrategies[key(unnamed)] {
				return nil, fmt.Sprintf("refers to %s, which is invalid", c)
			}
			if st := strategies[key(c)]; len(st) == 1 {
				return st[0], ""
			}
		}
		if m.Clustered() {
			return nil, fmt.Sprintf("no %s named %q", KindClusterStrategy, name)
		}
		return nil, fmt.Sprintf("no %s named %q in namespace %s, nor a %s of that name", KindStrategy, name, m.Namespace, KindClusterStrategy)
	}

	seen := map[string]int{}
	for _, p := range s.Proactive {
		seen[key(p.Meta)]++
	}
	for _, p := range s.Reactive {
		seen[key(p.Meta)]++
	}
	s.Proactive = linkAll(l, s.Proactive, seen, resolve)
	s.Reactive = linkAll(l, s.Reactive, seen, resolve)
}

// linkAll links each policy to its strategy, keeping those that resolve.
// seen counts the policies of each name, across both kinds: a name used
// twice is a conflict nobody should resolve by guessing.
func linkAll[P governing](l *loader, ps []P, seen map[string]int, resolve func(Meta, string) (*Strategy, string)) []P {
	var linked []P
	for _, p := range ps {
		m := p.meta()
		if seen[key(m)] > 1 {
			l.fail(m, p.scope(), position{File: m.File, Line: m.Line}, "metadata.name", "%s is defined more than once; none of them is used", m)
			continue
		}
		st, why := resolve(m, p.strategyName())
		if st == nil {
			l.fail(m, p.scope(), p.links().refAt, "spec.automationStrategyRef.name", "%s", why)
			continue
		}
		p.links().strategy = st
		linked = append(linked, p)
	}
	return linked
}

func (l *loader) fail(m Meta, scope *Scope, at position, field, format string, args ...any) {
	err := &located.Error{File: at.File, Line: at.Line, Column: at.Column, Field: field, Err: fmt.Errorf(format, args...)}
	l.set.Errors = append(l.set.Errors, err)
	l.set.Broken = append(l.set.Broken, &Broken{Meta: m, Scope: scope, Err: err})
}

// key names a policy among those of its clusters: one of a cluster's own
// directory may take a name one of every cluster (or another cluster's)
// takes.
func key(m Meta) string {
	return m.Kind + "/" + m.Namespace + "/" + m.Name + "@" + strings.Join(m.Clusters, ",")
}

func places(sts []*Strategy) string {
	var out string
	for i, s := range sts {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	return out
}
