package splice

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Held is what discovery keeps of a file between its parse and its edit:
// where each document's bytes are, and the trees of the documents an
// edit may change, in a compact form. A parse's nodes take about sixteen
// times the text; held, a document takes about its text again, and the
// others nothing. NewHeldFile edits from it, document by document,
// and proves each edited document by parsing it alone (Finish), or by
// reading each scalar its edits swap on its own (predict).
//
// A file is held only when its documents can be proven one by one: when
// the stream's parse is the parses of its documents' bytes one after the
// other. The YAML scanner starts afresh at a document marker (--- at the
// start of a line): it closes every block, ends every scalar there (or
// fails), and a document parses the same after it as at the start of a
// stream. What it carries over is what Hold refuses: directives (%TAG
// names tags for the document after it), anchors (yaml.v3 resolves an
// alias against every document before it), a byte order mark, line
// breaks other than LF and CRLF, two documents between markers.
type Held struct {
	eol    string
	lines  []int // the line each document starts at, as File.Lines
	chunks []heldChunk
	docAt  []int // the chunk of each document
}

// heldChunk is one document's bytes: from its marker (or the start of
// the file) to the next marker (or the end).
type heldChunk struct {
	off, end int
	line0    int     // lines of the file before it
	doc      int     // the document it holds, -1 for none
	tree     *frozen // the document's tree; nil when not kept
}

// frozen is a document's tree as an array of nodes in preorder. The
// values are one string, each node's running to where the next one's
// starts; the tags, a few a document, are a table of their own.
type frozen struct {
	nodes []frozenNode
	strs  string
	tags  []string // tags[0] is "", no tag
}

// frozenNode is twelve bytes, not the 28 that room for any tag and
// value length took: every GPU document of the checkout is held this way
// until its file is edited, a fifth of a 10,000-Deployment plan's heap.
type frozenNode struct {
	voff      uint32 // where the value starts in strs
	n         uint16 // the nodes of its content, which follow it
	line, col uint16 // line counted from the start of the chunk
	tag       uint8  // index in tags
	form      uint8  // frozenKind in the high two bits, the style in the low six
}

// frozenKind numbers the kinds a held tree holds, and kindOf turns the
// number back: no alias, as Hold keeps no document with anchors. -1 for
// any other kind.
func frozenKind(k yaml.Kind) int {
	switch k {
	case yaml.DocumentNode:
		return 0
	case yaml.SequenceNode:
		return 1
	case yaml.MappingNode:
		return 2
	case yaml.ScalarNode:
		return 3
	}
	return -1
}

func kindOf(i uint8) yaml.Kind {
	return [...]yaml.Kind{yaml.DocumentNode, yaml.SequenceNode, yaml.MappingNode, yaml.ScalarNode}[i&3]
}

// styleBits are yaml.v3's six style flags.
const styleBits = 6

// Hold keeps what NewHeldFile needs of b, whose parse is s: the trees of
// the documents keep says, and where every document is. It returns nil
// when b's documents cannot be proven one by one (see Held).
func Hold(b []byte, s *Stream, keep func(doc int) bool) *Held {
	if s.t.odd || s.t.bom > 0 || hasDirective(b, s.t) || (bytes.ContainsAny(b, "&*") && anchored(s.Docs)) {
		return nil
	}
	h := &Held{eol: s.t.eol}
	starts, startLines := []int{0}, []int{0}
	for i, l := range s.t.lines {
		if l > 0 && l < len(b) && docMarker(b, l) {
			starts, startLines = append(starts, l), append(startLines, i)
		}
	}
	h.chunks = make([]heldChunk, len(starts))
	for c, st := range starts {
		end := len(b)
		if c+1 < len(starts) {
			end = starts[c+1]
		}
		h.chunks[c] = heldChunk{off: st, end: end, line0: startLines[c], doc: -1}
	}
	// Each document lies in a chunk of its own, in order.
	h.docAt = make([]int, len(s.Docs))
	h.lines = make([]int, len(s.Docs))
	c := 0
	for i, d := range s.Docs {
		for c+1 < len(h.chunks) && h.chunks[c+1].line0 < d.Line {
			c++
		}
		if h.chunks[c].doc >= 0 || d.Line <= h.chunks[c].line0 {
			return nil
		}
		h.chunks[c].doc, h.docAt[i], h.lines[i] = i, c, d.Line
		if keep(i) {
			// A document freeze cannot hold is not kept: its edits
			// parse the file again.
			h.chunks[c].tree = freeze(d, h.chunks[c].line0)
		}
	}
	return h
}

