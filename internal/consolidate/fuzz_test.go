package consolidate_test

import (
	"fmt"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// bytes hands out a fuzz input one small number at a time, zero when it
// runs out.
type bytes []byte

func (b *bytes) next(n int) int {
	if len(*b) == 0 || n <= 0 {
		return 0
	}
	v := int((*b)[0]) % n
	*b = (*b)[1:]
	return v
}

// randomCluster is two pools, a and b, from the fuzz input: nodes of up
// to 8 GPUs, pods of any share (invalid ones included) on nodes of
// either pool or of none, with device indexes right, wrong or unknown,
// and recommendations of every form.
func randomCluster(b *bytes) (consolidate.Placement, map[usage.Ref]engine.Allocation) {
	var in consolidate.Placement
	for i := range 1 + b.next(8) {
		in.Nodes = append(in.Nodes, node(fmt.Sprintf("n%d", i), b.next(9), string(rune('a'+b.next(2)))))
	}
	recs := map[usage.Ref]engine.Allocation{}
	forms := []engine.Form{engine.Fraction, engine.WholeGPUs, engine.GPUMemory, engine.NoGPU}
	for i := range b.next(16) {
		sh := consolidate.Fraction(float64(b.next(120))/100, b.next(4))
		if b.next(4) == 0 {
			sh = consolidate.Whole(b.next(4))
		}
		var devs []int
		if b.next(2) == 0 {
			for range max(1, sh.Devices) {
				devs = append(devs, b.next(10)-1)
			}
		}
		p := pod(fmt.Sprintf("ns/w%d-%d", b.next(6), i), fmt.Sprintf("n%d", b.next(10)), sh, devs...)
		p.Queue = []string{"", "q0", "q1"}[b.next(3)]
		in.Pods = append(in.Pods, p)
		if b.next(3) == 0 {
			recs[p.Workload] = engine.Allocation{Form: forms[b.next(4)], GPUs: float64(b.next(250)) / 100}
		}
	}
	in.Rollouts, in.Queues = randomRollouts(b)
	return in, recs
}

// randomRollouts are rollouts of any shape, valid or not, for some of the
// workloads w0 to w5, and quotas of the queues q0 and q1.
func randomRollouts(b *bytes) ([]consolidate.Rollout, kai.Queues) {
	var rs []consolidate.Rollout
	amount := func() consolidate.Amount {
		if b.next(2) == 0 {
			return consolidate.Count(b.next(5) - 1)
		}
		return consolidate.Percent(b.next(130) - 10)
	}
	for w := range 6 {
		if b.next(3) == 0 {
			continue
		}
		rs = append(rs, consolidate.Rollout{Workload: ref(fmt.Sprintf("ns/w%d", w)), Replicas: b.next(7) - 1,
			GroupSize: b.next(4), MaxSurge: amount(), MaxUnavailable: amount()})
	}
	qs := kai.Queues{}
	for q := range 2 {
		if b.next(3) > 0 {
			name := fmt.Sprintf("q%d", q)
			parent := ""
			if q == 1 && b.next(2) == 0 {
				parent = "q0"
			}
			qs[name] = kai.Queue{Name: name, Parent: parent, Quota: float64(b.next(400)-100) / 100, Limit: float64(b.next(400)-100) / 100}
		}
	}
	return rs, qs
}

// FuzzEvaluate: whatever the pools, no device ends over one GPU, nothing
// moves into or out of the pool, every pod of the pool ends placed or
// named unplaced, and a drained node ends empty.
func FuzzEvaluate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 2, 0, 4, 0, 1, 1, 9, 50, 1, 1, 1, 0, 2, 0, 7, 30, 1, 1, 2, 1, 1, 3, 1})
	f.Add([]byte{7, 8, 0, 8, 1, 4, 0, 15, 99, 2, 1, 0, 1, 2, 3, 1, 0, 0, 1, 40, 0, 3, 0, 1, 1, 1, 200, 70})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := bytes(data)
		in, recs := randomCluster(&b)
		r := consolidate.Evaluate(poolA(), in, recs)
		checkReport(t, in, r)
	})
}

func checkReport(t *testing.T, in consolidate.Placement, r consolidate.Report) {
	t.Helper()
	gpus := map[string]int{}
	for _, n := range in.Nodes {
		if _, dup := gpus[n.Name]; !dup && n.Labels["pool"] == "a" {
			gpus[n.Name] = n.GPUs
		}
	}
	ofPool := map[string]bool{}
	for _, p := range in.Pods {
		if _, ok := gpus[p.Node]; ok {
			ofPool[p.Key()] = true
		}
	}
	seen := map[string]bool{}
	load := map[string]float64{}
	for _, x := range r.Placement {
		if !ofPool[x.Pod] || seen[x.Pod] {
			t.Fatalf("%s placed, of the pool %v, seen %v", x.Pod, ofPool[x.Pod], seen[x.Pod])
		}
		seen[x.Pod] = true
		n, ok := gpus[x.Node]
		if !ok || len(x.Devices) != max(1, x.Share.Devices) {
			t.Fatalf("%s on %s devices %v for %s", x.Pod, x.Node, x.Devices, x.Share)
		}
		distinct := map[int]bool{}
		for _, d := range x.Devices {
			dev := fmt.Sprintf("%s/%d", x.Node, d)
			if d < 0 || d >= n || distinct[d] {
				t.Fatalf("%s on %s", x.Pod, dev)
			}
			distinct[d] = true
			load[dev] += x.Share.GPUs() / float64(max(1, x.Share.Devices))
		}
	}
	for dev, l := range load {
		if kai.Above(l, 1) {
			t.Fatalf("device %s holds %v GPUs", dev, l)
		}
	}
	for _, p := range r.Unplaced {
		if !ofPool[p] || seen[p] {
			t.Fatalf("%s unplaced, of the pool %v, placed %v", p, ofPool[p], seen[p])
		}
		seen[p] = true
	}
	if len(seen) != len(ofPool) {
		t.Fatalf("%d pods accounted for, the pool has %d", len(seen), len(ofPool))
	}
	for _, m := range r.Moves {
		_, from := gpus[m.From.Node]
		_, to := gpus[m.To.Node]
		if !from || !to || !ofPool[m.Pod] {
			t.Fatalf("move %s leaves the pool", moveText(m))
		}
	}
	for _, c := range r.Candidates {
		for _, x := range r.Placement {
			if c.Drainable && x.Node == c.Node {
				t.Fatalf("%s drained, and %s ends on it", c.Node, x.Pod)
			}
		}
	}
	for _, room := range r.Rollouts {
		if room.Placed < 0 || room.Placed > room.Pods || room.Fits != (room.Placed == room.Pods) || room.Extra < 0 ||
			room.Fits == (room.Why != "") || (room.Fits && room.Suggestion != "") {
			t.Fatalf("rollout room %+v", room)
		}
	}
}
