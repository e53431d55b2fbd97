package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const strategyDoc = `apiVersion: rightsizing.kubex.ai/v1alpha1
kind: ClusterAutomationStrategy
metadata:
  name: s
spec:
  experimental:
    gpuKaiContract: v1alpha1-2026-07
  enablement:
    gpu:
      requests:
        upsize: true
---
`

func TestScopeSelects(t *testing.T) {
	target := func(ns, kind string, labels map[string]string) policy.Target {
		return policy.Target{Ref: usage.Ref{Namespace: ns, Kind: kind, Name: "w"}, Labels: labels}
	}
	gpu := map[string]string{"nvidia.com/gpu.present": "true", "tier": "gold"}
	tests := []struct {
		name  string
		scope string
		kind  string // ClusterProactivePolicy unless set
		ns    string // metadata.namespace for namespaced kinds
		t     policy.Target
		want  bool
	}{
		{name: "all namespaces", scope: "namespaceSelector: {operator: In, values: ['*']}", t: target("a", "Deployment", nil), want: true},
		{name: "no namespace selector means all", scope: "", t: target("a", "Deployment", nil), want: true},
		{name: "In lists it", scope: "namespaceSelector: {operator: In, values: [a, b]}", t: target("b", "Deployment", nil), want: true},
		{name: "In does not list it", scope: "namespaceSelector: {operator: In, values: [a]}", t: target("c", "Deployment", nil), want: false},
		{name: "NotIn lists it", scope: "namespaceSelector: {operator: NotIn, values: [kube-system]}", t: target("kube-system", "Deployment", nil), want: false},
		{name: "NotIn does not list it", scope: "namespaceSelector: {operator: NotIn, values: [kube-system]}", t: target("ml", "Deployment", nil), want: true},
		{name: "NotIn star excludes all", scope: "namespaceSelector: {operator: NotIn, values: ['*']}", t: target("ml", "Deployment", nil), want: false},
		// A pattern as --namespace takes it: no namespace is named ml-*.
		{name: "In a pattern that matches", scope: "namespaceSelector: {operator: In, values: ['ml-*']}", t: target("ml-train", "Deployment", nil), want: true},
		{name: "In a pattern that does not", scope: "namespaceSelector: {operator: In, values: ['ml-*']}", t: target("web", "Deployment", nil), want: false},
		{name: "NotIn a pattern that matches", scope: "namespaceSelector: {operator: NotIn, values: [kube-*]}", t: target("kube-system", "Deployment", nil), want: false},
		{name: "matchLabels hit", scope: "labelSelector: {matchLabels: {nvidia.com/gpu.present: 'true'}}", t: target("a", "Deployment", gpu), want: true},
		{name: "matchLabels miss", scope: "labelSelector: {matchLabels: {nvidia.com/gpu.present: 'true'}}", t: target("a", "Deployment", nil), want: false},
		{name: "expression In", scope: "labelSelector: {matchExpressions: [{key: tier, operator: In, values: [gold, silver]}]}", t: target("a", "Deployment", gpu), want: true},
		{name: "expression NotIn", scope: "labelSelector: {matchExpressions: [{key: tier, operator: NotIn, values: [gold]}]}", t: target("a", "Deployment", gpu), want: false},
		{name: "expression NotIn absent key", scope: "labelSelector: {matchExpressions: [{key: tier, operator: NotIn, values: [gold]}]}", t: target("a", "Deployment", nil), want: true},
		{name: "expression Exists", scope: "labelSelector: {matchExpressions: [{key: tier, operator: Exists}]}", t: target("a", "Deployment", gpu), want: true},
		{name: "expression DoesNotExist", scope: "labelSelector: {matchExpressions: [{key: tier, operator: DoesNotExist}]}", t: target("a", "Deployment", gpu), want: false},
		{name: "workload type", scope: "", t: target("a", "StatefulSet", gpu), want: false},
		{name: "namespaced kind in its namespace", kind: "ProactivePolicy", ns: "ml", scope: "", t: target("ml", "Deployment", nil), want: true},
		{name: "namespaced kind elsewhere", kind: "ProactivePolicy", ns: "ml", scope: "", t: target("other", "Deployment", nil), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == "" {
				kind = "ClusterProactivePolicy"
			}
			doc := strategyDoc + "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: " + kind + "\nmetadata:\n  name: p\n"
			if tt.ns != "" {
				doc += "  namespace: " + tt.ns + "\n"
			}
			doc += "spec:\n  scope:\n    workloadTypes: [Deployment]\n"
			if tt.scope != "" {
				doc += "    " + tt.scope + "\n"
			}
			doc += "  automationStrategyRef: {name: s}\n"
			set := policy.Parse("p.yaml", []byte(doc))
			require.Empty(t, set.Errors)
			require.Len(t, set.Proactive, 1)
			p := set.Proactive[0]
			require.Equal(t, tt.want, p.Spec.Scope.Selects(p.Meta, tt.t))
			require.Equal(t, tt.want, set.Govern(tt.t).Skip == "")
		})
	}
}

