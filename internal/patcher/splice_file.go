package patcher

// The splice engine: the files named splice_*.go. It knows YAML text, not
// workloads: a fileEdit holds one file's bytes and expected documents,
// editDoc runs docSteps on one document, and the docEdit primitives
// (setString, insertEntry, deleteEntry, appendItem, editInScalar) splice
// bytes and change the expected tree in the same stroke; every step is
// verified by parsing again. The workload edits (ops.go, vllm.go, apply.go)
// and any other editor of YAML files (a kustomization, a patch file, a
// values file) are built on it and say what the changes are for.

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

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
	if len(starts) == 1 {
		// One chunk is the whole file, already parsed: the caller
		// verifies it whole, with no second parse of the same bytes.
		return nil
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

// docStep is one change to one document: run records splices against the
// current text of the document and makes the same change to its expected
// tree (the primitives of docEdit do both). name says which step failed.
type docStep struct {
	name string
	run  func(d *docEdit) error
}

// editDoc runs steps on document idx, all or nothing. Each step gets a
// fresh parse of the document's chunk; after each, the chunk is parsed
// again and compared with the expected trees, and every comment outside
// what the step meant to remove must still be there, in order. The
// returned changes carry only Field, Old and New; undo puts the document
// back as it was, for a caller whose own check of the result fails.
func (f *fileEdit) editDoc(idx int, steps []docStep) (changes []spChange, undo func(), err error) {
	fail := func(line int, field string, err error) error {
		return &editError{file: f.path, line: line, field: field, err: err}
	}
	ci, j, err := f.locate(idx)
	if err != nil {
		return nil, nil, fail(0, "", err)
	}
	ch, line0 := f.chunks[ci], f.chunks[ci].line0
	if k := duplicateKey(ch.s.docs[j]); k != nil {
		return nil, nil, fail(k.Line+line0, k.Value, ErrDuplicateKey)
	}
	saved, savedExp := *ch, cloneNode(f.exp[idx])
	saved.segs = append([]segment(nil), ch.segs...)
	undo = func() { *ch, f.exp[idx] = saved, savedExp }

	// The comments after one step are those before the next: the text
	// is the same.
	var before []comment
	haveBefore := false
	for _, st := range steps {
		doc := ch.s.docs[j]
		d := &docEdit{
			file: f.path, line0: line0, t: ch.s.t, sp: spanner{t: ch.s.t, pl: ch.s.places(j)},
			root: doc.Content[0], exp: f.exp[idx].Content[0], step: indentStep(doc),
		}
		if err := d.editable(d.root, ""); err != nil {
			undo()
			return nil, nil, err
		}
		if !haveBefore {
			before, err = ch.s.comments()
			if err != nil {
				undo()
				return nil, nil, fail(0, "", err)
			}
			haveBefore = true
		}
		if err := st.run(d); err != nil {
			undo()
			return nil, nil, err
		}
		if len(d.splices) > 0 {
			if err := ch.splice(f.orig, d.splices); err != nil {
				undo()
				return nil, nil, fail(0, "", fmt.Errorf("%s: %w", st.name, err))
			}
			if err := f.verifyChunk(ch, line0); err != nil {
				undo()
				return nil, nil, err
			}
			after, err := ch.s.comments()
			if err == nil {
				err = keptComments(before, after, d.removed)
			}
			if err != nil {
				undo()
				return nil, nil, fail(0, "", fmt.Errorf("%s: %w", st.name, err))
			}
			before = after
		}
		changes = append(changes, d.changes...)
	}
	return changes, undo, nil
}

// locate returns the chunk holding document idx and its index there.
func (f *fileEdit) locate(idx int) (ci, j int, err error) {
	for ci, c := range f.chunks {
		if idx < c.first+len(c.s.docs) {
			return ci, idx - c.first, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: document %d is in no chunk", ErrVerify, idx)
}

// doc returns the current parse of document idx with the number of lines
// of the file before its chunk; nil when there is no such document.
func (f *fileEdit) doc(idx int) (*yaml.Node, int) {
	ci, j, err := f.locate(idx)
	if err != nil {
		return nil, 0
	}
	return f.chunks[ci].s.docs[j], f.chunks[ci].line0
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

// result returns the current text of the file, and whether it differs
// from the original.
func (f *fileEdit) result() ([]byte, bool) {
	cur := f.current()
	return cur, string(cur) != string(f.orig)
}

// splices returns the byte replacements that turn the original text into
// the current one.
func (f *fileEdit) splices() []Splice {
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
	return sps
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
