package patcher

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
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
	Changes  []Change
	// Splices turn Old into New: each replaces Old[Off:Off+Len] with Text.
	// They are sorted and do not overlap.
	Splices []Splice
}

// Splice is one byte-level replacement in a file's original text.
type Splice struct {
	Off, Len int
	Text     string
}

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
				where[i] = fmt.Sprintf("%s:%d", w.File, w.Line)
			}
			refuse(e, ws[0].File, fmt.Errorf("%w: %s in %s", ErrAmbiguous, e.Workload, strings.Join(where, ", ")))
			continue
		}
		f := ws[0].File
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
		byFile[f] = append(byFile[f], target{e, ws[0]})
	}
	sort.Strings(files)

	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ts := byFile[path]
		b, err := checkout.ReadFile(r, path)
		if err != nil {
			for _, t := range ts {
				refuse(t.e, path, &editError{file: path, err: err})
			}
			continue
		}
		run := func(whole bool) (*fileEdit, []error, error) {
			fe, err := newFileEdit(path, b, whole)
			if err != nil {
				return nil, nil, err
			}
			errs := make([]error, len(ts))
			for i, t := range ts {
				errs[i] = fe.apply(t.e, t.w)
			}
			return fe, errs, nil
		}
		fe, errs, err := run(false)
		if err == nil && !fe.whole && fe.verifyAll() != nil {
			// Each document parsed on its own as intended, but the file
			// as a whole does not: do it again, verifying the whole file
			// after every op.
			fe, errs, err = run(true)
		}
		if err != nil {
			for _, t := range ts {
				refuse(t.e, path, err)
			}
			continue
		}
		for i, t := range ts {
			if errs[i] != nil {
				refuse(t.e, path, errs[i])
			}
		}
		res.Notes = append(res.Notes, fe.notes...)
		if f, ok := fe.result(); ok {
			res.Files = append(res.Files, f)
		}
	}
	return res, nil
}

// fileEdit is one file being edited: the original bytes, cut into chunks
// that each hold whole documents, and the expected documents.
//
// Documents are independent, so an op re-parses and compares only the
// chunk of its document; the whole file is parsed and compared once at
// the end (verifyAll). A file whose chunks do not parse on their own to
// exactly the documents of the whole stream is one chunk (whole).
type fileEdit struct {
	path   string
	orig   []byte
	eol    string // the file's usual line break
	whole  bool   // one chunk: every op verifies the whole file
	chunks []*chunk
	exp    []*yaml.Node // expected documents, in file order
	lines  []int        // where each document started in orig
	ids    []usage.Ref  // the workload each document defines; Kind "" for none
	// the changes and notes of the edits applied so far
	changes []Change
	notes   []Note
}

// chunk is a run of the file from one document start marker to the next
// (or the whole file): its current text as pieces of the original and
// inserted text, and its parse, with positions relative to the chunk.
type chunk struct {
	segs  []segment
	b     []byte
	s     *stream
	first int // index in exp of its first document
	// line0 is the number of lines before the chunk in the original file:
	// messages name lines of the file as it is in the checkout.
	line0 int
}

func newFileEdit(path string, b []byte, whole bool) (*fileEdit, error) {
	fail := func(line int, err error) error { return &editError{file: path, line: line, err: err} }
	if !utf8.Valid(b) {
		return nil, fail(0, fmt.Errorf("%w: not UTF-8", ErrUnsupported))
	}
	s, err := parseStream(b)
	if err != nil {
		return nil, fail(errLine(err), err)
	}
	if s.t.odd {
		return nil, fail(0, fmt.Errorf("%w: line breaks other than LF and CRLF", ErrUnsupported))
	}
	f := &fileEdit{path: path, orig: b, eol: s.t.eol}
	for _, d := range s.docs {
		// The expected trees start as a copy of the parse; ops mutate them.
		f.exp = append(f.exp, cloneNode(d))
		f.lines = append(f.lines, d.Line)
		var id usage.Ref
		if len(d.Content) > 0 {
			id, _, _ = identify(d.Content[0])
		}
		f.ids = append(f.ids, id)
	}
	if !whole {
		f.chunks = f.split(s)
	}
	if f.chunks == nil {
		f.whole = true
		f.chunks = []*chunk{{segs: []segment{{orig: true, off: 0, end: len(b)}}, b: b, s: s}}
	}
	return f, nil
}

