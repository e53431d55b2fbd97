package splice

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// File is one file being edited: the original bytes, cut into chunks
// that each hold whole documents, and the expected documents.
//
// Documents are independent, so an op re-parses and compares only the
// chunk of its document; the whole file is parsed and compared once at
// the end (verifyAll). A file whose chunks do not parse on their own to
// exactly the documents of the whole stream is one chunk (whole).
type File struct {
	Path     string
	Orig     []byte
	eol      string // the file's usual line break
	Whole    bool   // one chunk: every op verifies the whole file
	chunks   []*chunk
	Expected []*yaml.Node // expected documents, in file order
	Lines    []int        // where each document started in orig

	// batch is set for a file made by NewParsedFile or NewHeldFile: steps
	// run against the parse of the original text, their splices wait in
	// their chunk, and Finish proves the result with one parse of each
	// chunk edited (the whole file for NewParsedFile).
	batch   bool
	held    *Held
	spoiled error // the first step that failed: Finish refuses the batch
	// owned holds the nodes of a held file's expected trees that are
	// their own, not shared with the original parse (Doc.owned).
	owned map[*yaml.Node]bool
}

// ranSteps are steps a batch ran on document idx, run again by Finish
// on the result, where each must find nothing left to do.
type ranSteps struct {
	idx   int
	steps []Step
}

// chunk is a run of the file from one document start marker to the next
// (or the whole file): its current text as pieces of the original and
// inserted text, and its parse, with positions relative to the chunk.
type chunk struct {
	segs  []segment
	b     []byte
	s     *Stream // nil for a held chunk no step has edited
	first int     // index in exp of its first document
	docs  int     // how many documents it holds
	// line0 is the number of lines before the chunk in the original file:
	// messages name lines of the file as it is in the checkout.
	line0 int

	// A batch's steps' splices wait here for Finish, with what they
	// meant to remove and the steps, to run again on the result.
	pending []splice
	removed [][2]int
	ran     []ranSteps
}

func NewFile(path string, b []byte, whole bool) (*File, error) {
	fail := func(line int, err error) error { return &located.Error{File: path, Line: line, Err: err} }
	if !utf8.Valid(b) {
		return nil, fail(0, fmt.Errorf("%w: not UTF-8", ErrUnsupported))
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fail(LineOf(err), err)
	}
	if s.t.odd {
		return nil, fail(0, fmt.Errorf("%w: line breaks other than LF and CRLF", ErrUnsupported))
	}
	f := &File{Path: path, Orig: b, eol: s.t.eol}
	for _, d := range s.Docs {
		// The expected trees start as a copy of the parse; ops mutate them.
		f.Expected = append(f.Expected, Clone(d))
		f.Lines = append(f.Lines, d.Line)
	}
	if !whole {
		f.chunks = f.split(s)
	}
	if f.chunks == nil {
		f.Whole = true
		f.chunks = []*chunk{{segs: []segment{{orig: true, off: 0, end: len(b)}}, b: b, s: s, docs: len(s.Docs)}}
	}
	return f, nil
}

// NewParsedFile is a File of b, whose parse s (from Parse(b)) a caller
// already holds, that edits in one batch: every step of every document
// runs against s, its splices kept for later, and Finish applies them all
// and proves the result with one parse of the whole file, where NewFile's
// steps each parse their document's text again. s is only read, so one
// parse may serve several Files. A batch that Finish refuses proves
// nothing about the edits themselves: the caller does them again on a
// NewFile, step by step.
func NewParsedFile(path string, b []byte, s *Stream) (*File, error) {
	fail := func(err error) error { return &located.Error{File: path, Err: err} }
	if !utf8.Valid(b) {
		return nil, fail(fmt.Errorf("%w: not UTF-8", ErrUnsupported))
	}
	if s.t.odd {
		return nil, fail(fmt.Errorf("%w: line breaks other than LF and CRLF", ErrUnsupported))
	}
	// A Stream of its own: the places it indexes are its own.
	own := &Stream{t: s.t, Docs: s.Docs}
	f := &File{Path: path, Orig: b, eol: s.t.eol, Whole: true, batch: true}
	for _, d := range s.Docs {
		f.Expected = append(f.Expected, Clone(d))
		f.Lines = append(f.Lines, d.Line)
	}
	f.chunks = []*chunk{{segs: []segment{{orig: true, off: 0, end: len(b)}}, b: b, s: own, docs: len(own.Docs)}}
	return f, nil
}

