package consolidate_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestEvaluate: pools worked by hand. Each case says why its numbers are
// what they are; the packing counts are also the exact optimum, checked
// by exact.
func TestEvaluate(t *testing.T) {
	tests := []struct {
		name  string
		nodes []consolidate.Node
		pods  []consolidate.Pod
		recs  map[usage.Ref]engine.Allocation
		// inUse, now, after, inUseAfter: Report.InUse, NeededNow,
		// NeededAfter, InUseAfter.
		inUse, now, after, inUseAfter int
		// drained lists the drainable candidates; kept maps the others to
		// why not.
		drained []string
		kept    map[string]string
		moves   []string
	}{
		{
			// 0.5 + 0.3 + 0.2 is one GPU. c is the least used, so it goes
			// first, onto the tightest device with room: a (0.5 free
			// before 0.7). Then b's 0.3 fills a exactly. a took pods, so
			// it stays.
			name:  "single-GPU nodes",
			nodes: []consolidate.Node{node("a", 1, "a"), node("b", 1, "a"), node("c", 1, "a")},
			pods: []consolidate.Pod{
				pod("ns/big-0", "a", frac(0.5), 0),
				pod("ns/mid-0", "b", frac(0.3), 0),
				pod("ns/small-0", "c", frac(0.2), 0),
			},
			inUse: 3, now: 1, after: 1, inUseAfter: 1,
			drained: []string{"c", "b"},
			kept:    map[string]string{"a": "it takes the pods drained from c"},
			moves:   []string{"ns/small-0 c/0→a/0 (drain c)", "ns/mid-0 b/0→a/0 (drain b)"},
		},
		{
			// big holds 1.25 of 4 GPUs (31%), small 1.0 of 2 (50%): both
			// candidates, small less used in GPUs so first. Its two 0.5
			// pods take big's two half-free devices, the tightest. Four
			// halves and a quarter need 3 GPUs: that is where it ends.
			name:  "multi-GPU nodes",
			nodes: []consolidate.Node{node("big", 4, "a"), node("small", 2, "a")},
			pods: []consolidate.Pod{
				pod("ns/a-0", "big", frac(0.5), 0),
				pod("ns/b-0", "big", frac(0.5), 1),
				pod("ns/c-0", "big", frac(0.25), 2),
				pod("ns/d-0", "small", frac(0.5), 0),
				pod("ns/e-0", "small", frac(0.5), 1),
			},
			inUse: 5, now: 3, after: 3, inUseAfter: 3,
			drained: []string{"small"},
			kept:    map[string]string{"big": "it takes the pods drained from small"},
			moves:   []string{"ns/d-0 small/0→big/0 (drain small)", "ns/e-0 small/1→big/1 (drain small)"},
		},
		{
			// w2 (0.4 of 2 GPUs) goes first: its pod fits beside the 0.3
			// on w1's second GPU. The whole GPU stays where it is. Device
			// indexes are unknown here: the pods are placed on their
			// nodes by fit, the whole GPU first.
			name:  "mixed whole and fractional, devices unknown",
			nodes: []consolidate.Node{node("w1", 2, "a"), node("w2", 2, "a")},
			pods: []consolidate.Pod{
				pod("ns/train-0", "w1", consolidate.Whole(1)),
				pod("ns/chat-0", "w1", frac(0.3)),
				pod("ns/embed-0", "w2", frac(0.4)),
			},
			inUse: 3, now: 2, after: 2, inUseAfter: 2,
			drained: []string{"w2"},
			kept:    map[string]string{"w1": "it takes the pods drained from w2"},
			moves:   []string{"ns/embed-0 w2/0→w1/1 (drain w2)"},
		},
		{
			// m3 (0.5 of 1 GPU) goes first, onto the tightest room: m2's
			// half-free device, not m1's 0.6-free ones. Then m1's pod,
			// 2×0.4, needs two devices of one node with 0.4 free, and m2
			// has one. Packing from scratch needs 3 GPUs (2×0.4 on m1 with
			// a 0.5 beside each half, the third 0.5 alone), the drains
			// reach 4: least used first is not always the best order.
			name:  "num-devices over one",
			nodes: []consolidate.Node{node("m1", 2, "a"), node("m2", 2, "a"), node("m3", 1, "a")},
			pods: []consolidate.Pod{
				pod("ns/tp-0", "m1", consolidate.Fraction(0.4, 2), 0, 1),
				pod("ns/a-0", "m2", frac(0.5), 0),
				pod("ns/b-0", "m2", frac(0.5), 1),
				pod("ns/solo-0", "m3", frac(0.5), 0),
			},
			inUse: 5, now: 3, after: 3, inUseAfter: 4,
			drained: []string{"m3"},
			kept: map[string]string{
				"m1": "ns/tp-0 (2×0.40) needs 2 GPUs with 0.40 free each on one other node",
				"m2": "it takes the pods drained from m3",
			},
			moves: []string{"ns/solo-0 m3/0→m2/0 (drain m3)"},
		},
		{
			// a1's 0.2 would fit b1, an empty GPU of another pool; a2 has
			// 0.1 free. Nothing leaves the pool, so a1 stays.
			name: "the selector keeps other pools out",
			nodes: []consolidate.Node{node("a1", 1, "a"), node("a2", 1, "a"), node("b1", 1, "b"),
				{Name: "gpu-less", Labels: map[string]string{"pool": "a"}, Model: "L4"}},
			pods: []consolidate.Pod{
				pod("ns/x-0", "a1", frac(0.2), 0),
				pod("ns/y-0", "a2", frac(0.9), 0),
				pod("ns/other-0", "b1", frac(0.1), 0),
			},
			inUse: 2, now: 2, after: 2, inUseAfter: 2,
			kept: map[string]string{"a1": "ns/x-0 (0.20) fits no other GPU with 0.20 free"},
		},
		{
			// n1 and n2 both use 1.0 of 2 GPUs; n1 comes first by name.
			// Its whole GPU needs a free device, and n2 has 0.5 free on
			// each of two: room in sum, not in one device. n2's halves
			// fill n1's free GPU, so n2 drains.
			name:  "a whole GPU does not fit in scattered room",
			nodes: []consolidate.Node{node("n1", 2, "a"), node("n2", 2, "a")},
			pods: []consolidate.Pod{
				pod("ns/train-0", "n1", consolidate.Whole(1), 0),
				pod("ns/a-0", "n2", frac(0.5), 0),
				pod("ns/b-0", "n2", frac(0.5), 1),
			},
			inUse: 3, now: 2, after: 2, inUseAfter: 2,
			drained: []string{"n2"},
			kept:    map[string]string{"n1": "ns/train-0 (1 GPU) needs a free whole GPU on another node"},
			moves:   []string{"ns/a-0 n2/0→n1/1 (drain n2)", "ns/b-0 n2/1→n1/1 (drain n2)"},
		},
		{
			// Two 0.6 pods need two GPUs; their recommendations, 0.4 each,
			// need one. Both nodes are candidates at 0.6 already (60% <
			// 75%), but only after the merge does p's pod fit beside q's.
			name:  "recommendations merged first",
			nodes: []consolidate.Node{node("p", 1, "a"), node("q", 1, "a")},
			pods: []consolidate.Pod{
				pod("ns/chat-0", "p", frac(0.6), 0),
				pod("ns/code-0", "q", frac(0.6), 0),
			},
			recs: map[usage.Ref]engine.Allocation{
				ref("ns/chat"): {Form: engine.Fraction, GPUs: 0.4},
				ref("ns/code"): {Form: engine.Fraction, GPUs: 0.4},
			},
			inUse: 2, now: 2, after: 1, inUseAfter: 1,
			drained: []string{"p"},
			kept:    map[string]string{"q": "it takes the pods drained from p"},
			moves:   []string{"ns/chat-0 p/0→q/0 (drain p)"},
		},
		{
			// An upsize from 0.4 to 0.7 no longer fits beside the 0.5 on
			// r's one GPU: the resized pod moves (its rollout replaces
			// it; its neighbour stays) to s, the only room, before any
			// drain. Then r (0.5) and s (0.7) are both candidates and
			// neither fits beside the other.
			name:  "an upsize moves a pod",
			nodes: []consolidate.Node{node("r", 1, "a"), node("s", 1, "a")},
			pods: []consolidate.Pod{
				pod("ns/steady-0", "r", frac(0.5), 0),
				pod("ns/hot-0", "r", frac(0.4), 0),
			},
			recs:  map[usage.Ref]engine.Allocation{ref("ns/hot"): {Form: engine.Fraction, GPUs: 0.7}},
			inUse: 1, now: 1, after: 2, inUseAfter: 2,
			kept: map[string]string{
				"r": "ns/steady-0 (0.50) fits no other GPU with 0.50 free",
				"s": "ns/hot-0 (0.70) fits no other GPU with 0.70 free",
			},
			moves: []string{"ns/hot-0 r/0→s/0 (resized)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := consolidate.Evaluate(poolA(), consolidate.Placement{Nodes: tt.nodes, Pods: tt.pods}, tt.recs)
			got := []int{r.InUse, r.NeededNow, r.NeededAfter, r.InUseAfter}
			require.Equal(t, []int{tt.inUse, tt.now, tt.after, tt.inUseAfter}, got, "in use, needed now, needed after, in use after")
			var drained []string
			kept := map[string]string{}
			for _, c := range r.Candidates {
				if c.Drainable {
					drained = append(drained, c.Node)
				} else {
					kept[c.Node] = c.Why
				}
			}
			require.Equal(t, tt.drained, drained)
			require.Equal(t, tt.kept, kept)
			var moves []string
			for _, m := range r.Moves {
				moves = append(moves, moveText(m))
			}
			require.Equal(t, tt.moves, moves)
			require.Empty(t, r.Notes)
			require.Equal(t, consolidate.Unmodelled(), r.Unmodelled)

			nodes, now, after := inPool(tt.nodes), inPoolPods(tt.nodes, tt.pods), resized(inPoolPods(tt.nodes, tt.pods), tt.recs)
			require.Equal(t, exact(nodes, now), r.NeededNow, "the optimum now")
			require.Equal(t, exact(nodes, after), r.NeededAfter, "the optimum after")
		})
	}
}