func TestGovernPrecedence(t *testing.T) {
	cluster := func(name string) string {
		return "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterProactivePolicy\nmetadata: {name: " + name +
			"}\nspec:\n  scope: {workloadTypes: [Deployment]}\n  automationStrategyRef: {name: s}\n---\n"
	}
	namespaced := "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ProactivePolicy\nmetadata: {name: local, namespace: ml}\n" +
		"spec:\n  scope: {workloadTypes: [Deployment]}\n  automationStrategyRef: {name: s}\n"
	ml := policy.Target{Ref: usage.Ref{Namespace: "ml", Kind: "Deployment", Name: "w"}}
	other := policy.Target{Ref: usage.Ref{Namespace: "other", Kind: "Deployment", Name: "w"}}

	set := policy.Parse("p.yaml", []byte(strategyDoc+cluster("wide")+namespaced))
	require.Empty(t, set.Errors)
	g := set.Govern(ml)
	require.Empty(t, g.Skip)
	require.Equal(t, "local", g.Policies[0].Name, "a namespaced policy overrides a cluster one")
	require.Equal(t, "wide", set.Govern(other).Policies[0].Name)

	set = policy.Parse("p.yaml", []byte(strategyDoc+cluster("one")+cluster("two")))
	require.Empty(t, set.Errors)
	conflict := set.Govern(other)
	require.Equal(t, engine.CausePolicyConflict, conflict.Skip)
	require.Equal(t, "ClusterProactivePolicy one and ClusterProactivePolicy two both select it", conflict.Why)

	set = policy.Parse("p.yaml", []byte(strategyDoc+cluster("same")+cluster("same")))
	require.Len(t, set.Errors, 2)
	require.Contains(t, set.Errors[0].Error(), "is defined more than once")
	require.Equal(t, engine.CausePolicyInvalid, set.Govern(other).Skip)
}

// TestGovernCarriesPullRequestSettings: a strategy's gitops labels,
// reviewers and grouping reach every workload it governs, sorted and
// without repeats, through whichever policy hands the workload to it.
func TestGovernCarriesPullRequestSettings(t *testing.T) {
	strategy := func(name, gitops string) string {
		return "apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ClusterAutomationStrategy\nmetadata: {name: " + name + "}\n" +
			"spec:\n  experimental: {gpuKaiContract: v1alpha1-2026-07}\n" + gitops + "---\n"
	}
	proactive := func(name, ns, strategy string) string {
		return "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterProactivePolicy\nmetadata: {name: " + name + "}\n" +
			"spec:\n  scope: {namespaceSelector: {operator: In, values: [" + ns + "]}, workloadTypes: [Deployment]}\n" +
			"  automationStrategyRef: {name: " + strategy + "}\n---\n"
	}
	set := policy.Parse("p.yaml", []byte(strategy("team", "  gitops:\n    grouping: namespace\n    labels: [gpu, team-ml, gpu]\n    reviewers: [zoe, ana]\n")+
		strategy("plain", "")+proactive("base", "ml", "team")+proactive("web", "web", "plain")))
	require.Empty(t, set.Errors)

	tests := []struct {
		name string
		ns   string
		want policy.PullRequest
	}{
		{name: "the strategy's settings, sorted and without repeats", ns: "ml",
			want: policy.PullRequest{Grouping: "namespace", Labels: []string{"gpu", "team-ml"}, Reviewers: []string{"ana", "zoe"}}},
		{name: "a strategy without gitops leaves the run's", ns: "web", want: policy.PullRequest{}},
		{name: "an ungoverned workload has none", ns: "other", want: policy.PullRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := set.Govern(policy.Target{Ref: usage.Ref{Namespace: tt.ns, Kind: "Deployment", Name: "w"}})
			require.Equal(t, tt.want, g.PullRequest)
		})
	}
}

// TestGovernSharesRules: workloads the same policies govern share one
// copy of their rules, built once, rather than a copy each (a twentieth
// of a plan's memory at 10,000 workloads); what one holder appends to
// its policies never reaches another's.
func TestGovernSharesRules(t *testing.T) {
	doc := "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterProactivePolicy\nmetadata: {name: p}\n" +
		"spec:\n  scope: {workloadTypes: [Deployment]}\n  automationStrategyRef: {name: s}\n"
	set := policy.Parse("p.yaml", []byte(strategyDoc+"---\n"+doc))
	require.Empty(t, set.Errors)
	tests := []struct {
		name string
		a, b policy.Target
	}{
		{name: "two workloads of one namespace",
			a: policy.Target{Ref: usage.Ref{Namespace: "ml", Kind: "Deployment", Name: "a"}},
			b: policy.Target{Ref: usage.Ref{Namespace: "ml", Kind: "Deployment", Name: "b"}}},
		{name: "workloads of two namespaces",
			a: policy.Target{Ref: usage.Ref{Namespace: "ml", Kind: "Deployment", Name: "a"}},
			b: policy.Target{Ref: usage.Ref{Namespace: "web", Kind: "Deployment", Name: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := set.Govern(tt.a), set.Govern(tt.b)
			require.Empty(t, a.Skip)
			require.Same(t, a.Strategy, b.Strategy)
			require.Same(t, a.Proactive, b.Proactive)
			_ = append(a.Policies, policy.Meta{Name: "other"})
			require.Equal(t, []policy.Meta{b.Policies[0]}, b.Policies)
			require.Equal(t, "p", b.Policies[0].Name)
		})
	}
}
