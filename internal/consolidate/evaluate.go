package consolidate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Report is one policy's pool, now and once the open pull requests merge.
type Report struct {
	// Cluster is the cluster of the ClusterMap whose pool this is, ""
	// without a map: pools are never packed across clusters.
	Cluster          string `json:"cluster,omitempty"`
	Policy           string `json:"policy"`
	ThresholdPercent int    `json:"thresholdPercent"`
	// Nodes and GPUs are the pool's size: the nodes its selector matches.
	Nodes int `json:"nodes"`
	GPUs  int `json:"gpus"`
	// InUse counts the GPUs holding any share now, where the pods are.
	InUse int `json:"inUse"`
	// NeededNow and NeededAfter are the GPUs the pool's pods need packed
	// from scratch, at today's shares and at the recommended ones.
	NeededNow   int `json:"neededNow"`
	NeededAfter int `json:"neededAfter"`
	// InUseAfter counts the GPUs holding any share once the
	// recommendations merge and every drainable candidate is drained.
	InUseAfter int `json:"inUseAfter"`
	// Candidates are the nodes used below the threshold, least used
	// first, each drainable or not and why.
	Candidates []Candidate `json:"candidates"`
	// Moves are every change of place the report proposes: pods a resize
	// no longer fits where they are, then the drains.
	Moves []Move `json:"moves"`
	// Placement is where every placed pod of the pool ends, at its
	// recommended share, after the moves.
	Placement []Placed `json:"placement"`
	// Unplaced names the pods that fit nowhere: on their own node now, or
	// anywhere in the pool after a resize.
	Unplaced []string `json:"unplaced"`
	// Notes say what in the input was odd and how it was read.
	Notes []string `json:"notes"`
	// Unmodelled is what a drain here does not account for.
	Unmodelled []Constraint `json:"unmodelled"`
	// Rollouts is the rollout room of each upsize with pods in the pool.
	Rollouts []Room `json:"rollouts,omitempty"`
}

// Candidate is a node under the threshold.
type Candidate struct {
	Node string `json:"node"`
	GPUs int    `json:"gpus"`
	// Used is the node's share in GPUs once the recommendations merge,
	// before any drain: the number the candidate rule compares.
	Used      float64 `json:"used"`
	Drainable bool    `json:"drainable"`
	// Moves free the node when it is drainable.
	Moves []Move `json:"moves"`
	// Why says what keeps it when it is not.
	Why string `json:"why,omitempty"`
}

// Move takes a pod from its place to another of the same pool.
type Move struct {
	Pod      string    `json:"pod"`
	Workload usage.Ref `json:"workload"`
	Share    Share     `json:"share"`
	From     Slot      `json:"from"`
	To       Slot      `json:"to"`
	// Reason is "resized" for a pod its recommendation no longer fits
	// where it is, or "drain <node>".
	Reason string `json:"reason"`
}

// Slot is a node and its devices.
type Slot struct {
	Node    string `json:"node"`
	Devices []int  `json:"devices"`
}

func (s Slot) String() string {
	d := make([]string, len(s.Devices))
	for i, x := range s.Devices {
		d[i] = fmt.Sprint(x)
	}
	return s.Node + "/" + strings.Join(d, ",")
}

// pool is one policy's nodes and the pods on them, in a fixed order.
type pool struct {
	nodes []Node
	index map[string]int
	pods  []Pod
	// after is each pod at its recommended share.
	after []Share
	// pos is where each pod is; node -1 when it is nowhere.
	pos   []slot
	notes []string
}

type slot struct {
	node int
	devs []int
}

