package patcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Apply reads the files of the edits under root, applies the edits in
// memory and returns what would change. It never writes.
//
// A plain file discovery held is edited from the bytes it read and what it
// held of their parse, all its edits in one batch: their ops' splices are
// applied together, each edited document is parsed again alone (or its
// parse predicted, where every splice swaps a scalar) and compared with
// the expected tree, comments included, the cuts between documents must
// be where they were, and each op run again on it must find nothing left
// to do (docs/design.md §10, invariant 2). root must hold the files the
// plan read; a file written later is written only if it still holds them
// (changes.WriteFiles). A file discovery could not hold, or let go, is
// read again and batched the same way on a new parse, proven by one parse
// of the whole result.
// When that fails, or an op fails, the edits are done one by one: each applied atomically and verified on its own, its document
// parsed again after each of its ops and compared, and once all edits of
// the file are done the whole file is parsed and compared; should only
// that find a difference, the file's edits are done again verifying the
// whole file after every op. A refused edit leaves no
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

	res := &Result{}
	rt := inv.route(edits, res)
	routed := len(res.Refused)
	if err := editPlain(ctx, r, inv.parsed, rt.files, rt.byFile, res); err != nil {
		return nil, err
	}
	for _, o := range inv.origins {
		if len(rt.byOrigin[o]) == 0 {
			continue
		}
		if err := o.Edit(ctx, r, rt.byOrigin[o], res); err != nil {
			return nil, err
		}
		sort.SliceStable(res.Files, func(i, j int) bool { return res.Files[i].Path < res.Files[j].Path })
	}
	rt.rename(res, routed)
	return res, nil
}

// rename says what the edits of a workload whose template is another
// object's did for that workload: they were made as edits of the object
// (route), and the changes, notes and refusals of the editing after
// routing (from index routed of res.Refused on) name it.
func (rt routes) rename(res *Result, routed int) {
	if len(rt.as) == 0 {
		return
	}
	to := func(r *usage.Ref) {
		if w, ok := rt.as[*r]; ok {
			*r = w
		}
	}
	for i := range res.Files {
		for j := range res.Files[i].Changes {
			to(&res.Files[i].Changes[j].Workload)
		}
	}
	for i := range res.Notes {
		to(&res.Notes[i].Workload)
	}
	for i := routed; i < len(res.Refused); i++ {
		to(&res.Refused[i].Workload)
	}
}

// target is an edit of a plain file's workload, and the workload: the
// inventory's own, not a copy, as 10,000 edits would hold 3.7 MB of
// copies through the preview.
type target struct {
	e Edit
	w *Workload
}

// routes are the edits by where they go: a plain file's, in file order,
// or an origin.
type routes struct {
	files    []string
	byFile   map[string][]target
	byOrigin map[origin][]Edit
	// as are the workloads whose edits were routed as edits of the object
	// whose template they run (Workload.Template), by that object.
	as map[usage.Ref]usage.Ref
}

// route finds each edit's workload in the inventory and says where it is
// edited. An edit whose workload is unknown, unsupported or defined more
// than once is refused into res.
func (inv *Inventory) route(edits []Edit, res *Result) routes {
	byRef := inv.byRef()
	refuse := func(e Edit, file string, err error) {
		res.Refused = append(res.Refused, Refusal{Workload: e.Workload, File: file, Err: err})
	}
	rt := routes{byFile: map[string][]target{}, byOrigin: map[origin][]Edit{}}
	for _, e := range edits {
		var ws []*Workload
		for _, i := range byRef[e.Workload] {
			if w := &inv.Workloads[i]; e.File == "" || w.File == e.File {
				ws = append(ws, w)
			}
		}
		switch _, ok := workload.SpecFor(e.Workload.Kind); {
		case !ok:
			refuse(e, "", fmt.Errorf("%w: %s", workload.ErrUnsupportedKind, e.Workload.Kind))
			continue
		case len(ws) == 0:
			refuse(e, "", fmt.Errorf("%w: %s", workload.ErrNotFound, e.Workload))
			continue
		case len(ws) > 1:
			where := make([]string, len(ws))
			for i, w := range ws {
				where[i] = w.Where()
			}
			refuse(e, ws[0].File, fmt.Errorf("%w: %s in %s", workload.ErrAmbiguous, e.Workload, strings.Join(where, ", ")))
			continue
		}
		w := ws[0]
		if w.Template != (usage.Ref{}) {
			if err := templateElsewhere(e, *w); err != nil {
				refuse(e, w.File, err)
				continue
			}
			if rt.as == nil {
				rt.as = map[usage.Ref]usage.Ref{}
			}
			rt.as[w.Template] = e.Workload
			// A copy: the inventory's workload keeps its own ref.
			c := *w
			e.Workload, c.Ref = w.Template, w.Template
			w = &c
		}
		f := w.File
		if o := inv.owner(f); o != nil {
			e.File = f
			rt.byOrigin[o] = append(rt.byOrigin[o], e)
			continue
		}
		if _, ok := rt.byFile[f]; !ok {
			rt.files = append(rt.files, f)
		}
		rt.byFile[f] = append(rt.byFile[f], target{e, w})
	}
	sort.Strings(rt.files)
	return rt
}

