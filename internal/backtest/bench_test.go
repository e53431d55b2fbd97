package backtest_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// BenchmarkSimulateEngine replays two weeks of one-minute samples of one
// workload through the decision engine at an hourly cadence: 335 decisions
// over up to a week of history each.
func BenchmarkSimulateEngine(b *testing.B) {
	set, err := policy.Load(context.Background(), "../../examples/quickstart/policies")
	if err != nil {
		b.Fatal(err)
	}
	g := set.Govern(policy.Target{Ref: usage.Ref{Namespace: "b", Kind: "Deployment", Name: "w"}, Labels: map[string]string{"nvidia.com/gpu.present": "true"}})
	e := &backtest.Engine{Label: "guide", Governance: g}
	tr := trace("w", 14*24*60, func(i int) float64 { return 20 + 15*math.Sin(float64(i)/200) }, func(i int) float64 { return 30 + 5*math.Cos(float64(i)/700) })
	cfg := backtest.Config{Start: engine.Allocation{Form: engine.WholeGPUs, GPUs: 1}, Cadence: time.Hour, MergeDelay: 2 * time.Hour}
	b.ReportAllocs()
	for b.Loop() {
		backtest.Simulate(tr, e, cfg)
	}
}
