package helm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// Editing what a release renders. For each op of an Edit, the field it
// changes in the rendered object is traced to the value that sets it
// (trace.go), and the value is edited where Helm takes it from, the
// values file of highest precedence that has it:
//
//   - a values file only this release reads (or the chart's values.yaml
//     when no other release renders the chart): edited in place;
//   - a file other releases read too: the value is added to the last
//     values file of the release that no other release reads, which
//     overrides it; refused when the release has none, or when the value
//     is inside a list (a values file replaces a list whole);
//   - inline values of the release definition (helm.values, valuesObject,
//     parameters, spec.values, valuesInline): refused, naming where.
//
// An op that adds or removes a field (a queue label the chart does not
// write, nvidia.com/gpu removed) has no value to trace: refused.
//
// Proof: every release that reads an edited file is rendered again. The
// release the edit is for must render exactly what the ops make of what it
// rendered (compared as trees); every other one the same bytes. Anything
// else refuses the edit, naming the release and the difference.

// hstate is the files as edited so far and what each release renders
// from them.
type hstate struct {
	hx      *Index
	cur     map[string][]byte // changed files, from the root
	renders map[*helmRelease][]byte
	changes map[string][]changes.Change
}

func (st *hstate) file(p string) ([]byte, bool) {
	if b, ok := st.cur[p]; ok {
		return b, true
	}
	b, ok := st.hx.files[p]
	return b, ok
}

// chartFiles are the files of r's chart with the edits so far and next.
func (st *hstate) chartFiles(r *helmRelease, next map[string][]byte) map[string][]byte {
	c := st.hx.charts[r.chart]
	out := make(map[string][]byte, len(c.files))
	for p, b := range c.files {
		out[p] = b
	}
	for _, m := range []map[string][]byte{st.cur, next} {
		for p, b := range m {
			if inDir(p, r.chart) {
				out[strings.TrimPrefix(p, r.chart+"/")] = b
			}
		}
	}
	return out
}

// layers returns r's chart files and values layers as edited so far and
// by next.
func (st *hstate) layers(r *helmRelease, next map[string][]byte) (map[string][]byte, []valuesLayer, error) {
	get := func(p string) ([]byte, bool) {
		if b, ok := next[p]; ok {
			return b, true
		}
		return st.file(p)
	}
	files := st.chartFiles(r, next)
	if b, ok := next[r.file]; ok || st.cur[r.file] != nil {
		if !ok {
			b = st.cur[r.file]
		}
		// The definition is edited: its inline values are read again.
		rs, _, _ := releasesIn(r.file, b, func(d string) bool { _, ok := st.hx.charts[d]; return ok })
		// Edits change no document's place nor any source's.
		i := slices.IndexFunc(rs, func(x *helmRelease) bool { return x.doc == r.doc && x.src == r.src })
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: %s is no longer in %s", workload.ErrNotFound, r.via, r.file)
		}
		rr := *r
		rr.inline = rs[i].inline
		r = &rr
	}
	ls, err := r.layers(files, get)
	return r.chartFiles(files), ls, err
}

// render renders r from the files as edited so far and next.
func (st *hstate) render(ctx context.Context, r *helmRelease, next map[string][]byte) ([]byte, error) {
	files, ls, err := st.layers(r, next)
	if err != nil {
		return nil, err
	}
	return st.hx.rd.render(ctx, files, r, userValues(ls))
}

// current is what r renders from the files as edited so far.
func (st *hstate) current(r *helmRelease) []byte {
	if b, ok := st.renders[r]; ok {
		return b
	}
	return r.out
}

// apply applies edits of workloads releases render, and adds the results
// to res.
func (hx *Index) apply(ctx context.Context, edits []workload.Edit, res *workload.Result) {
	st := &hstate{hx: hx, cur: map[string][]byte{}, renders: map[*helmRelease][]byte{}, changes: map[string][]changes.Change{}}
	for _, e := range edits {
		notes, err := st.try(ctx, e)
		if err != nil {
			res.Refused = append(res.Refused, workload.Refusal{Workload: e.Workload, File: e.File, Err: err})
			continue
		}
		res.Notes = append(res.Notes, notes...)
	}
	paths := make([]string, 0, len(st.cur))
	for p := range st.cur {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		old := hx.files[p]
		if bytes.Equal(old, st.cur[p]) {
			continue
		}
		res.Files = append(res.Files, changes.File{Path: p, Old: old, New: st.cur[p], Changes: st.changes[p],
			Splices: []splice.Splice{splice.Whole(old, st.cur[p])}})
	}
}