func inPool(nodes []consolidate.Node) []consolidate.Node {
	var out []consolidate.Node
	for _, n := range nodes {
		if n.Labels["pool"] == "a" {
			out = append(out, n)
		}
	}
	return out
}

func inPoolPods(nodes []consolidate.Node, pods []consolidate.Pod) []consolidate.Pod {
	names := map[string]bool{}
	for _, n := range inPool(nodes) {
		names[n.Name] = true
	}
	var out []consolidate.Pod
	for _, p := range pods {
		if names[p.Node] {
			out = append(out, p)
		}
	}
	return out
}

// resized is the pods at their recommended fractions (the cases resize
// single-device fractions only).
func resized(pods []consolidate.Pod, recs map[usage.Ref]engine.Allocation) []consolidate.Pod {
	out := slices.Clone(pods)
	for i := range out {
		if rec, ok := recs[out[i].Workload]; ok {
			out[i].Share = frac(rec.GPUs)
		}
	}
	return out
}

// TestKnownLoss pins where best fit decreasing loses a GPU, the classic
// case: 0.5+0.4 opens a GPU that then has room only for nothing, and the
// 0.3s and a 0.25 fill a second, stranding the last 0.25. The optimum
// pairs 0.5 with the 0.25s and 0.4 with the 0.3s. docs/fleet.md cites it.
func TestKnownLoss(t *testing.T) {
	nodes := []consolidate.Node{node("n", 4, "a")}
	var pods []consolidate.Pod
	for i, f := range []float64{0.5, 0.4, 0.3, 0.3, 0.25, 0.25} {
		pods = append(pods, pod("ns/p"+string(rune('a'+i))+"-0", "", frac(f)))
	}
	require.Equal(t, 2, exact(nodes, pods))
	require.Equal(t, 3, consolidate.Pack(nodes, pods).GPUs)
}
