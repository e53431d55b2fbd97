package patcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"

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
// its ops the whole file is parsed again and every document compared with
// the expected trees (DESIGN §10, invariant 2). A refused edit leaves no
// trace in its file; other edits of the same file still apply. Whole-file
// problems (invalid YAML, conflict markers, unusual line breaks) refuse
// every edit of the file. The error is only for an unusable root or a
// cancelled ctx.
func Apply(ctx context.Context, root string, inv *Inventory, edits []Edit) (*Result, error) {
	if inv == nil {
		return nil, errors.New("patcher: nil inventory")
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
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
		b, err := readFile(r, path)
		if err != nil {
			for _, t := range ts {
				refuse(t.e, path, &editError{file: path, err: err})
			}
			continue
		}
		fe, err := newFileEdit(path, b)
		if err != nil {
			for _, t := range ts {
				refuse(t.e, path, err)
			}
			continue
		}
		for _, t := range ts {
			if err := fe.apply(t.e, t.w); err != nil {
				refuse(t.e, path, err)
			}
		}
		res.Notes = append(res.Notes, fe.notes...)
		if f, ok := fe.result(); ok {
			res.Files = append(res.Files, f)
		}
	}
	return res, nil
}

// fileEdit is one file being edited: the original bytes, the current text
// as pieces of the original and inserted text, its parse, and the
// expected trees.
type fileEdit struct {
	path    string
	orig    []byte
	segs    []segment
	cur     []byte
	parsed  *stream      // parse of cur
	exp     []*yaml.Node // expected documents
	changes []Change
	notes   []Note
}

func newFileEdit(path string, b []byte) (*fileEdit, error) {
	fail := func(line int, err error) error { return &editError{file: path, line: line, err: err} }
	if !utf8.Valid(b) {
		return nil, fail(0, fmt.Errorf("%w: not UTF-8", ErrUnsupported))
	}
	s, err := parseStream(b)
	if err != nil {
		var le *lineErr
		if errors.As(err, &le) {
			return nil, fail(le.line, le.err)
		}
		return nil, fail(0, err)
	}
	if s.t.odd {
		return nil, fail(0, fmt.Errorf("%w: line breaks other than LF and CRLF", ErrUnsupported))
	}
	f := &fileEdit{path: path, orig: b, cur: b, parsed: s, segs: []segment{{orig: true, off: 0, end: len(b)}}}
	for _, d := range s.docs {
		// The expected trees start as a copy of the parse; ops mutate them.
		f.exp = append(f.exp, cloneNode(d))
	}
	return f, nil
}

// apply applies one Edit, all or nothing, to the document of workload w.
// After every op the whole file is parsed again and compared with the
// expected trees; that parse also gives the next op its positions.
func (f *fileEdit) apply(e Edit, w Workload) error {
	fail := func(line int, field string, err error) error {
		return &editError{file: f.path, line: line, field: field, err: err}
	}
	s := f.parsed
	idx, err := s.find(e.Workload, w.Line)
	if err != nil {
		return fail(0, "", err)
	}
	if k := duplicateKey(s.docs[idx]); k != nil {
		return fail(k.Line, k.Value, ErrDuplicateKey)
	}
	spec, _ := kindSpecFor(e.Workload.Kind)

	saved := struct {
		cur    []byte
		segs   []segment
		parsed *stream
		exp    *yaml.Node
	}{f.cur, append([]segment(nil), f.segs...), f.parsed, cloneNode(f.exp[idx])}
	rollback := func() { f.cur, f.segs, f.parsed, f.exp[idx] = saved.cur, saved.segs, saved.parsed, saved.exp }

	var changes []Change
	var notes []Note
	for _, op := range e.Ops {
		doc := s.docs[idx]
		d := &docEdit{
			file: f.path, t: s.t, sp: spanner{t: s.t, pl: places(doc)},
			root: doc.Content[0], exp: f.exp[idx].Content[0],
			tmpl: spec.template, ref: e.Workload, reason: e.Reason, step: indentStep(doc),
		}
		if err := d.editable(d.root, ""); err != nil {
			rollback()
			return err
		}
		before, err := s.t.comments(s.docs)
		if err != nil {
			rollback()
			return fail(0, "", err)
		}
		if err := op.apply(d); err != nil {
			rollback()
			return err
		}
		if len(d.splices) > 0 {
			if err := f.splice(d.splices); err != nil {
				rollback()
				return fail(0, "", fmt.Errorf("%s: %w", op, err))
			}
		}
		if s, err = f.verify(); err != nil {
			rollback()
			return err
		}
		after, err := s.t.comments(s.docs)
		if err == nil {
			err = keptComments(before, after, d.removed)
		}
		if err != nil {
			rollback()
			return fail(0, "", fmt.Errorf("%s: %w", op, err))
		}
		changes = append(changes, d.changes...)
		notes = append(notes, d.notes...)
	}
	// KAI refuses a pod that asks for a GPU in two ways at once: check the
	// result of the whole Edit, whatever the order of its ops.
	if tmpl := lookup(s.docs[idx].Content[0], spec.template...); tmpl != nil {
		if n, field, err := kaiConflict(tmpl, strings.Join(spec.template, ".")); err != nil {
			rollback()
			return fail(n.Line, field, err)
		}
	}
	f.parsed = s
	f.changes = append(f.changes, changes...)
	f.notes = append(f.notes, notes...)
	return nil
}

