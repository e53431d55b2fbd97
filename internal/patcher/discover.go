package patcher

import (
	"context"
	"fmt"
	"sort"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
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
	all := map[string][]byte{}
	for _, f := range files.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		all[f.Path] = f.Data
		ws, probs := discoverFile(f.Path, f.Data)
		inv.Workloads = append(inv.Workloads, ws...)
		inv.Problems = append(inv.Problems, probs...)
	}
	inv.addKustomize(indexKustomize(all))
	inv.addHelm(indexHelm(ctx, all, files.ReadTree))
	sort.SliceStable(inv.Problems, func(i, j int) bool {
		if inv.Problems[i].File != inv.Problems[j].File {
			return inv.Problems[i].File < inv.Problems[j].File
		}
		return inv.Problems[i].Line < inv.Problems[j].Line
	})
	return inv, nil
}

// discoverFile returns the workloads of one file, in document order.
func discoverFile(rel string, b []byte) ([]Workload, []Problem) {
	s, err := parseStream(b)
	if err != nil {
		return nil, []Problem{{File: rel, Line: errLine(err), Err: err}}
	}
	var ws []Workload
	var probs []Problem
	for _, doc := range s.docs {
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
	return ws, probs
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
	}
	sort.SliceStable(inv.Workloads, func(i, j int) bool { return inv.Workloads[i].File < inv.Workloads[j].File })
}
