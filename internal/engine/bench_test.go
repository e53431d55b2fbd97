package engine_test

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// BenchmarkDecide is one decision over a week of one-minute samples from
// three pods: the work a run does per workload.
func BenchmarkDecide(b *testing.B) {
	benchmarkDecide(b, "../../examples/quickstart/policies", 7*24*time.Hour, nil)
}

// BenchmarkDecideRecommended is the decision under the recommended
// policies over their 14-day memory window: memory sized on the window's
// peak, and on the p90 of its daily peaks (a read per day of the window
// instead of one).
func BenchmarkDecideRecommended(b *testing.B) {
	const recommended, days = "../../examples/policies/recommended.yaml", 14 * 24 * time.Hour
	b.Run("window peak", func(b *testing.B) { benchmarkDecide(b, recommended, days, nil) })
	b.Run("p90 of daily peaks", func(b *testing.B) {
		benchmarkDecide(b, recommended, days, func(p *engine.ProactiveRules) { p.MemoryDailyPeakPercentile = 90 })
	})
}

func benchmarkDecide(b *testing.B, policies string, history time.Duration, set func(*engine.ProactiveRules)) {
	root, files := policies, []string(nil)
	if filepath.Ext(policies) == ".yaml" {
		root, files = filepath.Dir(policies), []string{filepath.Base(policies)}
	}
	ps, err := policy.Load(b.Context(), root, files...)
	if err != nil {
		b.Fatal(err)
	}
	g := ps.Govern(policy.Target{
		Ref:    usage.Ref{Namespace: "inference", Kind: "Deployment", Name: "chat"},
		Labels: map[string]string{"nvidia.com/gpu.present": "true"},
	})
	if set != nil {
		p := *g.Rules.Proactive
		set(&p)
		g.Rules.Proactive = &p
	}
	w := usage.Workload{Step: time.Minute}
	for i := range 3 {
		p := usage.Pod{Name: string(rune('a' + i)), Series: map[usage.Metric][]usage.Sample{}}
		for ago := history; ago >= 0; ago -= time.Minute {
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