// find returns the index of the document that defines ref. A document
// without metadata.namespace matches any namespace: the caller may have
// filled in the default (as kubectl would). An exact namespace match wins;
// among several loose ones, the document at line (where Discover saw the
// workload) does.
func (s *stream) find(ref usage.Ref, line int) (int, error) {
	var exact, loose []int
	for i, doc := range s.docs {
		if len(doc.Content) == 0 {
			continue
		}
		got, _, ok := identify(doc.Content[0])
		if !ok || got.Kind != ref.Kind || got.Name != ref.Name {
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
		return -1, fmt.Errorf("%w: %s is no longer in the file", ErrNotFound, ref)
	}
	for _, i := range cands {
		if s.docs[i].Line == line {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%w: %s", ErrAmbiguous, ref)
}

// verify parses the current text (unless it is already parsed) and
// compares every document with the expected trees. It returns the parse.
func (f *fileEdit) verify() (*stream, error) {
	s := f.parsed
	if s == nil {
		var err error
		if s, err = parseStream(f.cur); err != nil {
			line := 0
			var le *lineErr
			if errors.As(err, &le) {
				line = le.line
			}
			return nil, &editError{file: f.path, line: line, err: fmt.Errorf("%w: the result does not parse: %v", ErrVerify, err)}
		}
		f.parsed = s
	}
	if len(s.docs) != len(f.exp) {
		return nil, &editError{file: f.path, err: fmt.Errorf("%w: expected %d documents, got %d", ErrVerify, len(f.exp), len(s.docs))}
	}
	for i := range s.docs {
		if m := compare(f.exp[i], s.docs[i], ""); m != nil {
			return nil, &editError{file: f.path, line: m.line, field: m.path, err: fmt.Errorf("%w: %s", ErrVerify, m.msg)}
		}
	}
	return s, nil
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

// splice applies splices given in current-text offsets.
func (f *fileEdit) splice(sps []splice) error {
	sort.SliceStable(sps, func(i, j int) bool {
		if sps[i].off != sps[j].off {
			return sps[i].off < sps[j].off
		}
		return sps[i].end < sps[j].end
	})
	var merged []splice
	for _, s := range sps {
		if s.off > s.end || s.end > len(f.cur) {
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
	var b strings.Builder
	for _, s := range f.segs {
		if s.orig {
			b.Write(f.orig[s.off:s.end])
		} else {
			b.WriteString(s.lit)
		}
	}
	f.cur = []byte(b.String())
	f.parsed = nil
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
	if string(f.cur) == string(f.orig) {
		return File{}, false
	}
	var sps []Splice
	cur := 0
	var pend strings.Builder
	flush := func(to int) {
		if to != cur || pend.Len() > 0 {
			sps = append(sps, Splice{Off: cur, Len: to - cur, Text: pend.String()})
			pend.Reset()
		}
	}
	for _, s := range f.segs {
		if !s.orig {
			pend.WriteString(s.lit)
			continue
		}
		flush(s.off)
		cur = s.end
	}
	flush(len(f.orig))
	return File{Path: f.path, Old: f.orig, New: f.cur, Changes: f.changes, Splices: sps}, true
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
