package patcher

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Result is what Apply would change. It is never nil on success; a result
// with no Files means nothing to change.
type Result struct {
	Files   []File    // only files whose bytes changed, sorted by Path
	Refused []Refusal // edits refused, with why; a refused edit changes nothing
	Notes   []Note    // things left alone on purpose, without a Change
}

// Changed reports whether any file would change.
func (r *Result) Changed() bool { return len(r.Files) > 0 }

// Refusal is an edit that was not applied.
type Refusal struct {
	Workload usage.Ref
	File     string
	Err      error // names file:line and the field; wraps a sentinel
}

func (r Refusal) Error() string { return r.Workload.String() + ": " + r.Err.Error() }
func (r Refusal) Unwrap() error { return r.Err }

// Note is something an Op deliberately left alone, e.g. a vLLM container
// whose --kv-cache-memory-bytes makes --gpu-memory-utilization moot.
type Note struct {
	Workload usage.Ref
	File     string
	Line     int
	Field    string
	Err      error
}

func (n Note) Error() string { return fmt.Sprintf("%s:%d: %s: %v", n.File, n.Line, n.Field, n.Err) }
func (n Note) Unwrap() error { return n.Err }

// File is one changed file.
type File struct {
	Path     string // slash-separated, relative to the root
	Old, New []byte
	// Created: the file is new (Old is nil), e.g. a strategic-merge patch
	// added to a kustomization.
	Created bool
	Changes []Change
	// Splices turn Old into New: each replaces Old[Off:Off+Len] with Text.
	// They are sorted and do not overlap.
	Splices []Splice
}

// Splice is one byte-level replacement in a file's original text.
type Splice = splice.Splice

// Change is one field changed on one workload.
type Change struct {
	Workload usage.Ref
	// Field is a YAML path, e.g. spec.template.metadata.annotations.gpu-fraction
	// or spec.template.spec.containers[vllm].args.
	Field string
	// Old and New are the values; Old is "" for an addition, New for a
	// removal.
	Old, New string
	Reason   string
}