// hasDirective reports whether a line of b starts with %.
func hasDirective(b []byte, t *text) bool {
	for _, l := range t.lines {
		if l < len(b) && b[l] == '%' {
			return true
		}
	}
	return false
}

// anchored reports whether any node of docs has an anchor or is an alias.
func anchored(docs []*yaml.Node) bool {
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n.Anchor != "" || n.Kind == yaml.AliasNode {
			return true
		}
		for _, c := range n.Content {
			if walk(c) {
				return true
			}
		}
		return false
	}
	for _, d := range docs {
		if walk(d) {
			return true
		}
	}
	return false
}

// Kept reports whether the tree of document doc is held.
func (h *Held) Kept(doc int) bool {
	return doc >= 0 && doc < len(h.docAt) && h.chunks[h.docAt[doc]].tree != nil
}

// freeze makes the compact form of document d, its lines counted from
// line0; nil when a line, column, tag count or the text is too large for
// it (the edits of that document parse the file again).
func freeze(d *yaml.Node, line0 int) *frozen {
	nodes, text := countText(d)
	if text > math.MaxUint32 {
		return nil
	}
	f := &frozen{nodes: make([]frozenNode, 0, nodes), tags: []string{""}}
	// Sized once: grown by doubling, the builder held a third again what
	// it kept, for every held document.
	var sb strings.Builder
	sb.Grow(text)
	ok := true
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		line := n.Line - line0
		kind := frozenKind(n.Kind)
		if line < 0 || line > math.MaxUint16 || n.Column < 0 || n.Column > math.MaxUint16 || len(n.Content) > math.MaxUint16 ||
			kind < 0 || n.Style >= 1<<styleBits {
			ok = false
			return
		}
		tag := slices.Index(f.tags, n.Tag)
		if tag < 0 {
			tag = len(f.tags)
			f.tags = append(f.tags, n.Tag)
		}
		if tag > math.MaxUint8 {
			ok = false
			return
		}
		f.nodes = append(f.nodes, frozenNode{voff: uint32(sb.Len()), n: uint16(len(n.Content)), line: uint16(line), col: uint16(n.Column),
			tag: uint8(tag), form: uint8(kind<<styleBits) | uint8(n.Style)})
		sb.WriteString(n.Value)
		for _, c := range n.Content {
			if !ok {
				return
			}
			walk(c)
		}
	}
	walk(d)
	if !ok {
		return nil
	}
	f.strs = sb.String()
	return f
}

// countText counts the nodes of n and the bytes of their values.
func countText(n *yaml.Node) (nodes, text int) {
	nodes, text = 1, len(n.Value)
	for _, c := range n.Content {
		k, t := countText(c)
		nodes, text = nodes+k, text+t
	}
	return nodes, text
}

// thaw makes the tree again, in two allocations as Clone does.
func (f *frozen) thaw() *yaml.Node {
	nodes := make([]yaml.Node, len(f.nodes))
	content := make([]*yaml.Node, len(f.nodes)-1)
	next := 0
	var build func() *yaml.Node
	build = func() *yaml.Node {
		fn := f.nodes[next]
		n := &nodes[next]
		next++
		end := len(f.strs)
		if next < len(f.nodes) {
			end = int(f.nodes[next].voff)
		}
		*n = yaml.Node{Kind: kindOf(fn.form >> styleBits), Style: yaml.Style(fn.form & (1<<styleBits - 1)), Line: int(fn.line), Column: int(fn.col),
			Value: f.strs[fn.voff:end], Tag: f.tags[fn.tag]}
		k := int(fn.n)
		n.Content = content[:k:k]
		content = content[k:]
		for i := range k {
			n.Content[i] = build()
		}
		return n
	}
	return build()
}
