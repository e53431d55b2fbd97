package plan

import (
	"io"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestWriteJSONAllocatesLittleADecision: writing a plan allocates, for
// each decision, what its own values need, not a new encoder, indenting
// buffer and copy of the decision: with 10,000 decisions, those were
// garbage enough to cost the plan two collections.
func TestWriteJSONAllocatesLittleADecision(t *testing.T) {
	if raceDetector {
		t.Skip("allocations are counted without the race detector")
	}
	const n = 200
	d := Decision{
		Decision: engine.Decision{
			Action: engine.Upsize, Urgent: true, Rule: "reactive upsize (compute)",
			Current:     engine.Allocation{Form: engine.Fraction, GPUs: 0.5},
			Recommended: engine.Allocation{Form: engine.Fraction, GPUs: 0.72},
			Evidence:    engine.Evidence{Allocation: 0.5, Ceiling: 1, Floor: 0.05},
		},
		Workload: patcher.Workload{Ref: usage.Ref{Namespace: "serving", Kind: "Deployment", Name: "d00000"}, File: "apps/d.yaml"},
		Policies: []policy.Meta{{Kind: "ClusterGpuReactivePolicy", Name: "reactive"}},
	}
	p := &Plan{At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	for range n {
		p.Decisions = append(p.Decisions, d)
	}
	allocs := testing.AllocsPerRun(5, func() {
		if err := p.WriteJSON(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
	// The reason, the policy's name and the list of names are its own:
	// four allocations a decision, against eight before.
	if per := allocs / n; per > 5 {
		t.Errorf("WriteJSON allocated %.1f times a decision, want at most 5", per)
	}
}
