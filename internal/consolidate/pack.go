package consolidate

import (
	"cmp"
	"slices"
)

// state is the free share of every device of a pool, in steps, per node
// in the pool's order.
type state [][]int

func newState(nodes []Node) state {
	s := make(state, len(nodes))
	for i, n := range nodes {
		s[i] = make([]int, max(0, n.GPUs))
		for d := range s[i] {
			s[i][d] = full
		}
	}
	return s
}

func (s state) clone() state {
	c := make(state, len(s))
	for i := range s {
		c[i] = slices.Clone(s[i])
	}
	return c
}

func (s state) take(node int, devs []int, per int) {
	for _, d := range devs {
		s[node][d] -= per
	}
}

func (s state) give(node int, devs []int, per int) {
	for _, d := range devs {
		s[node][d] += per
	}
}

// used is a node's share in use, in steps.
func (s state) used(node int) int {
	u := 0
	for _, f := range s[node] {
		u += full - f
	}
	return u
}

// inUse counts the devices holding any share, and the nodes holding any.
func (s state) inUse() (gpus, nodes int) {
	for _, devs := range s {
		n := 0
		for _, f := range devs {
			if f < full {
				n++
			}
		}
		gpus += n
		if n > 0 {
			nodes++
		}
	}
	return gpus, nodes
}

// fit picks the devices of one node a share would take: the n tightest
// that hold it (the lowest index among equals), so that a used device
// with room is filled before an empty one is opened. opened counts the
// empty devices taken, leftover the room left on the ones taken. devs is
// built in buf, which best reuses: packing a large pool calls fit for
// every pod on every node.
func fit(free []int, per, n int, buf []int) (devs []int, opened, leftover int, ok bool) {
	devs = buf[:0]
	if n == 1 {
		return fitOne(free, per, devs)
	}
	for d, f := range free {
		if f >= per {
			devs = append(devs, d)
		}
	}
	if len(devs) < n {
		return devs[:0], 0, 0, false
	}
	slices.SortStableFunc(devs, func(a, b int) int { return cmp.Compare(free[a], free[b]) })
	devs = devs[:n]
	for _, d := range devs {
		if free[d] == full {
			opened++
		}
		leftover += free[d] - per
	}
	slices.Sort(devs)
	return devs, opened, leftover, true
}

// fitOne is fit for one device, the common case, without sorting.
func fitOne(free []int, per int, buf []int) (devs []int, opened, leftover int, ok bool) {
	at := -1
	for d, f := range free {
		if f >= per && (at < 0 || f < free[at]) {
			at = d
		}
	}
	if at < 0 {
		return buf, 0, 0, false
	}
	if free[at] == full {
		opened = 1
	}
	return append(buf, at), opened, free[at] - per, true
}

// where is a choice among nodes: which may take the share, and a rank
// that comes before everything else in choosing (lower first).
type where struct {
	allowed func(node int) bool
	rank    func(node int) int
}

// best is best fit over a pool: the node whose fit opens the fewest empty
// devices, then prefers a node already in use (so that the packing
// empties nodes as well as GPUs), then leaves the least room, then comes
// first. Every choice is by these integers and the pool's order, so the
// packing is deterministic.
func (s state) best(per, n int, w where) (node int, devs []int, ok bool) {
	var bestKey [5]int
	var buf []int
	node = -1
	for i := range s {
		if w.allowed != nil && !w.allowed(i) {
			continue
		}
		d, opened, leftover, fits := fit(s[i], per, n, buf)
		buf = d[:0]
		if !fits {
			continue
		}
		fresh := 0
		if s.used(i) == 0 {
			fresh = 1
		}
		rank := 0
		if w.rank != nil {
			rank = w.rank(i)
		}
		key := [5]int{rank, opened, fresh, leftover, i}
		if node < 0 || slices.Compare(key[:], bestKey[:]) < 0 {
			node, devs, bestKey = i, append(devs[:0], d...), key
		}
	}
	return node, devs, node >= 0
}

// An order is a way to sort pods for packing, decreasing: the first key
// the pod's difficulty, the pod's name for ties.
type order func(a, b Share) int

// orders are the decreasing orders Pack tries. Most devices first places
// the pods only a large node can hold while large nodes are empty; the
// largest share first is classic first fit decreasing, better where
// single fractions are tight; the largest total sits between. Each wins
// some pools (the exact tests count them), so Pack keeps the best.
func orders() [3]order {
	return [...]order{
		func(a, b Share) int {
			return cmp.Or(cmp.Compare(b.devices(), a.devices()), cmp.Compare(b.steps(), a.steps()))
		},
		func(a, b Share) int {
			return cmp.Or(cmp.Compare(b.steps(), a.steps()), cmp.Compare(b.devices(), a.devices()))
		},
		func(a, b Share) int {
			return cmp.Or(cmp.Compare(b.steps()*b.devices(), a.steps()*a.devices()), cmp.Compare(b.devices(), a.devices()))
		},
	}
}

// byDemand sorts pod indexes by the first order: the one placements of
// single pods (drains, resizes) use.
func byDemand(pods []Pod, idx []int) { sortBy(orders()[0], pods, idx) }

func sortBy(o order, pods []Pod, idx []int) {
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(o(pods[a].Share, pods[b].Share), cmp.Compare(pods[a].Key(), pods[b].Key()))
	})
}

// Placed is where a pod is, or would be.
type Placed struct {
	Pod     string `json:"pod"`
	Node    string `json:"node"`
	Devices []int  `json:"devices"`
	Share   Share  `json:"share"`
}

// Packing is the pods packed from scratch onto a pool's GPUs.
type Packing struct {
	// GPUs and Nodes count the devices and nodes holding any share.
	GPUs, Nodes int
	Placed      []Placed
	// Unplaced names the pods that fit no GPU of the pool.
	Unplaced []string
}

// Pack places every pod on the nodes as if none were placed yet, by best
// fit decreasing under KAI's rules: a pod takes Devices GPUs of one node,
// each with at least Per free; no device holds more than one GPU. The
// pods' own Node and Devices are ignored: this is what the pool needs,
// not where the pods are. Ties go to the earlier node.
func Pack(nodes []Node, pods []Pod) Packing {
	var best Packing
	for i, o := range orders() {
		p := packBy(o, nodes, pods)
		if i == 0 || len(p.Unplaced) < len(best.Unplaced) || len(p.Unplaced) == len(best.Unplaced) && p.GPUs < best.GPUs {
			best = p
		}
	}
	return best
}

func packBy(o order, nodes []Node, pods []Pod) Packing {
	s := newState(nodes)
	idx := make([]int, len(pods))
	for i := range idx {
		idx[i] = i
	}
	sortBy(o, pods, idx)
	var p Packing
	for _, i := range idx {
		sh := pods[i].Share
		node, devs, ok := s.best(sh.steps(), sh.devices(), where{})
		if !ok {
			p.Unplaced = append(p.Unplaced, pods[i].Key())
			continue
		}
		s.take(node, devs, sh.steps())
		p.Placed = append(p.Placed, Placed{Pod: pods[i].Key(), Node: nodes[node].Name, Devices: devs, Share: sh})
	}
	slices.SortFunc(p.Placed, func(a, b Placed) int { return cmp.Compare(a.Pod, b.Pod) })
	slices.Sort(p.Unplaced)
	p.GPUs, p.Nodes = s.inUse()
	return p
}
