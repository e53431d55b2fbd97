package patcher

import (
	"context"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// Discover reads the YAML files of the repository checkout at root (see
// package checkout for which, and how safely) and returns the workloads it
// finds. It is checkout.Read and DiscoverFiles in one call. Files that
// cannot be read or parsed are recorded as problems, not errors: the error
// is only for a root that cannot be opened or a cancelled ctx.
func Discover(ctx context.Context, root string) (*Inventory, error) {
	d, err := checkout.OpenDir(root)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	files, err := checkout.Read(ctx, d, checkout.Options{})
	if err != nil {
		return nil, err
	}
	return DiscoverFiles(ctx, files)
}

// DiscoverFiles returns the workloads in files, read by checkout.Read.
// Files it could not read, and files that do not parse, are problems.
// The error is only for a cancelled ctx.
func DiscoverFiles(ctx context.Context, files *checkout.Files) (*Inventory, error) {
	inv := &Inventory{}
	all := make(map[string][]byte, len(files.Files))
	out := make([]found, len(files.Files))
	if err := eachFile(ctx, len(files.Files), func(i int) {
		f := files.Files[i]
		out[i].ws, out[i].uns, out[i].probs = discoverFile(f.Path, f.Data)
	}); err != nil {
		return nil, err
	}
	plain := found{}
	for _, p := range files.Problems {
		plain.probs = append(plain.probs, Problem{File: p.Path, Err: p.Err})
	}
	for i, f := range files.Files {
		all[f.Path] = f.Data
		plain.ws = append(plain.ws, out[i].ws...)
		plain.uns = append(plain.uns, out[i].uns...)
		plain.probs = append(plain.probs, out[i].probs...)
	}
	kx := indexKustomize(all, files.ReadFile)
	hx := indexHelm(ctx, all, files.ReadTree, kx.included)
	inv.Unreleased = hx.unreleased
	inv.merge(plain, kx, hx)
	sort.SliceStable(inv.Problems, func(i, j int) bool {
		if inv.Problems[i].File != inv.Problems[j].File {
			return inv.Problems[i].File < inv.Problems[j].File
		}
		return inv.Problems[i].Line < inv.Problems[j].Line
	})
	return inv, nil
}

// found is what one origin, or the plain files, make of the checkout.
type found struct {
	ws    []Workload
	uns   []Unsupported
	probs []Problem
}

// An origin is a way the checkout makes workloads other than writing
// them out: kustomizations build them, chart releases render them. Each
// finds its workloads in the files and edits them where their values
// live; the inventory and Apply only ask it these questions.
type origin interface {
	// claims reports whether the origin reads file to make its workloads:
	// what the plain files and the origins before it found in file is
	// then not the last word (a base is not a workload of its own; a
	// kustomization that renders a chart is the chart's).
	claims(file string) bool
	// owns reports whether a workload found in file is the origin's: its
	// edits go through the origin.
	owns(file string) bool
	// found are the workloads it makes, the objects it makes that ask
	// for GPUs in a kind that is not sized, and what it could not make.
	found() found
	// edit applies edits of its workloads to the files of fsys as they
	// are now, into res. The error is only for a cancelled ctx.
	edit(ctx context.Context, fsys fs.FS, edits []Edit, res *Result) error
}

// merge puts together what the plain files and each origin found, in
// that order: an origin that claims a file sets aside the workloads and
// unsupported objects found in it before, and what the origins before it
// could not make of it. The plain files' own problems stay: a file that
// does not parse is reported whoever reads it.
func (inv *Inventory) merge(plain found, origins ...origin) {
	all := []found{plain}
	for _, o := range origins {
		for j := range all {
			all[j].ws = slices.DeleteFunc(all[j].ws, func(w Workload) bool { return o.claims(w.File) })
			all[j].uns = slices.DeleteFunc(all[j].uns, func(u Unsupported) bool { return o.claims(u.File) })
			if j > 0 {
				all[j].probs = slices.DeleteFunc(all[j].probs, func(p Problem) bool { return o.claims(p.File) })
			}
		}
		all = append(all, o.found())
	}
	for _, f := range all {
		inv.Workloads = append(inv.Workloads, f.ws...)
		inv.Unsupported = append(inv.Unsupported, f.uns...)
		inv.Problems = append(inv.Problems, f.probs...)
	}
	inv.origins = origins
	sort.SliceStable(inv.Workloads, func(i, j int) bool { return inv.Workloads[i].File < inv.Workloads[j].File })
}

// owner is the origin whose workloads those found in file are, the last
// that owns it; nil for a plain file.
func (inv *Inventory) owner(file string) origin {
	for i := len(inv.origins) - 1; i >= 0; i-- {
		if inv.origins[i].owns(file) {
			return inv.origins[i]
		}
	}
	return nil
}

// Where is the workload's file and line, or only the file for a workload
// a kustomization builds (its build has no line in the repository).
func (w Workload) Where() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d", w.File, w.Line)
	}
	return w.File
}

// eachFile runs fn(0) … fn(n-1) on as many goroutines as the process
// may run at once: files are independent, and parsing them is the cost
// of reading a large repository. fn must touch only what belongs to its
// i. The error is ctx's, when it is cancelled before all are done.
func eachFile(ctx context.Context, n int, fn func(i int)) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			fn(i)
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// discoverFile returns the workloads of one file, in document order.
func discoverFile(rel string, b []byte) ([]Workload, []Unsupported, []Problem) {
	s, err := splice.Parse(b)
	if err != nil {
		return nil, nil, []Problem{{File: rel, Line: splice.LineOf(err), Err: err}}
	}
	var ws []Workload
	var probs []Problem
	uns := unsupportedIn(s, rel, true)
	for _, doc := range s.Docs {
		if len(doc.Content) == 0 {
			continue
		}
		ref, spec, ok := identify(doc.Content[0])
		if !ok {
			continue
		}
		if ref.Name == "" {
			probs = append(probs, Problem{File: rel, Line: doc.Line, Err: fmt.Errorf("%s without metadata.name", ref.Kind)})
			continue
		}
		if err := validRef(ref); err != nil {
			probs = append(probs, Problem{File: rel, Line: doc.Line, Err: err})
			continue
		}
		w := readWorkload(doc.Content[0], ref, spec)
		w.File, w.Line = rel, doc.Line
		ws = append(ws, w)
	}
	return ws, uns, probs
}