// target finds the release and object an edit is for.
func (hx *Index) target(e workload.Edit) (*helmRelease, hobj, error) {
	var rs []*helmRelease
	var os []hobj
	for _, r := range hx.releases {
		if r.file != e.File {
			continue
		}
		if o, ok := r.find(e.Workload); ok {
			rs, os = append(rs, r), append(os, o)
		}
	}
	switch len(rs) {
	case 0:
		return nil, hobj{}, fmt.Errorf("%w: %s is not rendered by a release of %s", workload.ErrNotFound, e.Workload, e.File)
	case 1:
		return rs[0], os[0], nil
	}
	vias := make([]string, len(rs))
	for i, r := range rs {
		vias[i] = r.via
	}
	return nil, hobj{}, fmt.Errorf("%w: %s is rendered by %s", workload.ErrAmbiguous, e.Workload, strings.Join(vias, " and "))
}

// valueEdit is one value to write: at path of file, added when the file
// does not have it.
type valueEdit struct {
	file string
	// doc is the index of the document of the release definition whose
	// inline values are edited, -1 for a values file.
	doc      int
	path     valuePath
	old, new string
	quote    bool   // a new entry is written as a string
	field    string // the rendered field it sets
}

// try traces, places and proves one edit, and keeps it when proven.
func (st *hstate) try(ctx context.Context, e workload.Edit) ([]workload.Note, error) {
	r, o, err := st.hx.target(e)
	if err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%w: %s: %w", ErrHelm, r.via, err) }
	cur := st.current(r)
	files, ls, err := st.layers(r, nil)
	if err != nil {
		return nil, fail(err)
	}
	// What the ops make of the rendered object is what the edit must make
	// Helm render.
	label := r.via + " (rendered)"
	whole, err := workload.NewFileEdit(label, cur, true)
	if err != nil {
		return nil, fail(err)
	}
	ref := o.rendered
	w := o.w
	w.Ref, w.Line = ref, whole.Lines[o.doc]
	notes, err := whole.Apply(workload.Edit{Workload: ref, Ops: e.Ops}, w)
	if err != nil {
		return nil, fail(err)
	}
	for i := range notes {
		notes[i].Workload, notes[i].File, notes[i].Line = e.Workload, e.File, r.line
		notes[i].Field = "rendered " + notes[i].Field
	}
	if len(whole.Changes) == 0 {
		return notes, nil
	}
	vals := userValues(ls)
	var ves []valueEdit
	for _, op := range e.Ops {
		one, err := workload.NewFileEdit(label, cur, true)
		if err != nil {
			return nil, fail(err)
		}
		if _, err := one.Apply(workload.Edit{Workload: ref, Ops: []workload.Op{op}}, w); err != nil {
			return nil, fail(fmt.Errorf("%s alone: %w", op, err))
		}
		if len(one.Changes) == 0 {
			continue
		}
		c := one.Changes[0]
		for _, x := range one.Changes {
			switch {
			case x.Old == "":
				return nil, fail(fmt.Errorf("%s: %s would be added, and the chart renders no value there to edit: change the chart's templates by hand", op, x.Field))
			case x.New == "":
				return nil, fail(fmt.Errorf("%s: %s would be removed, which no value of the chart does alone: change the chart's templates by hand", op, x.Field))
			case x.Old != c.Old || x.New != c.New:
				return nil, fail(fmt.Errorf("%s changes %s and %s differently", op, c.Field, x.Field))
			}
		}
		p, err := trace(ctx, st.hx.rd.render, files, r, vals, c.Old, c.New, one.Expected)
		if err != nil {
			return nil, fail(fmt.Errorf("%s: %w", c.Field, err))
		}
		ve, err := st.place(r, ls, p, c)
		if err != nil {
			return nil, fail(fmt.Errorf("%s is set by %s: %w", c.Field, p, err))
		}
		ves = append(ves, ve)
	}

	next := map[string][]byte{}
	changed := map[string][]changes.Change{}
	for _, ve := range ves {
		if err := st.writeValue(ve, next, changed); err != nil {
			return nil, fail(err)
		}
	}
	renders, err := st.prove(ctx, next, r, whole.Expected)
	if err != nil {
		return nil, err
	}
	for p, b := range next {
		st.cur[p] = b
	}
	for x, b := range renders {
		st.renders[x] = b
	}
	for p, cs := range changed {
		for _, c := range cs {
			c.Workload, c.Reason, c.Definition = e.Workload, e.Reason, e.File
			st.changes[p] = append(st.changes[p], c)
		}
	}
	return notes, nil
}