// split cuts the file into chunks at document start markers (--- at the
// start of a line, with the directives before it) and parses each on its
// own. It returns nil unless that gives exactly the documents and lines
// of the whole stream s.
func (f *fileEdit) split(s *stream) []*chunk {
	b := f.orig
	starts := []int{0}
	directives := false
	for _, l := range s.t.lines {
		l = max(l, s.t.bom)
		if l >= len(b) {
			continue
		}
		switch {
		case b[l] == '%':
			if !directives && l > s.t.bom {
				starts = append(starts, l)
			}
			directives = true
		case docMarker(b, l):
			if !directives && l > s.t.bom {
				starts = append(starts, l)
			}
			directives = false
		case b[l] != '#' && !blankText(b[l:s.t.lineEnd(l)]):
			directives = false
		}
	}
	var chunks []*chunk
	next, line0 := 0, 0
	for i, st := range starts {
		end := len(b)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		cs, err := parseStream(b[st:end])
		if err != nil {
			return nil
		}
		cs.t.eol = f.eol
		for _, d := range cs.docs {
			if next >= len(s.docs) || d.Line+line0 != s.docs[next].Line || compare(s.docs[next], d, "") != nil {
				return nil
			}
			next++
		}
		chunks = append(chunks, &chunk{segs: []segment{{orig: true, off: st, end: end}}, b: b[st:end], s: cs, first: next - len(cs.docs), line0: line0})
		line0 += len(cs.t.lines) - 1
	}
	if next != len(s.docs) {
		return nil
	}
	return chunks
}

// docMarker reports whether a document start marker (---) begins the line
// at l.
func docMarker(b []byte, l int) bool {
	if l+3 > len(b) || string(b[l:l+3]) != "---" {
		return false
	}
	return l+3 == len(b) || isBlank(b[l+3]) || breakLen(b, l+3) > 0
}

// apply applies one Edit, all or nothing, to the document of workload w.
// After every op the document's chunk is parsed again and compared with
// the expected trees, comments included; that parse also gives the next
// op its positions.
func (f *fileEdit) apply(e Edit, w Workload) error {
	fail := func(line int, field string, err error) error {
		return &editError{file: f.path, line: line, field: field, err: err}
	}
	ci, j, err := f.find(e.Workload, w.Line)
	if err != nil {
		return fail(0, "", err)
	}
	ch, idx, line0 := f.chunks[ci], f.chunks[ci].first+j, f.chunks[ci].line0
	if k := duplicateKey(ch.s.docs[j]); k != nil {
		return fail(k.Line+line0, k.Value, ErrDuplicateKey)
	}
	spec, _ := kindSpecFor(e.Workload.Kind)

	saved, savedExp := *ch, cloneNode(f.exp[idx])
	saved.segs = append([]segment(nil), ch.segs...)
	rollback := func() { *ch, f.exp[idx] = saved, savedExp }

	var changes []Change
	var notes []Note
	for _, op := range e.Ops {
		doc := ch.s.docs[j]
		d := &docEdit{
			file: f.path, line0: line0, t: ch.s.t, sp: spanner{t: ch.s.t, pl: places(doc)},
			root: doc.Content[0], exp: f.exp[idx].Content[0],
			tmpl: spec.template, ref: e.Workload, reason: e.Reason, step: indentStep(doc),
		}
		if err := d.editable(d.root, ""); err != nil {
			rollback()
			return err
		}
		before, err := ch.s.t.comments(ch.s.docs)
		if err != nil {
			rollback()
			return fail(0, "", err)
		}
		if err := op.apply(d); err != nil {
			rollback()
			return err
		}
		if len(d.splices) > 0 {
			if err := ch.splice(f.orig, d.splices); err != nil {
				rollback()
				return fail(0, "", fmt.Errorf("%s: %w", op, err))
			}
			if err := f.verifyChunk(ch, line0); err != nil {
				rollback()
				return err
			}
			after, err := ch.s.t.comments(ch.s.docs)
			if err == nil {
				err = keptComments(before, after, d.removed)
			}
			if err != nil {
				rollback()
				return fail(0, "", fmt.Errorf("%s: %w", op, err))
			}
		}
		changes = append(changes, d.changes...)
		notes = append(notes, d.notes...)
	}
	// KAI refuses a pod that asks for a GPU in two ways at once: check the
	// result of the whole Edit, whatever the order of its ops.
	if tmpl := lookup(ch.s.docs[j].Content[0], spec.template...); tmpl != nil {
		if n, field, err := kaiConflict(tmpl, strings.Join(spec.template, ".")); err != nil {
			rollback()
			return fail(n.Line+line0, field, err)
		}
	}
	f.changes = append(f.changes, changes...)
	f.notes = append(f.notes, notes...)
	return nil
}

