package consolidate_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// exact is the fewest GPUs that hold the pods under KAI's rules, by
// trying every placement: -1 when none holds them all. It shares no code
// with the package, so that the heuristic is checked against the rules,
// not against itself. Small pools only: pods × device subsets.
func exact(nodes []consolidate.Node, pods []consolidate.Pod) int {
	free := make([][]int, len(nodes))
	for i, n := range nodes {
		free[i] = make([]int, n.GPUs)
		for d := range free[i] {
			free[i][d] = 100
		}
	}
	best := -1
	var place func(k, used int)
	place = func(k, used int) {
		if best >= 0 && used >= best {
			return
		}
		if k == len(pods) {
			best = used
			return
		}
		per, n := steps(pods[k].Share), max(1, pods[k].Share.Devices)
		for i := range free {
			for _, devs := range subsets(len(free[i]), n) {
				if !roomy(free[i], devs, per) {
					continue
				}
				opened := 0
				for _, d := range devs {
					if free[i][d] == 100 {
						opened++
					}
					free[i][d] -= per
				}
				place(k+1, used+opened)
				for _, d := range devs {
					free[i][d] += per
				}
			}
		}
	}
	place(0, 0)
	return best
}

// steps is a share per device in KAI's hundredths, rounded up.
func steps(s consolidate.Share) int {
	if s.Per >= 1 {
		return 100
	}
	return int(kai.CeilFraction(s.Per)*100 + 0.5)
}

func roomy(free []int, devs []int, per int) bool {
	for _, d := range devs {
		if free[d] < per {
			return false
		}
	}
	return true
}

// subsets lists the n-element subsets of 0..size-1.
func subsets(size, n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for first := 0; first+n <= size; first++ {
		for _, rest := range subsets(size-first-1, n-1) {
			s := []int{first}
			for _, r := range rest {
				s = append(s, first+1+r)
			}
			out = append(out, s)
		}
	}
	return out
}

// randomPool is a small pool: up to 3 nodes and 4 GPUs, up to 8 pods of
// fractions (some over two devices) and whole GPUs.
func randomPool(r *rand.Rand) ([]consolidate.Node, []consolidate.Pod) {
	var nodes []consolidate.Node
	for gpus := 4; gpus > 0 && len(nodes) < 3; {
		g := 1 + r.IntN(gpus)
		nodes = append(nodes, node(fmt.Sprintf("n%d", len(nodes)), g, "a"))
		gpus -= g
	}
	var pods []consolidate.Pod
	for i := range 1 + r.IntN(8) {
		var sh consolidate.Share
		switch r.IntN(6) {
		case 0:
			sh = consolidate.Whole(1 + r.IntN(2))
		case 1:
			sh = consolidate.Fraction(float64(1+r.IntN(99))/100, 2)
		default:
			sh = frac(float64(1+r.IntN(99)) / 100)
		}
		pods = append(pods, pod(fmt.Sprintf("ns/p%d-0", i), "", sh))
	}
	return nodes, pods
}

// TestPackAgainstExact: on random small pools, the packing is valid,
// never beats the optimum (which would mean a broken rule) and stays
// within one GPU of it. It places every pod whenever some placement can,
// except in a pool whose every GPU the optimum needs: there greedy
// packing can strand a pod (docs/fleet.md), and Evaluate falls back on
// the placement the pods have.
func TestPackAgainstExact(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 2))
	worse, stranded := 0, 0
	for range pools {
		nodes, pods := randomPool(r)
		opt := exact(nodes, pods)
		got := consolidate.Pack(nodes, pods)
		checkPacking(t, nodes, got)
		if opt < 0 {
			continue
		}
		if len(got.Unplaced) > 0 {
			stranded++
			if gpus := sumGPUs(nodes); opt < gpus {
				t.Errorf("left %v out of %v on %v; %d of the %d GPUs hold them all", got.Unplaced, pods, nodes, opt, gpus)
			}
			continue
		}
		if got.GPUs < opt || got.GPUs > opt+1 {
			t.Errorf("%d GPUs for %v on %v; the optimum is %d", got.GPUs, pods, nodes, opt)
		}
		if got.GPUs > opt {
			worse++
		}
	}
	t.Logf("of %d pools, one GPU above the optimum in %d, a pod stranded in a full pool in %d", pools, worse, stranded)
}

const pools = 10000

func sumGPUs(nodes []consolidate.Node) int {
	n := 0
	for _, x := range nodes {
		n += x.GPUs
	}
	return n
}

// checkPacking holds a packing to KAI's rules: each pod on distinct
// devices of one node, as many as its share asks, no device over one GPU,
// and the count the packing gives.
func checkPacking(t *testing.T, nodes []consolidate.Node, p consolidate.Packing) {
	t.Helper()
	gpus := map[string]int{}
	for _, n := range nodes {
		gpus[n.Name] = n.GPUs
	}
	load := map[string]float64{}
	for _, x := range p.Placed {
		if len(x.Devices) != max(1, x.Share.Devices) {
			t.Fatalf("%s holds %v for %s", x.Pod, x.Devices, x.Share)
		}
		seen := map[int]bool{}
		for _, d := range x.Devices {
			if d < 0 || d >= gpus[x.Node] || seen[d] {
				t.Fatalf("%s on %s devices %v", x.Pod, x.Node, x.Devices)
			}
			seen[d] = true
			load[fmt.Sprintf("%s/%d", x.Node, d)] += float64(steps(x.Share)) / 100
		}
	}
	for dev, l := range load {
		if kai.Above(l, 1) {
			t.Fatalf("device %s holds %v", dev, l)
		}
	}
	if len(load) != p.GPUs {
		t.Fatalf("%d devices hold share, the packing says %d", len(load), p.GPUs)
	}
}