// readers names what other than r takes values from file p: the
// releases that list it as a values file or render the chart whose
// values.yaml it is, and the definitions not rendered here that name it.
func (st *hstate) readers(p string, r *helmRelease) []string {
	var out []string
	for _, x := range st.hx.releases {
		if x != r && (slices.Contains(x.values, p) || p == path.Join(x.chart, "values.yaml") && !x.noDefault) {
			out = append(out, x.via)
		}
	}
	out = append(out, st.hx.unrenderedReaders(p)...)
	return out
}

// unrenderedReaders names the definitions not rendered here that name
// values file p.
func (hx *Index) unrenderedReaders(p string) []string {
	var out []string
	for _, u := range hx.unrendered {
		if slices.Contains(u.paths, p) {
			out = append(out, fmt.Sprintf("%s (%s:%d, not rendered here)", u.via, u.file, u.line))
		}
	}
	return out
}

// place says which file the value at p goes to (see the top of the file).
func (st *hstate) place(r *helmRelease, ls []valuesLayer, p valuePath, c changes.Change) (valueEdit, error) {
	ve := valueEdit{path: p, old: c.Old, new: c.New, field: c.Field, doc: -1}
	if v, ok := getValue(userValuesWithDefaults(ls), p); ok {
		_, isStr := v.(string)
		ve.quote = isStr
	}
	win := winner(ls, p)
	if win >= 0 && ls[win].file == "" {
		if r.inlinePath == nil {
			return ve, fmt.Errorf("it is set inline by %s, in a string or --set form that is not edited: change it there by hand", ls[win].inline)
		}
		return st.inline(r, ve)
	}
	where := "a default of a subchart or a global"
	if win >= 0 {
		where = ls[win].file
		others := st.readers(where, r)
		if len(others) == 0 {
			ve.file = where
			return ve, nil
		}
		vias := others
		verb := "renders"
		if len(vias) > 1 {
			verb = "render"
		}
		where = fmt.Sprintf("%s, which %s %s from too", where, strings.Join(vias, " and "), verb)
	}
	for i := len(ls) - 1; i > win && i > 0; i-- {
		f := ls[i].file
		if f == "" && r.inlinePath == nil || f != "" && len(st.readers(f, r)) > 0 {
			continue
		}
		if slices.ContainsFunc(p, func(e any) bool { _, ok := e.(int); return ok }) {
			return ve, fmt.Errorf("it is in a list in %s, and values set above it replace a list whole: copy the list into %s by hand", where, ls[i].name())
		}
		if f == "" {
			return st.inline(r, ve)
		}
		ve.file = f
		return ve, nil
	}
	return ve, fmt.Errorf("it comes from %s, and %s has no values file of its own to set it in", where, r.via)
}

// inline puts ve in the inline values of r's definition.
func (st *hstate) inline(r *helmRelease, ve valueEdit) (valueEdit, error) {
	if _, ok := st.file(r.file); !ok {
		return ve, fmt.Errorf("%w: %s: not read", workload.ErrNotFound, r.file)
	}
	// Edits change no document's place among the file's documents.
	ve.doc = r.doc
	ve.file, ve.path = r.file, append(slices.Clone(r.inlinePath), ve.path...)
	return ve, nil
}

// userValuesWithDefaults merges every layer, the chart's values.yaml
// included: the type a value has where it is set.
func userValuesWithDefaults(ls []valuesLayer) map[string]any {
	out := map[string]any{}
	for _, l := range ls {
		out = mergeValues(out, l.vals)
	}
	return out
}

