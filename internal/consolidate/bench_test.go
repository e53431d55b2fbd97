package consolidate_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// bigPool is a 500-node pool of 1-, 2-, 4- and 8-GPU nodes (1,875 GPUs)
// about half used by 2,000 pods, mostly single fractions, some over two
// devices, some whole GPUs, each placed where it fits on its node, and a
// recommendation for every third workload.
func bigPool() (consolidate.Placement, map[usage.Ref]engine.Allocation) {
	r := rand.New(rand.NewPCG(500, 1))
	var in consolidate.Placement
	free := map[string][]int{}
	for i := range 500 {
		n := node(fmt.Sprintf("gpu-%03d", i), []int{1, 2, 4, 8}[i%4], "a")
		in.Nodes = append(in.Nodes, n)
		free[n.Name] = make([]int, n.GPUs)
		for d := range free[n.Name] {
			free[n.Name][d] = 100
		}
	}
	recs := map[usage.Ref]engine.Allocation{}
	for i := 0; len(in.Pods) < 2000; i++ {
		sh := frac(float64(5+r.IntN(60)) / 100)
		switch r.IntN(10) {
		case 0:
			sh = consolidate.Whole(1 + r.IntN(2))
		case 1:
			sh = consolidate.Fraction(float64(5+r.IntN(40))/100, 2)
		}
		n := in.Nodes[r.IntN(len(in.Nodes))]
		devs := room(free[n.Name], sh)
		if devs == nil {
			continue
		}
		p := pod(fmt.Sprintf("ns/w%d-0", i), n.Name, sh, devs...)
		in.Pods = append(in.Pods, p)
		if i%3 == 0 && !sh.Whole() {
			recs[p.Workload] = engine.Allocation{Form: engine.Fraction, GPUs: float64(5+r.IntN(60)) / 100}
		}
	}
	return in, recs
}

// room takes the first devices with room for the share, nil when there
// are too few.
func room(free []int, sh consolidate.Share) []int {
	per := steps(sh)
	var devs []int
	for d, f := range free {
		if f >= per && len(devs) < sh.Devices {
			devs = append(devs, d)
		}
	}
	if len(devs) < sh.Devices {
		return nil
	}
	for _, d := range devs {
		free[d] -= per
	}
	return devs
}

// BenchmarkPack packs the 500-node pool from scratch: the count a report
// makes twice per policy.
func BenchmarkPack(b *testing.B) {
	in, _ := bigPool()
	b.ReportAllocs()
	for b.Loop() {
		if p := consolidate.Pack(in.Nodes, in.Pods); len(p.Unplaced) > 0 {
			b.Fatal(p.Unplaced)
		}
	}
}

// BenchmarkEvaluate is a whole report on the 500-node pool: placing,
// two packings, the resizes and the drains.
func BenchmarkEvaluate(b *testing.B) {
	in, recs := bigPool()
	b.ReportAllocs()
	for b.Loop() {
		consolidate.Evaluate(poolA(), in, recs)
	}
}