// templateElsewhere refuses an edit of workload w, whose pod template is
// another object's, that would change w's own object: its document is
// not the one the edit goes to.
func templateElsewhere(e Edit, w Workload) error {
	for _, op := range e.Ops {
		if workload.ObjectOp(op) {
			return &located.Error{File: w.File, Field: "metadata.labels", Err: fmt.Errorf(
				"%w: %s runs the pod template of %s (spec.workloadRef), where its edits go; %s would change the %s itself: change it by hand",
				workload.ErrTemplateElsewhere, e.Workload, w.Template, op, e.Workload.Kind)}
		}
	}
	return nil
}

// editPlain edits the plain files, each on its own goroutine, and gathers
// what they give into res in file order.
func editPlain(ctx context.Context, fsys fs.FS, parsed map[string]*heldParse, files []string, byFile map[string][]target, res *Result) error {
	type outcome struct {
		refused []Refusal
		notes   []Note
		file    *File
	}
	outs := make([]outcome, len(files))
	if err := workload.EachFile(ctx, len(files), func(i int) {
		o := &outs[i]
		o.refused, o.notes, o.file = editFile(fsys, parsed[files[i]].take(), files[i], byFile[files[i]])
	}); err != nil {
		return err
	}
	for _, o := range outs {
		res.Refused = append(res.Refused, o.refused...)
		res.Notes = append(res.Notes, o.notes...)
		if o.file != nil {
			res.Files = append(res.Files, *o.file)
		}
	}
	return nil
}

// editFile applies the edits ts of one plain file, each on its own and
// all or nothing. When discovery held the file (pf), the edits run in one
// batch on the bytes it read and the documents it held, each edited
// document proven alone (workload.EditHeld); else the file is read as it
// is now and the edits run in one batch on a parse of it, proven by one
// parse of the result (workload.EditParsed); and when a batch is refused,
// as workload.EditFile proves them (per document, then the whole file).
func editFile(fsys fs.FS, pf parsedFile, path string, ts []target) (refused []Refusal, notes []Note, file *File) {
	refuse := func(e Edit, err error) {
		refused = append(refused, Refusal{Workload: e.Workload, File: path, Err: err})
	}
	// A file discovery held is edited from the bytes it read: the root
	// holds the files the plan read (ChangeSet.Apply), and a file is
	// written only while it still holds them (changes.WriteFiles).
	b := pf.data
	var err error
	if pf.held == nil {
		if b, err = checkout.ReadFile(fsys, path); err != nil {
			for _, t := range ts {
				refuse(t.e, &located.Error{File: path, Err: err})
			}
			return refused, nil, nil
		}
	}
	var errs []error
	edit := func(fe *workload.FileEdit) {
		errs = make([]error, len(ts))
		notes = nil
		for i, t := range ts {
			var ns []Note
			ns, errs[i] = fe.Apply(t.e, *t.w)
			notes = append(notes, ns...)
		}
	}
	var fe *workload.FileEdit
	if pf.held != nil {
		fe, err = workload.EditHeld(path, b, pf.held, edit)
	} else if s, perr := splice.Parse(b); perr == nil {
		fe, err = workload.EditParsed(path, b, s, edit)
	} else {
		// EditFile says why it does not parse.
		fe, err = workload.EditFile(path, b, edit)
	}
	if err != nil {
		for _, t := range ts {
			refuse(t.e, err)
		}
		return refused, nil, nil
	}
	for i, t := range ts {
		if errs[i] != nil {
			refuse(t.e, errs[i])
		}
	}
	if f, ok := fe.Changed(); ok {
		file = &f
	}
	return refused, notes, file
}
