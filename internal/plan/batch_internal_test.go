package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestBatchFormatsEachQueryKeyOnce: workloads governed by the same rules
// join one query, and finding it costs them next to nothing: the key of
// their rules was formatted anew for each, 17 allocations a workload.
// Rules alike but built apart still share the query.
func TestBatchFormatsEachQueryKeyOnce(t *testing.T) {
	const n = 1000
	rules := func() engine.Rules {
		return engine.Rules{Strategy: &engine.StrategyRules{}, Proactive: &engine.ProactiveRules{Window: 24 * time.Hour}}
	}
	// A governance is built once for the workloads of its policies.
	shared := policy.Governance{Rules: rules(), Containers: []string{"vllm"}}
	apart := policy.Governance{Rules: rules(), Containers: []string{"vllm"}}
	work := make([]pending, n)
	for i := range work {
		g := shared
		if i == n-1 {
			g = apart
		}
		work[i] = pending{
			w:   patcher.Workload{Ref: usage.Ref{Namespace: "serving", Kind: "Deployment", Name: fmt.Sprintf("d%04d", i)}},
			g:   g,
			cur: engine.Allocation{Form: engine.Fraction, GPUs: 0.5},
		}
	}
	var p *Plan
	allocs := testing.AllocsPerRun(5, func() {
		p = &Plan{}
		groups, keys := map[string]int{}, map[rulesRef]string{}
		for _, pw := range work {
			p.batch(time.Time{}, pw, groups, keys)
		}
	})
	if len(p.Queries) != 1 || len(p.Queries[0].Workloads) != n {
		t.Fatalf("%d queries, want 1 of %d workloads", len(p.Queries), n)
	}
	// What is left: the query's list of workloads growing, and one slice
	// of each workload's refs.
	if per := allocs / n; per > 2 {
		t.Errorf("batching allocated %.1f times a workload, want at most 2", per)
	}
}
