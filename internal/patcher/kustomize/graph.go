package kustomize

import (
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
)

// The include graph of a repository's kustomizations, walked in linear
// time: a chain of thousands is the repository's right, and a walk per
// kustomization over all the others made such a chain quadratic.

// buildLimits bound what builds may expand to, checked on the include
// graph before anything is built: kustomize holds a build's whole output,
// and a few files that include each other twice at every level expand
// exponentially.
type buildLimits struct {
	// Bytes bounds the bytes one root kustomization reads, counted once
	// per include path (as a chart's files are bounded).
	Bytes int64
	// Includes bounds the kustomizations one build reads, counted once
	// per include path.
	Includes int64
	// RunBytes bounds Bytes' count over all the roots of a repository:
	// their outputs are held together, parsed.
	RunBytes int64
	// Time bounds one build, Total all the builds of a run (discovery,
	// proofs, builds again after edits): kustomize's own work grows
	// faster than its input (each object it adds is compared with every
	// one before), so a few hundred kilobytes can take minutes.
	Time, Total time.Duration
}

// defaultBuildLimits: builds of a run hold their outputs together, as the
// checkout's YAML, so they share its bound; a build of thousands of
// objects takes seconds.
func defaultBuildLimits() buildLimits {
	return buildLimits{Bytes: 32 << 20, Includes: 10_000, RunBytes: min(256<<20, checkout.TotalBound()), Time: 30 * time.Second, Total: 10 * time.Minute}
}

// cyclic returns the kustomizations on an include cycle, which kustomize
// refuses, in file order (Tarjan's strongly connected components).
func (ix *Index) cyclic() []*kust {
	index := map[*kust]int{}
	low := map[*kust]int{}
	onStack := map[*kust]bool{}
	var stack []*kust
	on := map[*kust]bool{}
	var visit func(k *kust)
	visit = func(k *kust) {
		index[k], low[k] = len(index), len(index)
		stack = append(stack, k)
		onStack[k] = true
		self := false
		for _, d := range k.dirs {
			sub := ix.byDir[d]
			switch {
			case sub == nil:
			case sub == k:
				self = true
			case !has(index, sub):
				visit(sub)
				low[k] = min(low[k], low[sub])
			case onStack[sub]:
				low[k] = min(low[k], index[sub])
			}
		}
		if low[k] != index[k] {
			return
		}
		var scc []*kust
		for {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[top] = false
			scc = append(scc, top)
			if top == k {
				break
			}
		}
		if len(scc) > 1 || self {
			for _, c := range scc {
				on[c] = true
			}
		}
	}
	for _, k := range ix.kusts {
		if !has(index, k) {
			visit(k)
		}
	}
	var out []*kust
	for _, k := range ix.kusts {
		if on[k] {
			out = append(out, k)
		}
	}
	return out
}

func has[K comparable, V any](m map[K]V, k K) bool { _, ok := m[k]; return ok }

// fold computes f for k from its value and those of the kustomizations it
// includes (subs, in include order, with their values), each once: memo
// holds what is known. A kustomization met again on an include cycle
// counts as T's zero value there.
func fold[T any](ix *Index, memo map[*kust]T, k *kust, f func(k *kust, subs []*kust, vals []T) T) T {
	if v, ok := memo[k]; ok {
		return v
	}
	var zero T
	memo[k] = zero // a cycle stops here
	var subs []*kust
	var vals []T
	for _, d := range k.dirs {
		if sub := ix.byDir[d]; sub != nil {
			subs = append(subs, sub)
			vals = append(vals, fold(ix, memo, sub, f))
		}
	}
	v := f(k, subs, vals)
	memo[k] = v
	return v
}

// propagate makes a kustomization that includes one that is not built
// (reaching beyond the checkout, say) not built either: it would fail, or
// fetch through it. The error names the one included, once: its own
// problem says why.
func (ix *Index) propagate() {
	memo := map[*kust]bool{}
	for _, k := range ix.kusts {
		fold(ix, memo, k, func(k *kust, subs []*kust, broken []bool) bool {
			if k.err != nil {
				return true
			}
			if i := slices.Index(broken, true); i >= 0 {
				k.err = fmt.Errorf("%w: %s includes %s, which is not built", ErrKustomize, k.file, subs[i].file)
			}
			return k.err != nil
		})
	}
}

// expansion is what building a kustomization reads, counted once per
// include path.
type expansion struct{ bytes, includes int64 }

// bound refuses, before any build, a root whose includes expand past
// lim.Bytes or lim.Includes, and the roots after the bytes of those
// built reach lim.RunBytes. A kustomization on a cycle is an error
// already, and its walk stops.
func (ix *Index) bound(lim buildLimits) {
	memo := map[*kust]expansion{}
	expand := func(k *kust) expansion {
		return fold(ix, memo, k, func(k *kust, _ []*kust, subs []expansion) expansion {
			e := expansion{bytes: int64(len(ix.files[k.file])), includes: 1}
			for _, r := range k.refs() {
				if b, ok := ix.files[path.Join(k.dir, r)]; ok {
					e.bytes += int64(len(b))
				}
			}
			for _, se := range subs {
				// Saturate: past the bounds the exact count does not matter.
				e.bytes = min(e.bytes+se.bytes, 1<<50)
				e.includes = min(e.includes+se.includes, 1<<50)
			}
			return e
		})
	}
	var total int64
	for _, k := range ix.kusts {
		if k.err != nil || !k.root || k.component() {
			continue
		}
		e := expand(k)
		switch {
		case e.includes > lim.Includes:
			k.err = fmt.Errorf("%w: %s includes kustomizations %d times over (the bound is %d): not built", ErrKustomize, k.file, e.includes, lim.Includes)
		case e.bytes > lim.Bytes:
			k.err = fmt.Errorf("%w: %s reads %d bytes through its includes (the bound is %d MiB): not built", ErrKustomize, k.file, e.bytes, lim.Bytes>>20)
		case total+e.bytes > lim.RunBytes:
			k.err = fmt.Errorf("%w: %s not built: with the kustomizations built before it, the builds would read more than %d MiB", ErrKustomize, k.file, lim.RunBytes>>20)
		default:
			total += e.bytes
		}
	}
}