// writeValue splices one value into its values file.
func (st *hstate) writeValue(ve valueEdit, next map[string][]byte, changed map[string][]changes.Change) error {
	b, ok := next[ve.file]
	if !ok {
		if b, ok = st.file(ve.file); !ok {
			return fmt.Errorf("%s: not read", ve.file)
		}
	}
	fe, err := splice.NewFile(ve.file, b, true)
	if err != nil {
		return err
	}
	doc := ve.doc
	if doc < 0 {
		if len(fe.Expected) != 1 || len(fe.Expected[0].Content) == 0 {
			return &located.Error{File: ve.file, Field: ve.path.String(), Err: fmt.Errorf("%w: a values file of one document with a mapping is edited, not %d documents", splice.ErrUnsupported, len(fe.Expected))}
		}
		doc = 0
	}
	name := ve.path.String()
	cs, _, err := fe.EditDoc(doc, []splice.Step{{Name: "set " + name, Run: func(d *splice.Doc) error {
		return d.SetPath(ve.path, ve.new, ve.quote, name)
	}}})
	if err != nil {
		return err
	}
	cur, ok := fe.Result()
	if !ok {
		return nil
	}
	next[ve.file] = cur
	for _, c := range cs {
		changed[ve.file] = append(changed[ve.file], changes.Change{Field: fmt.Sprintf("%s (%s)", c.Field, ve.field), Old: c.Old, New: c.New})
	}
	return nil
}

// prove renders every release that reads a file of next again: r must
// render want, every other one what it rendered. It returns the new
// renders.
func (st *hstate) prove(ctx context.Context, next map[string][]byte, r *helmRelease, want []*yaml.Node) (map[*helmRelease][]byte, error) {
	changed := make([]string, 0, len(next))
	for p := range next {
		changed = append(changed, p)
	}
	sort.Strings(changed)
	for _, p := range changed {
		// What a definition that is not rendered here makes of the
		// edited file cannot be proven.
		if us := st.hx.unrenderedReaders(p); len(us) > 0 {
			return nil, fmt.Errorf("%w: %s is also read by %s, so what the edit does there cannot be proven", ErrHelm, p, strings.Join(us, " and "))
		}
	}
	renders := map[*helmRelease][]byte{}
	for _, x := range st.hx.releases {
		if !slices.ContainsFunc(changed, x.uses) {
			continue
		}
		if x.err != nil {
			return nil, fmt.Errorf("%w: %s reads %s, which the edit changes, and does not render, so what the edit does to it cannot be proven", ErrHelm, x.via, strings.Join(changed, ", "))
		}
		out, err := st.render(ctx, x, next)
		if err != nil {
			return nil, fmt.Errorf("%w: after the edit, %s does not render: %w", ErrHelm, x.via, err)
		}
		if x != r {
			if !bytes.Equal(out, st.current(x)) {
				return nil, fmt.Errorf("%w: the edit of %s changes what %s renders, which it is not for: %s", ErrHelm, strings.Join(changed, ", "), x.via, splice.FirstDiff(st.current(x), out))
			}
			continue
		}
		if why, ok := sameDocs(out, want); !ok {
			return nil, fmt.Errorf("%w: after the edit of %s, %s renders something else than intended: %s", ErrHelm, strings.Join(changed, ", "), x.via, why)
		}
		renders[x] = out
	}
	if _, ok := renders[r]; !ok {
		return nil, fmt.Errorf("%w: %s reads none of the files edited", ErrHelm, r.via)
	}
	return renders, nil
}

// reread returns the index of the files as they are now under fsys: hx
// itself when none that a release reads changed since discovery, else a
// new index of them.
func (hx *Index) reread(ctx context.Context, fsys fs.FS) *Index {
	same := true
	now := make(map[string][]byte, len(hx.files))
	for p, b := range hx.files {
		now[p] = b
	}
	for _, r := range hx.releases {
		for _, p := range append([]string{r.file}, r.values...) {
			nb, err := checkout.ReadFile(fsys, p)
			if err != nil {
				delete(now, p)
				same = false
				continue
			}
			same = same && bytes.Equal(nb, hx.files[p])
			now[p] = nb
		}
	}
	trees := map[string]map[string][]byte{}
	for dir, c := range hx.charts {
		t, err := checkout.ReadTree(fsys, dir)
		trees[dir] = t
		if err != nil || len(t) != len(c.files) {
			same = false
			continue
		}
		for p, b := range t {
			same = same && bytes.Equal(b, c.files[p])
			if p == "values.yaml" || path.Ext(p) == ".yaml" && !strings.HasPrefix(p, "templates/") {
				now[path.Join(dir, p)] = b
			}
		}
	}
	if same {
		return hx
	}
	// The same renderer: the run's renders share its time budget.
	return newIndex(ctx, now, func(dir string) (map[string][]byte, error) {
		if t, ok := trees[dir]; ok && t != nil {
			return t, nil
		}
		return checkout.ReadTree(fsys, dir)
	}, hx.included, hx.rd)
}