// Evaluate reports on the pool of one policy: the nodes of placement its
// selector matches and the pods on them, resized as recs recommend (by
// workload; a workload without one keeps its share). Pods on nodes
// outside the pool are not its business, and no move leaves it.
func Evaluate(p Policy, placement Placement, recs map[usage.Ref]engine.Allocation) Report {
	pl := newPool(p, placement)
	r := Report{Policy: p.Name, ThresholdPercent: p.ThresholdPercent, Nodes: len(pl.nodes), Unmodelled: Unmodelled()}
	for _, n := range pl.nodes {
		r.GPUs += max(0, n.GPUs)
	}
	now := pl.placeNow()
	r.InUse, _ = now.inUse()
	pl.resize(recs)
	r.Rollouts = pl.rolloutRoom(now.clone(), placement.Pods, placement.Rollouts, placement.Queues)
	after := make([]Pod, len(pl.pods))
	for i, pod := range pl.pods {
		after[i] = pod
		after[i].Share = pl.after[i]
	}
	heldNow := !slices.ContainsFunc(pl.pos, func(x slot) bool { return x.node < 0 })
	r.NeededNow = needed(Pack(pl.nodes, pl.pods), r.InUse, heldNow)
	s, resized := pl.resettle()
	s, r.Candidates, r.Moves = pl.drain(s, p.ThresholdPercent)
	r.Moves = append(resized, r.Moves...)
	r.InUseAfter, _ = s.inUse()
	heldAfter := !slices.ContainsFunc(pl.pos, func(x slot) bool { return x.node < 0 })
	r.NeededAfter = needed(Pack(pl.nodes, after), r.InUseAfter, heldAfter)
	for i, pod := range pl.pods {
		if pl.pos[i].node < 0 {
			r.Unplaced = append(r.Unplaced, pod.Key())
			continue
		}
		r.Placement = append(r.Placement, Placed{Pod: pod.Key(), Node: pl.nodes[pl.pos[i].node].Name, Devices: pl.pos[i].devs, Share: pl.after[i]})
	}
	r.Notes = pl.notes
	return r
}

// needed is what a pool needs: the packing's count, unless a placement
// known to hold every pod (where they are, or will be) uses fewer GPUs
// or the packing strands a pod, which greedy packing can in a pool whose
// every GPU is needed. Either way the count is one a valid placement
// reaches.
func needed(p Packing, held int, heldAll bool) int {
	if heldAll && (len(p.Unplaced) > 0 || held < p.GPUs) {
		return held
	}
	return p.GPUs
}

