package consolidate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// drain goes through the candidates, least used first, and empties each
// onto the rest of the pool when every one of its pods fits there; a
// node it cannot empty keeps all its pods. Pods go to nodes that are not
// candidates before candidates, so that later candidates stay drainable;
// a candidate that took pods is kept, so that no pod moves twice. Only
// the candidate's own pods move: nothing is shuffled elsewhere to make
// room (where this loses, see docs/fleet.md).
func (pl *pool) drain(s state, threshold int) (state, []Candidate, []Move) {
	cands := pl.candidates(s, threshold)
	isCand := make([]bool, len(pl.nodes))
	used := make([]int, len(pl.nodes))
	for _, c := range cands {
		isCand[c], used[c] = true, s.used(c)
	}
	drained := make([]bool, len(pl.nodes))
	tookFrom := make([]string, len(pl.nodes))
	var out []Candidate
	var moves []Move
	for _, c := range cands {
		cand := Candidate{Node: pl.nodes[c].Name, GPUs: pl.nodes[c].GPUs, Used: float64(used[c]) / full}
		if from := tookFrom[c]; from != "" {
			cand.Why = "it takes the pods drained from " + from
			out = append(out, cand)
			continue
		}
		w := where{
			allowed: func(n int) bool { return n != c && !drained[n] },
			rank: func(n int) int {
				if isCand[n] {
					return 1
				}
				return 0
			},
		}
		t, to, why := pl.empty(s, c, w)
		if why != "" {
			cand.Why = why
			out = append(out, cand)
			continue
		}
		s, drained[c], cand.Drainable = t, true, true
		for _, i := range slices.Sorted(maps.Keys(to)) {
			m := pl.move(i, pl.pos[i], to[i], "drain "+pl.nodes[c].Name)
			cand.Moves = append(cand.Moves, m)
			pl.pos[i] = to[i]
			if tookFrom[to[i].node] == "" {
				tookFrom[to[i].node] = pl.nodes[c].Name
			}
		}
		moves = append(moves, cand.Moves...)
		out = append(out, cand)
	}
	return s, out, moves
}

// candidates are the nodes with GPUs used below the threshold, least
// used first, then by name. A node without a pod is one: it is idle.
func (pl *pool) candidates(s state, threshold int) []int {
	var out []int
	for n, node := range pl.nodes {
		// used is in hundredths of a GPU, so threshold percent of GPUs
		// GPUs is threshold×GPUs of them: the rule in whole numbers.
		if node.GPUs > 0 && s.used(n) < threshold*node.GPUs {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(s.used(a), s.used(b)) })
	return out
}

// empty tries to place every pod of node c elsewhere, the largest first,
// on a copy of the state: the copy and where each pod would go, or why
// the node cannot be emptied.
func (pl *pool) empty(s state, c int, w where) (state, map[int]slot, string) {
	var on []int
	for i, at := range pl.pos {
		if at.node == c {
			on = append(on, i)
		}
	}
	byAfter(pl.after, pl.pods, on)
	t := s.clone()
	to := map[int]slot{}
	for _, i := range on {
		sh := pl.after[i]
		t.give(c, pl.pos[i].devs, sh.steps())
		node, devs, ok := t.best(sh.steps(), sh.devices(), w)
		if !ok {
			return nil, nil, pl.pods[i].Key() + " " + unfit(sh)
		}
		t.take(node, devs, sh.steps())
		to[i] = slot{node: node, devs: devs}
	}
	return t, to, ""
}

// unfit says what a share would need of another node.
func unfit(sh Share) string {
	per := kai.FormatFraction(float64(sh.steps()) / full)
	switch {
	case sh.Whole() && sh.devices() == 1:
		return "(1 GPU) needs a free whole GPU on another node"
	case sh.Whole():
		return fmt.Sprintf("(%s) needs %d free whole GPUs on one other node", sh, sh.devices())
	case sh.devices() > 1:
		return fmt.Sprintf("(%s) needs %d GPUs with %s free each on one other node", sh, sh.devices(), per)
	}
	return fmt.Sprintf("(%s) fits no other GPU with %s free", sh, per)
}
