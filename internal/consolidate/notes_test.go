package consolidate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The policy loader's node selector is what Evaluate takes.
var _ consolidate.Selector = (*policy.LabelSelector)(nil)

// TestOddInput: what contradicts itself or cannot be placed is said in a
// note and counted as the note says, never dropped silently.
func TestOddInput(t *testing.T) {
	l4 := node("a", 2, "a")
	t4 := consolidate.Node{Name: "b", GPUs: 1, Labels: map[string]string{"pool": "a"}, Model: "T4"}
	tests := []struct {
		name     string
		policy   consolidate.Policy
		in       consolidate.Placement
		recs     map[usage.Ref]engine.Allocation
		notes    []string
		unplaced []string
		nodes    int
	}{
		{
			name:   "a pool without a selector is empty",
			policy: consolidate.Policy{Name: "none", ThresholdPercent: 75},
			in:     consolidate.Placement{Nodes: []consolidate.Node{l4}, Pods: []consolidate.Pod{pod("ns/x-0", "a", frac(0.5), 0)}},
		},
		{
			name:  "mixed GPU models",
			in:    consolidate.Placement{Nodes: []consolidate.Node{l4, t4}},
			notes: []string{`the pool mixes GPU models "L4", "T4": a share of one is not a share of another, so a move between them may not fit`},
			nodes: 2,
		},
		{
			name: "devices that do not hold the pod are placed by fit",
			in: consolidate.Placement{Nodes: []consolidate.Node{l4}, Pods: []consolidate.Pod{
				pod("ns/x-0", "a", frac(0.6), 0),
				pod("ns/y-0", "a", frac(0.6), 0),
				pod("ns/z-0", "a", frac(0.3), 7),
			}},
			notes: []string{
				"pod ns/y-0: devices [0] of node a do not hold 0.60; it is placed on its node by fit",
				"pod ns/z-0: devices [7] of node a do not hold 0.30; it is placed on its node by fit",
			},
			nodes: 1,
		},
		{
			name: "a node that cannot hold its pods",
			in: consolidate.Placement{Nodes: []consolidate.Node{l4}, Pods: []consolidate.Pod{
				pod("ns/x-0", "a", consolidate.Whole(3)),
			}},
			notes:    []string{"pod ns/x-0 (3 GPUs) does not fit the GPUs of its node a; it is left out"},
			unplaced: []string{"ns/x-0"},
			nodes:    1,
		},
		{
			name: "an invalid share and a recommendation without a share",
			in: consolidate.Placement{Nodes: []consolidate.Node{l4}, Pods: []consolidate.Pod{
				pod("ns/x-0", "a", frac(0), 0),
				pod("ns/y-0", "a", frac(0.2), 1),
			}},
			recs: map[usage.Ref]engine.Allocation{ref("ns/y"): {Form: engine.GPUMemory, MiB: 4096}},
			notes: []string{
				"pod ns/x-0 has no valid share (0 of 1 devices); it is counted as 0.01",
				"workload ns/Deployment/y: recommendation 4096 MiB is not a share this report can place; its pods keep 0.20",
			},
			nodes: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			if p.Name == "" {
				p = poolA()
			}
			r := consolidate.Evaluate(p, tt.in, tt.recs)
			require.Equal(t, tt.notes, r.Notes)
			require.Equal(t, tt.unplaced, r.Unplaced)
			require.Equal(t, tt.nodes, r.Nodes)
			if tt.policy.Name == "" {
				checkReport(t, tt.in, r)
			}
		})
	}
}
