package patcher

import (
	"context"
	"fmt"
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
	for _, p := range files.Problems {
		inv.Problems = append(inv.Problems, Problem{File: p.Path, Err: p.Err})
	}
	all := make(map[string][]byte, len(files.Files))
	type found struct {
		ws    []Workload
		uns   []Unsupported
		probs []Problem
	}
	out := make([]found, len(files.Files))
	if err := eachFile(ctx, len(files.Files), func(i int) {
		f := files.Files[i]
		out[i].ws, out[i].uns, out[i].probs = discoverFile(f.Path, f.Data)
	}); err != nil {
		return nil, err
	}
	for i, f := range files.Files {
		all[f.Path] = f.Data
		inv.Workloads = append(inv.Workloads, out[i].ws...)
		inv.Unsupported = append(inv.Unsupported, out[i].uns...)
		inv.Problems = append(inv.Problems, out[i].probs...)
	}
	inv.addKustomize(indexKustomize(all, files.ReadFile))
	inv.addHelm(indexHelm(ctx, all, files.ReadTree))
	sort.SliceStable(inv.Problems, func(i, j int) bool {
		if inv.Problems[i].File != inv.Problems[j].File {
			return inv.Problems[i].File < inv.Problems[j].File
		}
		return inv.Problems[i].Line < inv.Problems[j].Line
	})
	return inv, nil
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

// addKustomize puts the workloads the overlays build in place of those
// read from the files kustomizations read: a base Deployment and its
// patches are not workloads of their own, and a file only an overlay
// includes is not a second definition of what the overlay builds.
func (inv *Inventory) addKustomize(ix *kustIndex) {
	if len(ix.kusts) == 0 {
		return
	}
	inv.kust = ix
	ws := inv.Workloads[:0]
	for _, w := range inv.Workloads {
		if !ix.used[w.File] {
			ws = append(ws, w)
		}
	}
	inv.Workloads = ws
	inv.Unsupported = slices.DeleteFunc(inv.Unsupported, func(u Unsupported) bool { return ix.used[u.File] })
	for _, k := range ix.kusts {
		if k.err != nil {
			inv.Problems = append(inv.Problems, Problem{File: k.file, Err: k.err})
			continue
		}
		if !k.root {
			continue
		}
		for _, o := range k.objs {
			inv.Workloads = append(inv.Workloads, o.w)
		}
		if s, err := splice.Parse(k.out); err == nil {
			inv.Unsupported = append(inv.Unsupported, unsupportedIn(s, k.file, false)...)
		}
	}
	sort.SliceStable(inv.Workloads, func(i, j int) bool { return inv.Workloads[i].File < inv.Workloads[j].File })
}
