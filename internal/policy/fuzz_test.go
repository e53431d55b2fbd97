package policy_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// FuzzParse feeds arbitrary documents to the loader: it must never panic,
// every problem must name the file, and what loads must be usable.
func FuzzParse(f *testing.F) {
	starter, err := os.ReadFile(starterPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(starter))
	f.Add(strings.Replace(string(starter), "rightsizing.kubex.ai", "gpu-rightsizing.github.io", -1))
	f.Add("apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ProactivePolicy\nmetadata: {name: p, namespace: a}\nspec: {scope: {workloadTypes: [Deployment]}, automationStrategyRef: {name: s}}\n")
	f.Add("apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: GpuConsolidationPolicy\nspec: &a {nodeSelector: *a}\n")
	f.Add("apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ProactivePolicy\nspec: {window: 99999999999d, minHistory: 1h30m}\n")
	f.Fuzz(func(t *testing.T, doc string) {
		set := policy.Parse("f.yaml", []byte(doc))
		for _, e := range set.Errors {
			if !strings.HasPrefix(e.Error(), "f.yaml") {
				t.Fatalf("error does not name the file: %v", e)
			}
		}
		targets := []policy.Target{
			{Ref: usage.Ref{Namespace: "a", Kind: "Deployment", Name: "w"}, Labels: map[string]string{"nvidia.com/gpu.present": "true"}},
			{Ref: usage.Ref{Namespace: "b", Kind: "StatefulSet", Name: "w"}},
		}
		for _, tg := range targets {
			g := set.Govern(tg)
			if g.Skip == "" && g.Strategy == nil {
				t.Fatalf("governed without a strategy: %+v", g)
			}
			if g.Skip == "" && g.Lookback() <= 0 {
				t.Fatalf("governed with no lookback: %+v", g)
			}
		}
	})
}