// NewHeldFile is a File of b, which discovery held as h (Hold), that
// edits in one batch as NewParsedFile does, but document by document:
// a document's tree is made again from h when a step first edits it,
// and Finish parses only the documents edited, each alone, where
// NewParsedFile's Finish parses the whole file. h must be of b.
func NewHeldFile(path string, b []byte, h *Held) (*File, error) {
	if !utf8.Valid(b) {
		return nil, &located.Error{File: path, Err: fmt.Errorf("%w: not UTF-8", ErrUnsupported)}
	}
	f := &File{Path: path, Orig: b, eol: h.eol, batch: true, held: h,
		Expected: make([]*yaml.Node, len(h.docAt)), Lines: h.lines}
	f.chunks = make([]*chunk, len(h.chunks))
	for i, c := range h.chunks {
		ch := &chunk{segs: []segment{{orig: true, off: c.off, end: c.end}}, b: b[c.off:c.end], first: c.doc, line0: c.line0}
		if c.doc >= 0 {
			ch.docs = 1
		} else {
			ch.first = 0
		}
		f.chunks[i] = ch
	}
	return f, nil
}

// Held reports whether f edits from a Held (NewHeldFile).
func (f *File) Held() bool { return f.held != nil }

// Spoil refuses a batch from outside: Finish returns err, and the caller
// edits the file again from a parse. A held file's caller spoils it when
// a workload is not in a document discovery kept.
func (f *File) Spoil(err error) {
	if f.batch {
		f.spoiled = cmp.Or(f.spoiled, err)
	}
}