// newPool keeps the nodes the selector matches, by name, and the pods on
// them, by namespace and name. A nil selector matches nothing: a policy
// without one must not take in the whole cluster.
func newPool(p Policy, in Placement) *pool {
	pl := &pool{index: map[string]int{}}
	models := map[string]bool{}
	for _, n := range in.Nodes {
		if p.Nodes == nil || !p.Nodes.Matches(n.Labels) {
			continue
		}
		if _, dup := pl.index[n.Name]; dup {
			pl.note("node %s is listed twice; the first is kept", n.Name)
			continue
		}
		pl.index[n.Name] = len(pl.nodes)
		pl.nodes = append(pl.nodes, n)
		if n.Model != "" {
			models[n.Model] = true
		}
	}
	slices.SortStableFunc(pl.nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	for i, n := range pl.nodes {
		pl.index[n.Name] = i
	}
	if len(models) > 1 {
		names := make([]string, 0, len(models))
		for m := range models {
			names = append(names, fmt.Sprintf("%q", m))
		}
		slices.Sort(names)
		pl.note("the pool mixes GPU models %s: a share of one is not a share of another, so a move between them may not fit", strings.Join(names, ", "))
	}
	for _, pod := range in.Pods {
		if _, ok := pl.index[pod.Node]; ok {
			pl.pods = append(pl.pods, pod)
		}
	}
	slices.SortStableFunc(pl.pods, func(a, b Pod) int { return cmp.Compare(a.Key(), b.Key()) })
	for _, pod := range pl.pods {
		if !pod.Share.Valid() {
			pl.note("pod %s has no valid share (%v of %d devices); it is counted as %s", pod.Key(), pod.Share.Per, pod.Share.Devices, pod.Share)
		}
	}
	return pl
}

func (pl *pool) note(format string, args ...any) {
	pl.notes = append(pl.notes, fmt.Sprintf(format, args...))
}

// placeNow puts each pod where it is: on the devices it names when they
// are its node's and have room, else on its node by best fit, the
// largest first, as KAI's bin packing would. A pod its node cannot hold
// is nowhere, and noted: the input contradicts itself.
func (pl *pool) placeNow() state {
	s := newState(pl.nodes)
	pl.pos = make([]slot, len(pl.pods))
	var unknown []int
	for i, pod := range pl.pods {
		node := pl.index[pod.Node]
		if pod.Devices == nil {
			unknown = append(unknown, i)
			continue
		}
		if !pinnable(s[node], pod.Devices, pod.Share) {
			pl.note("pod %s: devices %v of node %s do not hold %s; it is placed on its node by fit", pod.Key(), pod.Devices, pod.Node, pod.Share)
			unknown = append(unknown, i)
			continue
		}
		devs := slices.Sorted(slices.Values(pod.Devices))
		s.take(node, devs, pod.Share.steps())
		pl.pos[i] = slot{node: node, devs: devs}
	}
	byDemand(pl.pods, unknown)
	for _, i := range unknown {
		own := pl.index[pl.pods[i].Node]
		sh := pl.pods[i].Share
		node, devs, ok := s.best(sh.steps(), sh.devices(), where{allowed: func(n int) bool { return n == own }})
		if !ok {
			pl.note("pod %s (%s) does not fit the GPUs of its node %s; it is left out", pl.pods[i].Key(), sh, pl.pods[i].Node)
			pl.pos[i] = slot{node: -1}
			continue
		}
		s.take(node, devs, sh.steps())
		pl.pos[i] = slot{node: node, devs: devs}
	}
	return s
}

// pinnable reports whether a pod's named devices are distinct devices of
// the node, one per device of its share, each with room for it.
func pinnable(free []int, devs []int, sh Share) bool {
	if len(devs) != sh.devices() {
		return false
	}
	seen := map[int]bool{}
	for _, d := range devs {
		if d < 0 || d >= len(free) || seen[d] || free[d] < sh.steps() {
			return false
		}
		seen[d] = true
	}
	return true
}

// resize sets each pod's share as its workload's recommendation will
// once merged. A fraction keeps the pod's number of devices: the
// recommendation sizes gpu-fraction, not gpu-fraction-num-devices.
func (pl *pool) resize(recs map[usage.Ref]engine.Allocation) {
	pl.after = make([]Share, len(pl.pods))
	for i, pod := range pl.pods {
		pl.after[i] = pod.Share
		rec, ok := recs[pod.Workload]
		if !ok {
			continue
		}
		devices := 1
		if !pod.Share.Whole() {
			devices = pod.Share.devices()
		}
		switch {
		case rec.Form == engine.WholeGPUs && rec.GPUs >= 1:
			pl.after[i] = Whole(int(kai.CeilGPUs(rec.GPUs)))
		case (rec.Form == engine.Fraction || rec.Form == engine.GPUMemory) && rec.GPUs > 0:
			pl.after[i] = Fraction(min(1, rec.GPUs), devices)
		default:
			pl.note("workload %s: recommendation %s is not a share this report can place; its pods keep %s", pod.Workload, rec, pod.Share)
		}
	}
}

// resettle moves the pods to their recommended shares. A pod keeps its
// devices while they still hold it, those whose share does not change
// first: a resize rolls the pods it changes, not their neighbours. The
// others are placed by best fit, their own node first, as a rollout's new
// pod would be. It is an approximation: KAI places every
// rolled pod anew, and may put it elsewhere.
func (pl *pool) resettle() (state, []Move) {
	s := newState(pl.nodes)
	var same, changed []int
	for i, pod := range pl.pods {
		if pod.Share.steps() == pl.after[i].steps() && pod.Share.devices() == pl.after[i].devices() {
			same = append(same, i)
		} else {
			changed = append(changed, i)
		}
	}
	byAfter(pl.after, pl.pods, changed)
	var displaced []int
	for _, i := range append(same, changed...) {
		at, sh := pl.pos[i], pl.after[i]
		if at.node < 0 {
			continue
		}
		if len(at.devs) == sh.devices() && pinnable(s[at.node], at.devs, sh) {
			s.take(at.node, at.devs, sh.steps())
			continue
		}
		displaced = append(displaced, i)
	}
	var moves []Move
	for _, i := range displaced {
		from, sh := pl.pos[i], pl.after[i]
		node, devs, ok := s.best(sh.steps(), sh.devices(), where{rank: prefer(from.node)})
		if !ok {
			pl.note("pod %s at %s fits no GPU of the pool", pl.pods[i].Key(), sh)
			pl.pos[i] = slot{node: -1}
			continue
		}
		s.take(node, devs, sh.steps())
		pl.pos[i] = slot{node: node, devs: devs}
		moves = append(moves, pl.move(i, from, pl.pos[i], "resized"))
	}
	return s, moves
}

// prefer ranks one node before all others.
func prefer(node int) func(int) int {
	return func(n int) int {
		if n == node {
			return 0
		}
		return 1
	}
}

// byAfter is byDemand at the recommended shares.
func byAfter(after []Share, pods []Pod, idx []int) {
	resized := make([]Pod, len(pods))
	for i := range pods {
		resized[i] = pods[i]
		resized[i].Share = after[i]
	}
	byDemand(resized, idx)
}

func (pl *pool) move(i int, from, to slot, reason string) Move {
	return Move{Pod: pl.pods[i].Key(), Workload: pl.pods[i].Workload, Share: pl.after[i],
		From: Slot{Node: pl.nodes[from.node].Name, Devices: from.devs},
		To:   Slot{Node: pl.nodes[to.node].Name, Devices: to.devs}, Reason: reason}
}