// Apply reads the files of the edits under root, applies the edits in
// memory and returns what would change. It never writes.
//
// Each edit is applied atomically and verified on its own: after each of
// its ops its document is parsed again and compared with the expected
// tree, comments included, and once all edits of a file are done the
// whole file is parsed and compared (DESIGN §10, invariant 2); should
// only that find a difference, the file's edits are done again verifying
// the whole file after every op. A refused edit leaves no
// trace in its file; other edits of the same file still apply. Whole-file
// problems (invalid YAML, conflict markers, unusual line breaks) refuse
// every edit of the file. The error is only for an unusable root or a
// cancelled ctx.
func Apply(ctx context.Context, root string, inv *Inventory, edits []Edit) (*Result, error) {
	if inv == nil {
		return nil, errors.New("patcher: nil inventory")
	}
	r, err := checkout.OpenDir(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()

	byRef := map[usage.Ref][]Workload{}
	for _, w := range inv.Workloads {
		byRef[w.Ref] = append(byRef[w.Ref], w)
	}
	res := &Result{}
	refuse := func(e Edit, file string, err error) {
		res.Refused = append(res.Refused, Refusal{Workload: e.Workload, File: file, Err: err})
	}
	type target struct {
		e Edit
		w Workload
	}
	byFile := map[string][]target{}
	var files []string
	// edits of the workloads an origin makes, by origin
	byOrigin := map[origin][]Edit{}
	for _, e := range edits {
		ws := byRef[e.Workload]
		if e.File != "" {
			var in []Workload
			for _, w := range ws {
				if w.File == e.File {
					in = append(in, w)
				}
			}
			ws = in
		}
		switch _, ok := kindSpecFor(e.Workload.Kind); {
		case !ok:
			refuse(e, "", fmt.Errorf("%w: %s", ErrUnsupportedKind, e.Workload.Kind))
			continue
		case len(ws) == 0:
			refuse(e, "", fmt.Errorf("%w: %s", ErrNotFound, e.Workload))
			continue
		case len(ws) > 1:
			where := make([]string, len(ws))
			for i, w := range ws {
				where[i] = w.Where()
			}
			refuse(e, ws[0].File, fmt.Errorf("%w: %s in %s", ErrAmbiguous, e.Workload, strings.Join(where, ", ")))
			continue
		}
		f := ws[0].File
		if o := inv.owner(f); o != nil {
			e.File = f
			byOrigin[o] = append(byOrigin[o], e)
			continue
		}
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
		byFile[f] = append(byFile[f], target{e, ws[0]})
	}
	sort.Strings(files)

	// Files are edited on their own, each on one goroutine; what they
	// give is gathered in file order.
	type outcome struct {
		refused []Refusal
		notes   []Note
		file    *File
	}
	outs := make([]outcome, len(files))
	if err := eachFile(ctx, len(files), func(i int) {
		path, o := files[i], &outs[i]
		ts := byFile[path]
		refuse := func(e Edit, err error) {
			o.refused = append(o.refused, Refusal{Workload: e.Workload, File: path, Err: err})
		}
		b, err := checkout.ReadFile(r, path)
		if err != nil {
			for _, t := range ts {
				refuse(t.e, &splice.Error{File: path, Err: err})
			}
			return
		}
		var notes []Note
		run := func(whole bool) (*podFile, []error, error) {
			fe, err := newPodFile(path, b, whole)
			if err != nil {
				return nil, nil, err
			}
			errs := make([]error, len(ts))
			notes = nil
			for i, t := range ts {
				var ns []Note
				ns, errs[i] = fe.apply(t.e, t.w)
				notes = append(notes, ns...)
			}
			return fe, errs, nil
		}
		fe, errs, err := run(false)
		if err == nil && !fe.Whole && fe.VerifyAll() != nil {
			// Each document parsed on its own as intended, but the file
			// as a whole does not: do it again, verifying the whole file
			// after every op.
			fe, errs, err = run(true)
		}
		if err != nil {
			for _, t := range ts {
				refuse(t.e, err)
			}
			return
		}
		for i, t := range ts {
			if errs[i] != nil {
				refuse(t.e, errs[i])
			}
		}
		o.notes = notes
		if f, ok := fe.file(); ok {
			o.file = &f
		}
	}); err != nil {
		return nil, err
	}
	for _, o := range outs {
		res.Refused = append(res.Refused, o.refused...)
		res.Notes = append(res.Notes, o.notes...)
		if o.file != nil {
			res.Files = append(res.Files, *o.file)
		}
	}
	for _, o := range inv.origins {
		if len(byOrigin[o]) == 0 {
			continue
		}
		if err := o.edit(ctx, r, byOrigin[o], res); err != nil {
			return nil, err
		}
		sort.SliceStable(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	}
	return res, nil
}

// apply applies one Edit, all or nothing, to the document of workload w,
// one engine step per op, and returns the notes its ops made. The result
// of the whole Edit must also be a pod KAI accepts.
func (f *podFile) apply(e Edit, w Workload) ([]Note, error) {
	idx, err := f.find(e.Workload, w.Line)
	if err != nil {
		return nil, &splice.Error{File: f.Path, Err: err}
	}
	spec, _ := kindSpecFor(e.Workload.Kind)
	var notes []Note
	steps := make([]splice.Step, len(e.Ops))
	for i, op := range e.Ops {
		steps[i] = splice.Step{Name: op.String(), Run: func(d *splice.Doc) error {
			p := &podEdit{Doc: d, tmpl: spec.template, ref: e.Workload}
			if err := op.apply(p); err != nil {
				return err
			}
			notes = append(notes, p.notes...)
			return nil
		}}
	}
	changes, undo, err := f.EditDoc(idx, steps)
	if err != nil {
		return nil, err
	}
	// KAI refuses a pod that asks for a GPU in two ways at once: check the
	// result of the whole Edit, whatever the order of its ops.
	doc, line0 := f.Document(idx)
	if tmpl := splice.Lookup(doc.Content[0], spec.template...); tmpl != nil {
		if n, field, err := kaiConflict(tmpl, strings.Join(spec.template, ".")); err != nil {
			undo()
			return nil, &splice.Error{File: f.Path, Line: n.Line + line0, Field: field, Err: err}
		}
	}
	for _, c := range changes {
		f.changes = append(f.changes, Change{Workload: e.Workload, Field: c.Field, Old: c.Old, New: c.New, Reason: e.Reason})
	}
	return notes, nil
}

// podFile is a file of workloads being edited: the engine's fileEdit,
// and the changes of the edits kept so far, said for which workload.
type podFile struct {
	*splice.File
	changes []Change
}

func newPodFile(path string, b []byte, whole bool) (*podFile, error) {
	f, err := splice.NewFile(path, b, whole)
	if err != nil {
		return nil, err
	}
	return &podFile{File: f}, nil
}

// file returns the file when its bytes changed.
func (f *podFile) file() (File, bool) {
	cur, ok := f.Result()
	if !ok {
		return File{}, false
	}
	return File{Path: f.Path, Old: f.Orig, New: cur, Changes: f.changes, Splices: f.Splices()}, true
}

// podEdit is one workload Op at work: the engine's docEdit of the
// workload's document, plus what the op needs to know of the workload.
type podEdit struct {
	*splice.Doc
	tmpl  []string // path of the pod template
	ref   usage.Ref
	notes []Note
}

func (p *podEdit) note(n *yaml.Node, name string, err error) {
	p.notes = append(p.notes, Note{Workload: p.ref, File: p.File, Line: n.Line + p.Line0, Field: name, Err: err})
}

// tmplField is the dotted path of the pod template plus rest.
func (p *podEdit) tmplField(rest ...string) string {
	return strings.Join(append(append([]string{}, p.tmpl...), rest...), ".")
}

// find returns the index of the document that defines ref (ops never
// change what a document defines). A document without metadata.namespace
// matches any namespace: the caller may have filled in the default (as
// kubectl would). An exact namespace match wins; among several loose
// ones, the document that started at line (where Discover saw the
// workload) does.
func (f *podFile) find(ref usage.Ref, line int) (int, error) {
	var exact, loose []int
	for i, d := range f.Expected {
		var got usage.Ref
		if len(d.Content) > 0 {
			got, _, _ = identify(d.Content[0])
		}
		if got.Kind != ref.Kind || got.Name != ref.Name || got.Kind == "" {
			continue
		}
		switch got.Namespace {
		case ref.Namespace:
			exact = append(exact, i)
		case "":
			loose = append(loose, i)
		}
	}
	cands := exact
	if len(cands) == 0 {
		cands = loose
	}
	switch {
	case len(cands) == 1:
		return cands[0], nil
	case len(cands) == 0:
		return 0, fmt.Errorf("%w: %s is no longer in the file", ErrNotFound, ref)
	}
	for _, idx := range cands {
		if f.Lines[idx] == line {
			return idx, nil
		}
	}
	return 0, fmt.Errorf("%w: %s", ErrAmbiguous, ref)
}
