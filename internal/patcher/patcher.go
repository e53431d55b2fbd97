// Package patcher finds GPU workloads in the YAML files of a repository
// checkout and edits them with the smallest possible change, wherever
// their values live. It is the facade of the editor; the work is done by
// one package per place a value can live:
//
//   - splice: the byte-exact engine. Nodes are found by parsing the text
//     with kyaml, new bytes are spliced into the original text, the same
//     change is made to a parsed copy, and the result is parsed again and
//     compared with it, comments included, before it is accepted
//     (docs/design.md §10, invariant 2). Nothing is ever re-serialised.
//   - workload: what a workload is (kinds, pod template, GPU request,
//     containers, vLLM flags), the Ops that edit one, and the types every
//     part shares (Edit, Result, Refusal, Note, Problem).
//   - changes: the files an edit changed, their diffs, and writing them
//     over a checkout safely.
//   - kustomize: workloads kustomizations build, edited in the patch,
//     base or overlay that defines the value, proven by building again.
//   - helm: workloads chart releases render (Argo CD, Flux, helmCharts),
//     edited in the values file that wins, proven by rendering again.
//
// Plain manifests are edited here. Kustomize and Helm are origins behind
// one small interface (origin), so discovery merges what each finds in a
// fixed order and Apply is a loop over them.
//
// The package takes a directory and returns values: it never talks to git,
// the network or a cluster, and it writes only when WriteAll is called.
package patcher

import (
	"sync"
	"sync/atomic"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Inventory is what Discover found.
type Inventory struct {
	// Workloads are sorted by File, then position in the file.
	Workloads []workload.Workload
	// Problems are files that could not be read or parsed, and documents
	// that could not be understood. They are not fatal.
	Problems []workload.Problem
	// Unsupported are the objects that ask for GPUs, or own pods, in a
	// kind the tool does not size: reported, never passed over.
	Unsupported []workload.Unsupported

	// Unreleased are the directories of the charts of the checkout that
	// no Argo CD Application, Flux HelmRelease or helmCharts entry renders:
	// they are not rendered (helm.go says why).
	Unreleased []string
	// ApplicationSets are the files holding an Argo CD ApplicationSet,
	// listed when some chart is unreleased: one may render it, with what
	// its generators say, which the tool does not read.
	ApplicationSets []string

	// origins make workloads other than plain files do: kustomizations,
	// then chart releases. A Workload found in a file an origin owns is
	// edited through it.
	origins []origin

	// parsed are the files with workloads as discovery read them, and
	// what it held of their parse (splice.Hold): the first Apply to edit
	// one edits from that when the file is unchanged, and lets it go (a
	// later Apply parses the file again).
	parsed map[string]*heldParse

	// refs indexes Workloads by ref for route, built at the first Apply:
	// a run applies a change set at a time, and each looked at every
	// workload. nil for an Inventory not made by discovery.
	refs *refIndex
}

// Keep lets go of what discovery held for every file but those edits
// may change: a plan that knows its edits need not hold the other
// files' documents beside them. An Apply that edits a file let go parses
// it again, as it does a file that changed on disk.
func (inv *Inventory) Keep(edits []Edit) {
	if inv == nil || len(inv.parsed) == 0 {
		return
	}
	keep := make(map[string]bool, len(edits))
	var byRef map[usage.Ref][]int
	for _, e := range edits {
		if e.File != "" {
			keep[e.File] = true
			continue
		}
		if byRef == nil {
			byRef = inv.byRef()
		}
		for _, i := range byRef[e.Workload] {
			keep[inv.Workloads[i].File] = true
		}
	}
	for f, h := range inv.parsed {
		if !keep[f] {
			h.take()
		}
	}
}

// refIndex is the workloads of one Workloads slice by ref: their indexes
// there, in order. A copy of the Inventory with other Workloads (a new
// slice) is indexed anew; Workloads is not changed in place once Apply
// has used the Inventory.
type refIndex struct {
	mu   sync.Mutex
	of   *Workload // &Workloads[0] of the slice indexed
	n    int
	refs map[usage.Ref][]int
}

// byRef returns the index of inv.Workloads, built once for each slice.
func (inv *Inventory) byRef() map[usage.Ref][]int {
	build := func() map[usage.Ref][]int {
		m := make(map[usage.Ref][]int, len(inv.Workloads))
		for i, w := range inv.Workloads {
			m[w.Ref] = append(m[w.Ref], i)
		}
		return m
	}
	if inv.refs == nil || len(inv.Workloads) == 0 {
		return build()
	}
	x := inv.refs
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.refs == nil || x.of != &inv.Workloads[0] || x.n != len(inv.Workloads) {
		x.refs, x.of, x.n = build(), &inv.Workloads[0], len(inv.Workloads)
	}
	return x.refs
}

// parsedFile is a file's bytes and what discovery held of their parse,
// which no one changes; held is nil when the file's documents cannot be
// proven one by one.
type parsedFile struct {
	data []byte
	held *splice.Held
}

// heldParse is a parsedFile until one Apply takes it.
type heldParse struct{ p atomic.Pointer[parsedFile] }

// take returns the parse and lets it go; the zero parsedFile when there
// is none or it was taken.
func (h *heldParse) take() parsedFile {
	if h == nil {
		return parsedFile{}
	}
	if p := h.p.Swap(nil); p != nil {
		return *p
	}
	return parsedFile{}
}
