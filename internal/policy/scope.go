package policy

import (
	"fmt"
	"path"
	"slices"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Target is what scope matching knows about a workload.
type Target struct {
	Ref    usage.Ref
	Labels map[string]string
}

// Selects reports whether the scope, of a policy described by m, selects t.
func (s *Scope) Selects(m Meta, t Target) bool {
	if !m.Clustered() && t.Ref.Namespace != m.Namespace || !m.covers(t.Ref.Clusters()) {
		return false
	}
	if ns := s.NamespaceSelector; ns != nil && m.Clustered() {
		listed := slices.ContainsFunc(ns.Values, func(v string) bool { return namespaceMatches(v, t.Ref.Namespace) })
		if (ns.Operator == "In") != listed {
			return false
		}
	}
	if !slices.Contains(s.WorkloadTypes, t.Ref.Kind) {
		return false
	}
	return s.LabelSelector.Matches(t.Labels)
}

// namespaceMatches reports whether a namespaceSelector value selects
// namespace ns: the name itself, or a pattern as --namespace takes it
// (path.Match: team-*, ml-?; `*` is every namespace). A namespace's name
// holds none of *, ? and [, so a value that does was always a pattern.
func namespaceMatches(value, ns string) bool {
	if value == ns {
		return true
	}
	ok, err := path.Match(value, ns)
	return err == nil && ok
}

// Matches reports whether labels satisfy the selector. A nil selector
// matches everything.
func (ls *LabelSelector) Matches(labels map[string]string) bool {
	if ls == nil {
		return true
	}
	for k, v := range ls.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range ls.MatchExpressions {
		v, ok := labels[r.Key]
		switch r.Operator {
		case "In":
			if !ok || !slices.Contains(r.Values, v) {
				return false
			}
		case "NotIn":
			if ok && slices.Contains(r.Values, v) {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Governance is what governs one workload.
type Governance struct {
	// Skip, when not empty, says why the workload must be left alone, and
	// Why says it in words; the other fields are then unset.
	Skip engine.Cause
	Why  string

	// Rules are the governing policies' rules; Proactive or Reactive is
	// nil when no such policy selects the workload.
	engine.Rules
	// Policies names the governing policies, for reasons and PR bodies.
	Policies []Meta
	// Containers restricts the containers whose usage counts.
	Containers []string
	// PullRequest is the strategy's gitops settings for the pull request
	// that carries the workload's change.
	PullRequest PullRequest
}

// PullRequest is what a strategy's spec.gitops says about the pull request
// of a workload it governs. It is data for publishing, not for deciding:
// the engine never sees it.
type PullRequest struct {
	// Grouping is workload, namespace or policy; empty leaves it to the run.
	Grouping string
	// Labels and Reviewers are added to the pull request's own, sorted and
	// without repeats.
	Labels, Reviewers []string
}

// Govern finds the policies and strategy that govern t. A workload that an
// invalid policy could govern is left alone, as is one that two policies of
// the same kind and level both claim.
func (s *Set) Govern(t Target) Governance {
	for _, b := range s.Broken {
		if b.couldSelect(t) {
			what := b.Meta.String()
			if b.Kind == "" {
				what = "a policy file"
			}
			return Governance{Skip: engine.CausePolicyInvalid, Why: fmt.Sprintf("%s is invalid (%s:%d) and could govern it", what, b.File, b.Line)}
		}
	}
	var pro []*ProactivePolicy
	for _, p := range s.Proactive {
		if p.Spec.Scope.Selects(p.Meta, t) {
			pro = append(pro, p)
		}
	}
	var re []*ReactivePolicy
	for _, p := range s.Reactive {
		if p.Spec.Scope.Selects(p.Meta, t) {
			re = append(re, p)
		}
	}
	p, why := mostSpecific(pro)
	if why != "" {
		return Governance{Skip: engine.CausePolicyConflict, Why: why}
	}
	r, why := mostSpecific(re)
	if why != "" {
		return Governance{Skip: engine.CausePolicyConflict, Why: why}
	}
	if p == nil && r == nil {
		return Governance{Skip: engine.CauseOutOfScope, Why: "no policy selects it"}
	}
	m := s.governed
	if m == nil {
		return governBy(p, r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.by[governPair{p, r}]
	if !ok {
		g = governBy(p, r)
		m.by[governPair{p, r}] = g
	}
	return g
}

// governBy is the governance of the policies p and r, either nil, that
// select a workload. Its rules are shared by every workload they govern
// (Set.governed): nothing changes rules once built.
func governBy(p *ProactivePolicy, r *ReactivePolicy) Governance {
	g := Governance{}
	switch {
	case p != nil && r != nil && p.strategy != r.strategy:
		return Governance{Skip: engine.CausePolicyConflict, Why: fmt.Sprintf("%s and %s select it but use different strategies (%s, %s)",
			p.Meta, r.Meta, p.strategy.Name, r.strategy.Name)}
	case p != nil:
		g.Strategy = p.strategy.rules()
		g.PullRequest = p.strategy.pullRequest()
	default:
		g.Strategy = r.strategy.rules()
		g.PullRequest = r.strategy.pullRequest()
	}
	if p != nil {
		g.Proactive = p.rules()
		g.Policies = append(g.Policies, p.Meta)
		g.Containers = p.Spec.Scope.Containers
	}
	if r != nil {
		g.Reactive = r.rules()
		g.Policies = append(g.Policies, r.Meta)
		if len(r.Spec.Scope.Containers) > 0 {
			g.Containers = r.Spec.Scope.Containers
		}
	}
	// Shared: an append by one holder must not write into another's.
	g.Policies = slices.Clip(g.Policies)
	return g
}

// mostSpecific picks the policy that governs among those that select a
// workload: a namespaced policy overrides cluster-wide ones, and at each
// level one of a cluster's own policy directories overrides one of every
// cluster; two at the same level are a conflict nobody should resolve by
// guessing.
func mostSpecific[P governing](ps []P) (P, string) {
	var zero P
	if len(ps) == 0 {
		return zero, ""
	}
	rank := func(m Meta) int {
		r := 0
		if !m.Clustered() {
			r += 2
		}
		if len(m.Clusters) > 0 {
			r++
		}
		return r
	}
	top := 0
	for _, p := range ps {
		top = max(top, rank(p.meta()))
	}
	ps = slices.DeleteFunc(slices.Clone(ps), func(p P) bool { return rank(p.meta()) < top })
	if len(ps) > 1 {
		return zero, fmt.Sprintf("%s and %s both select it", ps[0].meta(), ps[1].meta())
	}
	return ps[0], ""
}

// couldSelect reports whether a broken policy might govern t.
func (b *Broken) couldSelect(t Target) bool {
	if b.Kind == KindStrategy || b.Kind == KindClusterStrategy || b.Kind == KindConsolidation {
		// A strategy governs through the policies that refer to it, and
		// those are broken in turn; consolidation changes no workload.
		return false
	}
	if !b.covers(t.Ref.Clusters()) {
		return false
	}
	if b.Scope == nil {
		return b.Namespace == "" || b.Namespace == t.Ref.Namespace
	}
	return b.Scope.Selects(b.Meta, t)
}
