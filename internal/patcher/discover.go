package patcher

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/helm"
	"github.com/gpu-rightsizing/recommender/internal/patcher/kustomize"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
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
	inv := &Inventory{parsed: map[string]*heldParse{}, refs: &refIndex{}}
	all := make(map[string][]byte, len(files.Files))
	out := make([]workload.Found, len(files.Files))
	held := make([]*splice.Held, len(files.Files))
	if err := workload.EachFile(ctx, len(files.Files), func(i int) {
		f := files.Files[i]
		out[i].Workloads, out[i].Unsupported, out[i].Problems, held[i] = discoverFile(f.Path, f.Data)
	}); err != nil {
		return nil, err
	}
	plain := workload.Found{}
	for _, p := range files.Problems {
		plain.Problems = append(plain.Problems, workload.Problem{File: p.Path, Err: p.Err})
	}
	for i, f := range files.Files {
		all[f.Path] = f.Data
		if len(out[i].Workloads) > 0 {
			h := &heldParse{}
			h.p.Store(&parsedFile{data: f.Data, held: held[i]})
			inv.parsed[f.Path] = h
		}
		plain.Workloads = append(plain.Workloads, out[i].Workloads...)
		plain.Unsupported = append(plain.Unsupported, out[i].Unsupported...)
		plain.Problems = append(plain.Problems, out[i].Problems...)
	}
	kx := kustomize.NewIndex(all, files.ReadFile)
	hx := helm.NewIndex(ctx, all, files.ReadTree, kx.Included)
	inv.Unreleased = hx.Unreleased
	if len(inv.Unreleased) > 0 {
		inv.ApplicationSets = applicationSets(files.Files)
	}
	inv.merge(plain, kx, hx)
	sort.SliceStable(inv.Problems, func(i, j int) bool {
		if inv.Problems[i].File != inv.Problems[j].File {
			return inv.Problems[i].File < inv.Problems[j].File
		}
		return inv.Problems[i].Line < inv.Problems[j].Line
	})
	return inv, nil
}

// applicationSets are the files that hold an Argo CD ApplicationSet:
// its generators (clusters, git, lists) decide where and with which
// values a chart is rendered, which the checkout alone does not say.
func applicationSets(files []checkout.File) []string {
	var out []string
	for _, f := range files {
		if !bytes.Contains(f.Data, []byte("ApplicationSet")) {
			continue
		}
		s, err := splice.Parse(f.Data)
		if err != nil {
			continue // discoverFile reports it
		}
		for _, doc := range s.Docs {
			if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
				continue
			}
			root := doc.Content[0]
			if splice.Str(root, "kind") == "ApplicationSet" && strings.HasPrefix(splice.Str(root, "apiVersion"), "argoproj.io/") {
				out = append(out, f.Path)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// An origin is a way the checkout makes workloads other than writing
// them out: kustomizations build them, chart releases render them. Each
// finds its workloads in the files and edits them where their values
// live; the inventory and Apply only ask it these questions.
type origin interface {
	// Claims reports whether the origin reads file to make its workloads:
	// what the plain files and the origins before it found in file is
	// then not the last word (a base is not a workload of its own; a
	// kustomization that renders a chart is the chart's).
	Claims(file string) bool
	// Owns reports whether a workload found in file is the origin's: its
	// edits go through the origin.
	Owns(file string) bool
	// Found are the workloads it makes, the objects it makes that ask
	// for GPUs in a kind that is not sized, and what it could not make.
	Found() workload.Found
	// Edit applies edits of its workloads to the files of fsys as they
	// are now, into res. The error is only for a cancelled ctx.
	Edit(ctx context.Context, fsys fs.FS, edits []workload.Edit, res *workload.Result) error
}

// merge puts together what the plain files and each origin found, in
// that order: an origin that claims a file sets aside the workloads and
// unsupported objects found in it before, and what the origins before it
// could not make of it. The plain files' own problems stay: a file that
// does not parse is reported whoever reads it.
func (inv *Inventory) merge(plain workload.Found, origins ...origin) {
	all := []workload.Found{plain}
	for _, o := range origins {
		for j := range all {
			all[j].Workloads = slices.DeleteFunc(all[j].Workloads, func(w workload.Workload) bool { return o.Claims(w.File) })
			all[j].Unsupported = slices.DeleteFunc(all[j].Unsupported, func(u workload.Unsupported) bool { return o.Claims(u.File) })
			if j > 0 {
				all[j].Problems = slices.DeleteFunc(all[j].Problems, func(p workload.Problem) bool { return o.Claims(p.File) })
			}
		}
		all = append(all, o.Found())
	}
	for _, f := range all {
		inv.Workloads = append(inv.Workloads, f.Workloads...)
		inv.Unsupported = append(inv.Unsupported, f.Unsupported...)
		inv.Problems = append(inv.Problems, f.Problems...)
	}
	// A Rollout may run the template of a Deployment found anywhere: in
	// a plain file, or built or rendered by an origin.
	inv.Workloads, inv.Unsupported = workload.FollowRefs(inv.Workloads, inv.Unsupported)
	inv.origins = origins
	sort.SliceStable(inv.Workloads, func(i, j int) bool { return inv.Workloads[i].File < inv.Workloads[j].File })
}

// owner is the origin whose workloads those found in file are, the last
// that owns it; nil for a plain file.
func (inv *Inventory) owner(file string) origin {
	for i := len(inv.origins) - 1; i >= 0; i-- {
		if inv.origins[i].Owns(file) {
			return inv.origins[i]
		}
	}
	return nil
}

// discoverFile returns the workloads of one file, in document order, and
// what an edit needs of its parse: the trees of the documents whose
// workloads ask for GPUs (splice.Hold), none for a file without
// workloads. The parse itself is let go here: its nodes take about
// sixteen times the text, for every document of the file.
func discoverFile(rel string, b []byte) ([]workload.Workload, []workload.Unsupported, []workload.Problem, *splice.Held) {
	s, err := splice.Parse(b)
	if err != nil {
		return nil, nil, []workload.Problem{{File: rel, Line: splice.LineOf(err), Err: err}}, nil
	}
	var ws []workload.Workload
	var probs []workload.Problem
	var gpu []bool
	uns := workload.UnsupportedIn(s, rel, true)
	for i, doc := range s.Docs {
		if len(doc.Content) == 0 {
			continue
		}
		for _, id := range workload.IdentifyAll(doc.Content[0]) {
			w, err := readWorkload(doc.Content[0], id)
			if err != nil {
				probs = append(probs, workload.Problem{File: rel, Line: doc.Line, Err: err})
				continue
			}
			w.File, w.Line = rel, doc.Line
			ws = append(ws, w)
			if w.GPU.Asked() {
				if gpu == nil {
					gpu = make([]bool, len(s.Docs))
				}
				gpu[i] = true
			}
		}
	}
	if len(ws) == 0 {
		return nil, uns, probs, nil
	}
	return ws, uns, probs, splice.Hold(b, s, func(doc int) bool { return gpu != nil && gpu[doc] })
}

// readWorkload reads one workload of a document, refusing a name that
// is missing or that Kubernetes would not accept.
func readWorkload(root *yaml.Node, id workload.Identified) (workload.Workload, error) {
	if id.Ref.Name == "" || strings.HasPrefix(id.Ref.Name, "-") && id.Ref.Kind == workload.DynamoKind {
		return workload.Workload{}, fmt.Errorf("%s without metadata.name", id.Ref.Kind)
	}
	if err := workload.ValidRef(id.Ref); err != nil {
		return workload.Workload{}, err
	}
	return workload.Read(root, id.Ref, id.Spec), nil
}
