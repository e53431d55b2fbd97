package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// BenchmarkDecide is one decision over a week of one-minute samples from
// three pods: the work a run does per workload.
func BenchmarkDecide(b *testing.B) {
	set, err := policy.Load(b.Context(), "../../examples/quickstart/policies")
	if err != nil {
		b.Fatal(err)
	}
	g := set.Govern(policy.Target{
		Ref:    usage.Ref{Namespace: "inference", Kind: "Deployment", Name: "chat"},
		Labels: map[string]string{"nvidia.com/gpu.present": "true"},
	})
	w := usage.Workload{Step: time.Minute}
	for i := range 3 {
		p := usage.Pod{Name: string(rune('a' + i)), Series: map[usage.Metric][]usage.Sample{}}
		for ago := 7 * 24 * time.Hour; ago >= 0; ago -= time.Minute {
			t := at.Add(-ago).UnixMilli()
			x := float64(ago / time.Minute)
			p.Series[usage.Compute] = append(p.Series[usage.Compute], usage.Sample{T: t, V: 20 + 10*math.Sin(x/90)})
			p.Series[usage.Memory] = append(p.Series[usage.Memory], usage.Sample{T: t, V: 40 + 5*math.Cos(x/300)})
		}
		w.Pods = append(w.Pods, p)
	}
	in := engine.Input{At: at, Current: fraction(0.6), Rules: g.Rules, Usage: w}
	b.ReportAllocs()
	for b.Loop() {
		if d := engine.Decide(in); d.Action == engine.Skipped {
			b.Fatal(d.Reason())
		}
	}
}