// split cuts the file into chunks at document start markers (--- at the
// start of a line, with the directives before it) and parses each on its
// own. It returns nil unless that gives exactly the documents and lines
// of the whole stream s.
func (f *File) split(s *Stream) []*chunk {
	b := f.Orig
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
		cs, err := Parse(b[st:end])
		if err != nil {
			return nil
		}
		cs.t.eol = f.eol
		for _, d := range cs.Docs {
			if next >= len(s.Docs) || d.Line+line0 != s.Docs[next].Line || Compare(s.Docs[next], d, "") != nil {
				return nil
			}
			next++
		}
		chunks = append(chunks, &chunk{segs: []segment{{orig: true, off: st, end: end}}, b: b[st:end], s: cs, first: next - len(cs.Docs), docs: len(cs.Docs), line0: line0})
		line0 += len(cs.t.lines) - 1
	}
	if next != len(s.Docs) {
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

// Step is one change to one document: run records splices against the
// current text of the document and makes the same change to its expected
// tree (the primitives of docEdit do both). name says which step failed.
type Step struct {
	Name string
	Run  func(d *Doc) error
}

// EditDoc runs steps on document idx, all or nothing. Each step gets a
// fresh parse of the document's chunk; after each, the chunk is parsed
// again and compared with the expected trees, and every comment outside
// what the step meant to remove must still be there, in order. The
// returned changes carry only Field, Old and New; undo puts the document
// back as it was, for a caller whose own check of the result fails.
func (f *File) EditDoc(idx int, steps []Step) (changes []Change, undo func(), err error) {
	if f.batch {
		return f.batchDoc(idx, steps)
	}
	fail := func(line int, field string, err error) error {
		return &located.Error{File: f.Path, Line: line, Field: field, Err: err}
	}
	ci, j, err := f.locate(idx)
	if err != nil {
		return nil, nil, fail(0, "", err)
	}
	ch, line0 := f.chunks[ci], f.chunks[ci].line0
	if k := duplicateKey(ch.s.Docs[j]); k != nil {
		return nil, nil, fail(k.Line+line0, k.Value, ErrDuplicateKey)
	}
	saved, savedExp := *ch, Clone(f.Expected[idx])
	saved.segs = append([]segment(nil), ch.segs...)
	undo = func() { *ch, f.Expected[idx] = saved, savedExp }

	// The comments after one step are those before the next: the text
	// is the same.
	var before []comment
	haveBefore := false
	for _, st := range steps {
		doc := ch.s.Docs[j]
		d := &Doc{
			File: f.Path, Line0: line0, t: ch.s.t, sp: spanner{t: ch.s.t, pl: ch.s.placer(j)},
			Root: doc.Content[0], exp: f.Expected[idx].Content[0], step: indentStep(doc),
		}
		if err := d.Editable(d.Root, ""); err != nil {
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
		if err := st.Run(d); err != nil {
			undo()
			return nil, nil, err
		}
		if len(d.splices) > 0 {
			if err := ch.splice(f.Orig, d.splices); err != nil {
				undo()
				return nil, nil, fail(0, "", fmt.Errorf("%s: %w", st.Name, err))
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
				return nil, nil, fail(0, "", fmt.Errorf("%s: %w", st.Name, err))
			}
			before = after
		}
		changes = append(changes, d.changes...)
	}
	return changes, undo, nil
}

// batchDoc is EditDoc in a batch: the steps run against the original
// parse, one after the other on the expected tree, and their splices wait
// for Finish. A failing step spoils the batch (it may have read what an
// earlier step changed only in the expected tree); so does a document a
// step may not edit.
func (f *File) batchDoc(idx int, steps []Step) (changes []Change, undo func(), err error) {
	// A batch is not undone step by step: what fails, or is undone,
	// spoils it, and the caller does it all again step by step.
	spoil := func(err error) ([]Change, func(), error) {
		f.spoiled = cmp.Or(f.spoiled, err)
		return nil, nil, err
	}
	ch, j, err := f.open(idx)
	if err != nil {
		return spoil(&located.Error{File: f.Path, Err: err})
	}
	doc := ch.s.Docs[j]
	if k := duplicateKey(doc); k != nil {
		return spoil(&located.Error{File: f.Path, Line: k.Line + ch.line0, Field: k.Value, Err: ErrDuplicateKey})
	}
	step := indentStep(doc)
	for _, st := range steps {
		d := &Doc{File: f.Path, Line0: ch.line0, t: ch.s.t, sp: spanner{t: ch.s.t, pl: ch.s.placer(j)},
			Root: doc.Content[0], exp: f.Expected[idx].Content[0], step: step, owned: f.owned}
		if err := d.Editable(d.Root, ""); err != nil {
			return spoil(err)
		}
		if err := st.Run(d); err != nil {
			return spoil(err)
		}
		ch.pending = append(ch.pending, d.splices...)
		ch.removed = append(ch.removed, d.removed...)
		changes = append(changes, d.changes...)
	}
	ch.ran = append(ch.ran, ranSteps{idx: idx, steps: steps})
	return changes, func() { f.spoiled = cmp.Or(f.spoiled, errUndone) }, nil
}

// open returns the chunk of document idx in a batch, and its index
// there; a held document's tree is made again the first time.
func (f *File) open(idx int) (*chunk, int, error) {
	ci, j, err := f.locate(idx)
	if err != nil {
		return nil, 0, err
	}
	ch := f.chunks[ci]
	if ch.s != nil {
		return ch, j, nil
	}
	tree := f.held.chunks[ci].tree
	if tree == nil {
		return nil, 0, fmt.Errorf("%w: document %d was not kept for editing", ErrVerify, idx)
	}
	t := newText(ch.b)
	t.eol = f.eol
	orig := tree.thaw()
	ch.s = &Stream{t: t, Docs: []*yaml.Node{orig}}
	// The expected tree shares the original's nodes but its document
	// node and root, and a step's expNode copies what it changes: a
	// second tree of every node was a sixth of a plan's allocations.
	if f.owned == nil {
		f.owned = map[*yaml.Node]bool{}
	}
	exp := ownCopy(orig)
	f.owned[exp] = true
	if len(exp.Content) > 0 {
		(&Doc{owned: f.owned}).own(exp, 0)
	}
	f.Expected[idx] = exp
	return ch, 0, nil
}

// errUndone spoils a batch one of whose edits its caller undid.
var errUndone = fmt.Errorf("%w: an edit of the batch was undone", ErrVerify)

// Finish ends a batch (NewParsedFile, NewHeldFile): it applies every
// step's splices to the original text of their chunk, parses each chunk
// edited once (or predicts the parse, predict.go) and compares each of its documents with its expected tree;
// every comment of the chunk outside what the steps meant to remove must
// still be there, in order, and no other; no edited document may hold a
// key twice; and each step, run again on the result, must find nothing
// left to do (so that no step acted on what an earlier one had already
// changed). A held file's chunks must also still be cut where they were
// (held.go says why that proves the file). Any failure refuses the whole
// batch and leaves the text as it was. On a File not in a batch it is
// VerifyAll.
func (f *File) Finish() error {
	if !f.batch {
		return f.VerifyAll()
	}
	if f.spoiled != nil {
		return f.spoiled
	}
	saved := make([]chunk, len(f.chunks))
	for i, ch := range f.chunks {
		saved[i] = *ch
	}
	for i, ch := range f.chunks {
		if len(ch.ran) == 0 {
			continue
		}
		err := f.finish(ch)
		if err == nil && f.held != nil {
			err = stillCut(ch, i, len(f.chunks))
		}
		if err != nil {
			for i, ch := range f.chunks {
				*ch = saved[i]
			}
			f.spoiled = err
			return &located.Error{File: f.Path, Err: err}
		}
	}
	for _, ch := range f.chunks {
		ch.pending, ch.removed, ch.ran = nil, nil, nil
	}
	return nil
}

// stillCut checks that chunk i of n, edited, still starts with its
// document marker (but the first) and ends with a line break (but the
// last), and that no line of it is a directive or holds a byte order
// mark: so the stream is cut where it was, and each chunk parses in it
// as it parses alone.
func stillCut(ch *chunk, i, n int) error {
	b := ch.b
	switch {
	case i > 0 && !docMarker(b, 0):
		return fmt.Errorf("%w: the document no longer starts with its ---", ErrVerify)
	case i < n-1 && (len(b) == 0 || b[len(b)-1] != '\n'):
		return fmt.Errorf("%w: the document no longer ends with a line break before the next ---", ErrVerify)
	case bytes.Contains(b, []byte("\ufeff")):
		return fmt.Errorf("%w: a byte order mark inside the file", ErrVerify)
	}
	for l := 0; l < len(b); l = nextLineStart(b, l) {
		if b[l] == '%' {
			return fmt.Errorf("%w: a directive inside the file", ErrVerify)
		}
	}
	return nil
}

// nextLineStart returns the start of the line after the one at l, or
// len(b).
func nextLineStart(b []byte, l int) int {
	for l < len(b) {
		if n := breakLen(b, l); n > 0 {
			return l + n
		}
		l++
	}
	return l
}

// finish proves the batch of one chunk, as Finish says.
func (f *File) finish(ch *chunk) error {
	before, err := ch.s.comments()
	if err != nil {
		return err
	}
	ch.segs = append([]segment(nil), ch.segs...)
	orig := ch.b
	if err := ch.splice(f.Orig, ch.pending); err != nil {
		return err
	}
	s := f.predict(ch, orig)
	if s == nil {
		if s, err = Parse(ch.b); err != nil {
			return fmt.Errorf("%w: the result does not parse: %w", ErrVerify, err)
		}
		s.t.eol = f.eol
	}
	if len(s.Docs) != ch.docs {
		return fmt.Errorf("%w: expected %d documents, got %d", ErrVerify, ch.docs, len(s.Docs))
	}
	for i, d := range s.Docs {
		if m := Compare(f.Expected[ch.first+i], d, ""); m != nil {
			return fmt.Errorf("%w: line %d: %s", ErrVerify, m.line+ch.line0, m.Error())
		}
	}
	after, err := s.comments()
	if err == nil {
		err = keptComments(before, after, ch.removed)
	}
	if err != nil {
		return err
	}
	// The steps run again on the result, with the expected trees it
	// matches: none may find anything to change, in the text or in them.
	for _, r := range ch.ran {
		doc := s.Docs[r.idx-ch.first]
		if k := duplicateKey(doc); k != nil {
			return fmt.Errorf("%w: line %d: %s", ErrDuplicateKey, k.Line+ch.line0, k.Value)
		}
		step := indentStep(doc)
		for _, st := range r.steps {
			d := &Doc{File: f.Path, Line0: ch.line0, t: s.t, sp: spanner{t: s.t, pl: s.placer(r.idx - ch.first)}, Root: doc.Content[0], exp: f.Expected[r.idx].Content[0], step: step, owned: f.owned}
			if err := st.Run(d); err != nil {
				return fmt.Errorf("%w: %s, run again on the result: %w", ErrVerify, st.Name, err)
			}
			if len(d.splices) > 0 {
				return fmt.Errorf("%w: %s is not done in the result", ErrVerify, st.Name)
			}
		}
		if m := Compare(f.Expected[r.idx], doc, ""); m != nil {
			return fmt.Errorf("%w: run again on the result, a step changed %s", ErrVerify, m.Error())
		}
	}
	ch.s = s
	return nil
}

// Batch reports whether f edits in one batch (NewParsedFile).
func (f *File) Batch() bool { return f.batch }

// locate returns the chunk holding document idx and its index there.
func (f *File) locate(idx int) (ci, j int, err error) {
	if f.held != nil {
		if idx >= 0 && idx < len(f.held.docAt) {
			return f.held.docAt[idx], 0, nil
		}
	} else if idx >= 0 {
		for ci, c := range f.chunks {
			if idx < c.first+c.docs {
				return ci, idx - c.first, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("%w: document %d is in no chunk", ErrVerify, idx)
}

// Document returns the current parse of document idx with the number of lines
// of the file before its chunk; nil when there is no such document, or it
// is a held document not kept.
func (f *File) Document(idx int) (*yaml.Node, int) {
	var ch *chunk
	var j int
	var err error
	if f.held != nil {
		ch, j, err = f.open(idx)
	} else if ci, jj, lerr := f.locate(idx); lerr == nil {
		ch, j = f.chunks[ci], jj
	} else {
		err = lerr
	}
	if err != nil {
		return nil, 0
	}
	return ch.s.Docs[j], ch.line0
}

// verifyChunk parses the current text of ch and compares its documents
// with the expected trees. line0 turns its lines into the file's.
func (f *File) verifyChunk(ch *chunk, line0 int) error {
	n := len(ch.s.Docs)
	s, err := Parse(ch.b)
	if err != nil {
		return &located.Error{File: f.Path, Line: LineOf(err) + line0, Err: fmt.Errorf("%w: the result does not parse: %w", ErrVerify, err)}
	}
	s.t.eol = f.eol
	if len(s.Docs) != n {
		return &located.Error{File: f.Path, Err: fmt.Errorf("%w: expected %d documents, got %d", ErrVerify, n, len(s.Docs))}
	}
	for i, d := range s.Docs {
		if m := Compare(f.Expected[ch.first+i], d, ""); m != nil {
			return &located.Error{File: f.Path, Line: m.line + line0, Field: m.path, Err: fmt.Errorf("%w: %s", ErrVerify, m.msg)}
		}
	}
	ch.s = s
	return nil
}

// Edit runs edit on the file cut into chunks, where each step is proven
// on its own document's chunk, which is cheap. When the result then does
// not parse as a whole to the expected documents, it runs edit again on
// the file as one chunk, where the step at fault is refused and the others
// are kept: so a caller's edits always end proven against the whole file.
// edit must start from nothing each time it is called.
func Edit(path string, b []byte, edit func(*File)) (*File, error) {
	f, err := NewFile(path, b, false)
	if err != nil {
		return nil, err
	}
	edit(f)
	if f.VerifyAll() == nil {
		return f, nil
	}
	f, err = NewFile(path, b, true)
	if err != nil {
		return nil, err
	}
	edit(f)
	return f, nil
}

// VerifyAll parses the whole current text and compares every document
// with the expected trees. With one chunk every op did that already.
func (f *File) VerifyAll() error {
	if f.Whole {
		return nil
	}
	s, err := Parse(f.current())
	if err != nil {
		return err
	}
	if len(s.Docs) != len(f.Expected) {
		return fmt.Errorf("%w: expected %d documents, got %d", ErrVerify, len(f.Expected), len(s.Docs))
	}
	for i, d := range s.Docs {
		if m := Compare(f.Expected[i], d, ""); m != nil {
			return m
		}
	}
	return nil
}

// current is the current text of the file.
func (f *File) current() []byte {
	if len(f.chunks) == 1 {
		return f.chunks[0].b
	}
	// Sized once: a file of many documents grew it a dozen times.
	n := 0
	for _, c := range f.chunks {
		n += len(c.b)
	}
	b := make([]byte, 0, n)
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
	f.segs = replaceAll(f.segs, merged)
	n := 0
	for _, s := range f.segs {
		n += s.len()
	}
	b := make([]byte, 0, n)
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

// replaceAll replaces each range [off, end) of the current text with its
// text, the ranges in order and apart: what replaceSegs does for each from
// the last to the first, in one pass (a batch has tens of splices a file,
// and each replaceSegs copied every segment).
func replaceAll(segs []segment, sps []splice) []segment {
	out := make([]segment, 0, len(segs)+2*len(sps))
	pos := 0  // where the rest of segs starts in the current text
	used := 0 // of segs[0], taken or dropped already
	// upTo moves pos to the offset to, appending the segments it passes
	// unless drop: whole ones, and the part of one that to cuts.
	upTo := func(to int, drop bool) {
		for len(segs) > 0 {
			s := segs[0].sub(used, segs[0].len())
			n := s.len()
			if pos+n > to {
				if !drop && to > pos {
					out = append(out, s.sub(0, to-pos))
				}
				used += to - pos
				pos = to
				return
			}
			if !drop {
				out = append(out, s)
			}
			segs, pos, used = segs[1:], pos+n, 0
		}
	}
	for _, sp := range sps {
		upTo(sp.off, false)
		if sp.text != "" {
			out = append(out, segment{lit: sp.text})
		}
		upTo(sp.end, true)
	}
	upTo(math.MaxInt, false)
	return out
}

// Result returns the current text of the file, and whether it differs
// from the original.
func (f *File) Result() ([]byte, bool) {
	cur := f.current()
	return cur, string(cur) != string(f.Orig)
}

// Splices returns the byte replacements that turn the original text into
// the current one.
func (f *File) Splices() []Splice {
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
	flush(len(f.Orig))
	return sps
}

// Clone deep-copies a node tree. (kyaml's RNode.Copy would unwrap a
// document node.) Alias targets are shared, which compare never follows.
//
// The copies are made in two allocations, one of nodes and one of the
// content slices, not two a node: the batch clones every document it
// edits. Each content slice is capped at its length, so that appending
// to one reallocates it rather than writing over the next.
func Clone(n *yaml.Node) *yaml.Node {
	nodes := make([]yaml.Node, countNodes(n))
	content := make([]*yaml.Node, len(nodes)-1)
	var clone func(n *yaml.Node) *yaml.Node
	clone = func(n *yaml.Node) *yaml.Node {
		c := &nodes[0]
		nodes = nodes[1:]
		*c = *n
		k := len(n.Content)
		c.Content = content[:k:k]
		content = content[k:]
		for i, m := range n.Content {
			c.Content[i] = clone(m)
		}
		return c
	}
	return clone(n)
}
