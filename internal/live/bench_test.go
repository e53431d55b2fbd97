package live_test

import (
	"fmt"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/live"
)

// BenchmarkApplyDryRun is what the live path costs per urgent upsize
// before it writes, on a real API server: the Deployment read, its KAI
// queue read, and the Deployments of the namespace listed for the queue's
// sum (50 here, all in the queue). The write is one more request.
func BenchmarkApplyDryRun(b *testing.B) {
	s := startClusterB(b)
	s.s.Apply(b, queueManifest("bench", -1))
	for i := range 50 {
		s.applyAsB(b, workload{ns: "inference", name: fmt.Sprintf("w%02d", i), fraction: "0.30", args: vllmArgs, queue: "bench", replicas: 2})
	}
	a := live.NewApplier(s.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 1 << 30, DryRun: true})
	tg := target(workload{ns: "inference", name: "w00"})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := a.Apply(b.Context(), tg)
		if err != nil || res.Outcome != live.WouldApply {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