// find returns the chunk and the index in it of the document that defines
// ref (ops never change what a document defines). A document without metadata.namespace matches any namespace: the
// caller may have filled in the default (as kubectl would). An exact
// namespace match wins; among several loose ones, the document that
// started at line (where Discover saw the workload) does.
func (f *fileEdit) find(ref usage.Ref, line int) (ci, j int, err error) {
	var exact, loose []int
	for i, got := range f.ids {
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
	at := func(idx int) (int, int, error) {
		for ci, c := range f.chunks {
			if idx < c.first+len(c.s.docs) {
				return ci, idx - c.first, nil
			}
		}
		return 0, 0, fmt.Errorf("%w: document %d is in no chunk", ErrVerify, idx)
	}
	switch {
	case len(cands) == 1:
		return at(cands[0])
	case len(cands) == 0:
		return 0, 0, fmt.Errorf("%w: %s is no longer in the file", ErrNotFound, ref)
	}
	for _, idx := range cands {
		if f.lines[idx] == line {
			return at(idx)
		}
	}
	return 0, 0, fmt.Errorf("%w: %s", ErrAmbiguous, ref)
}

// verifyChunk parses the current text of ch and compares its documents
// with the expected trees. line0 turns its lines into the file's.
func (f *fileEdit) verifyChunk(ch *chunk, line0 int) error {
	n := len(ch.s.docs)
	s, err := parseStream(ch.b)
	if err != nil {
		return &editError{file: f.path, line: errLine(err) + line0, err: fmt.Errorf("%w: the result does not parse: %v", ErrVerify, err)}
	}
	s.t.eol = f.eol
	if len(s.docs) != n {
		return &editError{file: f.path, err: fmt.Errorf("%w: expected %d documents, got %d", ErrVerify, n, len(s.docs))}
	}
	for i, d := range s.docs {
		if m := compare(f.exp[ch.first+i], d, ""); m != nil {
			return &editError{file: f.path, line: m.line + line0, field: m.path, err: fmt.Errorf("%w: %s", ErrVerify, m.msg)}
		}
	}
	ch.s = s
	return nil
}

// verifyAll parses the whole current text and compares every document
// with the expected trees. With one chunk every op did that already.
func (f *fileEdit) verifyAll() error {
	if f.whole {
		return nil
	}
	s, err := parseStream(f.current())
	if err != nil {
		return err
	}
	if len(s.docs) != len(f.exp) {
		return fmt.Errorf("%w: expected %d documents, got %d", ErrVerify, len(f.exp), len(s.docs))
	}
	for i, d := range s.docs {
		if m := compare(f.exp[i], d, ""); m != nil {
			return m
		}
	}
	return nil
}

// current is the current text of the file.
func (f *fileEdit) current() []byte {
	if len(f.chunks) == 1 {
		return f.chunks[0].b
	}
	var b []byte
	for _, c := range f.chunks {
		b = append(b, c.b...)
	}
	return b
}

// segment is a piece of the current text: either orig[off:end] or lit.
type segment struct {
	orig     bool
	off, end int
	lit      string
}

func (s segment) len() int {
	if s.orig {
		return s.end - s.off
	}
	return len(s.lit)
}

func (s segment) sub(i, j int) segment {
	if s.orig {
		return segment{orig: true, off: s.off + i, end: s.off + j}
	}
	return segment{lit: s.lit[i:j]}
}

// splice applies splices given in offsets of the chunk's current text.
func (f *chunk) splice(orig []byte, sps []splice) error {
	sort.SliceStable(sps, func(i, j int) bool {
		if sps[i].off != sps[j].off {
			return sps[i].off < sps[j].off
		}
		return sps[i].end < sps[j].end
	})
	var merged []splice
	for _, s := range sps {
		if s.off > s.end || s.end > len(f.b) {
			return fmt.Errorf("%w: splice out of range", ErrVerify)
		}
		if n := len(merged); n > 0 {
			prev := &merged[n-1]
			switch {
			case prev.end > s.off && prev.text == "" && s.text == "":
				// two deletions that share bytes (e.g. both take the same
				// line break): delete the union
				prev.end = max(prev.end, s.end)
				continue
			case prev.end > s.off, prev.off == s.off && prev.off == prev.end && s.off == s.end:
				return fmt.Errorf("%w: overlapping splices", ErrVerify)
			}
		}
		merged = append(merged, s)
	}
	sps = merged
	for i := len(sps) - 1; i >= 0; i-- {
		f.segs = replaceSegs(f.segs, sps[i].off, sps[i].end, sps[i].text)
	}
	var b []byte
	for _, s := range f.segs {
		if s.orig {
			b = append(b, orig[s.off:s.end]...)
		} else {
			b = append(b, s.lit...)
		}
	}
	f.b = b
	return nil
}

// replaceSegs replaces the current-text range [o, e) with lit.
func replaceSegs(segs []segment, o, e int, lit string) []segment {
	var out []segment
	pos, done := 0, false
	insert := func() {
		if !done && lit != "" {
			out = append(out, segment{lit: lit})
		}
		done = true
	}
	for _, s := range segs {
		n := s.len()
		a, z := pos, pos+n
		pos = z
		if z <= o {
			out = append(out, s)
			continue
		}
		if a < o {
			out = append(out, s.sub(0, o-a))
		}
		insert()
		if z > e {
			out = append(out, s.sub(max(e-a, 0), n))
		}
	}
	insert()
	return out
}

// result returns the file when its bytes changed.
func (f *fileEdit) result() (File, bool) {
	cur := f.current()
	if string(cur) == string(f.orig) {
		return File{}, false
	}
	var sps []Splice
	at := 0
	var pend strings.Builder
	flush := func(to int) {
		if to != at || pend.Len() > 0 {
			sps = append(sps, Splice{Off: at, Len: to - at, Text: pend.String()})
			pend.Reset()
		}
	}
	for _, c := range f.chunks {
		for _, s := range c.segs {
			if !s.orig {
				pend.WriteString(s.lit)
				continue
			}
			flush(s.off)
			at = s.end
		}
	}
	flush(len(f.orig))
	return File{Path: f.path, Old: f.orig, New: cur, Changes: f.changes, Splices: sps}, true
}

// cloneNode deep-copies a node tree. (kyaml's RNode.Copy would unwrap a
// document node.) Alias targets are shared, which compare never follows.
func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = cloneNode(k)
	}
	return &c
}
