package splice

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// predict returns the parse of a held chunk's edited text, made from its
// original parse without parsing it again, when every splice of its batch
// swaps a scalar in place; nil when any is something else, and the chunk
// is parsed. orig is the chunk's text before the splices, ch.b after.
//
// A swap is a new token for a scalar value that the scanner reads as the
// old one's, but for its value. The YAML scanner reads left to right: up
// to the token its state is what it was. The token is a value on one
// line, in block context, not in the first column; the new one is of the
// same kind (plain, single- or double-quoted) and on one line too, with
// no line break of any kind YAML counts. Read as a mapping's value it is
// one scalar without a comment: so the scanner reads it as that scalar
// in place, for on one line in block context nothing depends on where a
// token stands but the first column, where --- and ... mark documents.
// After it come blanks, then a comment or a line break, both as before:
// the scanner ends the token where it ended the old one and goes on in the
// same state, with every position after it moved by the same amount on
// that line and by none on the next. yaml.v3 keys comments to tokens by
// the start of the token before them, which did not move, and by the
// order of positions, which did not change. A document with an alias is
// refused: the alias would point at the old nodes. design.md §10 says
// which tests break each condition.
func (f *File) predict(ch *chunk, orig []byte) *Stream {
	if f.held == nil || len(ch.removed) > 0 || len(ch.pending) == 0 || len(ch.s.Docs) != 1 {
		return nil
	}
	doc := ch.s.Docs[0]
	pl := ch.s.placer(0)
	swaps := readSwaps(ch.s.t, doc, pl, orig, ch.pending)
	if swaps == nil || !sameOutside(orig, ch.b, swaps) {
		return nil
	}
	// The new tree shares every node with the old but the swapped ones
	// and those above them.
	repl := make(map[*yaml.Node]*yaml.Node, 8*len(swaps))
	for _, s := range swaps {
		repl[s.n] = s.p
	}
	for _, s := range swaps {
		c, cp := s.n, s.p
		for c != doc {
			par := pl.at(c).parent
			if par == nil {
				par = doc
			}
			i := slices.Index(par.Content, c)
			if i < 0 {
				return nil
			}
			pc, seen := repl[par]
			if !seen {
				pc = ownCopy(par)
				repl[par] = pc
			}
			pc.Content[i] = cp
			if seen {
				break
			}
			c, cp = par, pc
		}
	}
	nt := newText(ch.b)
	nt.eol = ch.s.t.eol
	return &Stream{t: nt, Docs: []*yaml.Node{repl[doc]}}
}

// readSwaps returns the swap each group of splices makes, in order; nil
// when a splice is not inside a scalar that may be swapped, or the token
// it makes does not read as one.
func readSwaps(t *text, doc *yaml.Node, pl *placer, orig []byte, pending []splice) []swap {
	sps := slices.Clone(pending)
	slices.SortFunc(sps, func(a, b splice) int { return a.off - b.off })
	// The scalars on the lines the splices touch.
	lines := make(map[int]bool, len(sps))
	for _, s := range sps {
		lines[t.lineIndex(s.off)+1] = true
	}
	var cands []*yaml.Node
	alias := false
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && lines[n.Line] {
			cands = append(cands, n)
		}
		alias = alias || n.Kind == yaml.AliasNode
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	if alias {
		// An alias would still point at the old nodes. Hold keeps no
		// document with one; a caller that does is refused here.
		return nil
	}

	sp := spanner{t: t, pl: pl}
	var swaps []swap
	for i := 0; i < len(sps); {
		n, ts, te := tokenAt(sp, cands, sps[i].off)
		if n == nil || !swappable(n, pl.at(n), orig, ts, te) {
			return nil
		}
		// The splices inside the token, applied to it.
		var tok []byte
		at := ts
		for ; i < len(sps) && sps[i].off < te; i++ {
			s := sps[i]
			if s.off < at || s.end > te {
				return nil
			}
			tok = append(tok, orig[at:s.off]...)
			tok = append(tok, s.text...)
			at = s.end
		}
		tok = append(tok, orig[at:te]...)
		got, ok := readScalar(tok, orig[ts])
		if !ok {
			return nil
		}
		p := new(yaml.Node)
		*p = *n
		p.Value, p.Tag, p.Style = got.Value, got.Tag, got.Style
		swaps = append(swaps, swap{off: ts, end: te, tok: tok, n: n, p: p})
	}
	return swaps
}

// swap is one scalar token [off, end) of the original text, the token
// that replaces it, and the scalar's node n in the old tree and p in the
// new.
type swap struct {
	off, end int
	tok      []byte
	n, p     *yaml.Node
}

// tokenAt returns the scalar among cands whose token holds off, and where
// the token is; nil when none does.
func tokenAt(sp spanner, cands []*yaml.Node, off int) (*yaml.Node, int, int) {
	for _, n := range cands {
		if ts, te, err := sp.span(n); err == nil && ts <= off && off < te {
			return n, ts, te
		}
	}
	return nil, 0, 0
}

// swappable reports whether scalar n, whose token is b[ts:te], may be
// swapped in place: a value (not a key) in block context, without tag or
// anchor, not a block scalar, not in the first column, on one line, and
// followed on it by blanks and then a comment or a line break.
func swappable(n *yaml.Node, p place, b []byte, ts, te int) bool {
	switch {
	case p.flow, p.parent == nil, p.parent.Kind == yaml.MappingNode && p.key == nil,
		n.Anchor != "", n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.FlowStyle) != 0,
		n.Column <= 1, ts >= te, hasBreak(b[ts:te]):
		return false
	}
	i := te
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	if i < len(b) && b[i] == '#' && i > te {
		for i < len(b) && b[i] != '\n' && b[i] != '\r' {
			i++
		}
	}
	return i < len(b) && breakLen(b, i) > 0 && (b[i] == '\n' || b[i] == '\r' && breakLen(b, i) == 2)
}

// readScalar reads tok as a mapping's value, one scalar of the kind its
// first byte says (first, the old token's first byte, must say the same).
// ok is false when tok reads as anything else: a mapping, a comment, a
// tag, a second line (any YAML line break). So it is for a byte order
// mark; for a start that is neither a plain scalar's nor a quote (a lone
// ! is an empty scalar with a tag); for a blank at either end, which
// would move where the scalar starts or ends; and for bytes that are not
// UTF-8, which a file edited never holds.
func readScalar(tok []byte, first byte) (n *yaml.Node, ok bool) {
	kind := func(c byte) byte {
		if c == '"' || c == '\'' {
			return c
		}
		return 0
	}
	if len(tok) == 0 || isBlank(tok[0]) || isBlank(tok[len(tok)-1]) || kind(tok[0]) != kind(first) ||
		hasBreak(tok) || bytes.Contains(tok, []byte("\ufeff")) || !utf8.Valid(tok) {
		return nil, false
	}
	if kind(tok[0]) == 0 && !plainStart(tok) {
		return nil, false
	}
	if q := kind(tok[0]); q != 0 && len(tok) >= 2 && tok[len(tok)-1] == q && plainQuoted(tok[1:len(tok)-1], q) {
		// Printable ASCII between quotes, no escape and no quote inside:
		// it reads as itself.
		style := yaml.DoubleQuotedStyle
		if q == '\'' {
			style = yaml.SingleQuotedStyle
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(tok[1 : len(tok)-1]), Style: style}, true
	}
	c, ok := readValue(tok)
	quoted := yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle
	if !ok || c.Style&^quoted != 0 || (c.Style&quoted != 0) != (kind(tok[0]) != 0) {
		return nil, false
	}
	return c, true
}

// readValue reads tok as the value of a mapping, as it stands in place:
// not in the first column, where the scanner reads --- and ... as
// document markers. And to the end: Unmarshal would stop after one node,
// and take "a" b for "a". ok is false unless it is one scalar, without
// anchor or comment.
func readValue(tok []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(slices.Concat([]byte("k: "), tok, []byte("\n"))))
	var d, more yaml.Node
	if dec.Decode(&d) != nil || !errors.Is(dec.Decode(&more), io.EOF) {
		return nil, false
	}
	if d.Kind != yaml.DocumentNode || len(d.Content) != 1 || d.HeadComment != "" || d.LineComment != "" || d.FootComment != "" {
		return nil, false
	}
	m := d.Content[0]
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 || m.Content[0].Value != "k" {
		return nil, false
	}
	c := m.Content[1]
	if c.Kind != yaml.ScalarNode || c.Anchor != "" || c.HeadComment != "" || c.LineComment != "" || c.FootComment != "" {
		return nil, false
	}
	return c, true
}

// sameOutside reports whether b is a with each swap's bytes replaced by
// its token, and nothing else changed.
func sameOutside(a, b []byte, swaps []swap) bool {
	at, shift := 0, 0
	for _, s := range swaps {
		if s.off < at || s.off+shift > len(b) || !bytes.Equal(a[at:s.off], b[at+shift:s.off+shift]) {
			return false
		}
		nb := s.off + shift
		if nb+len(s.tok) > len(b) || !bytes.Equal(b[nb:nb+len(s.tok)], s.tok) {
			return false
		}
		shift += len(s.tok) - (s.end - s.off)
		at = s.end
	}
	return len(b)-shift == len(a) && bytes.Equal(a[at:], b[at+shift:])
}

// plainStart reports whether the scanner starts a plain scalar at tok,
// in block context: not at an indicator, but - ? and : before a
// non-blank.
func plainStart(tok []byte) bool {
	switch tok[0] {
	case '-', '?', ':':
		return len(tok) > 1 && !isBlank(tok[1])
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return true
}

// hasBreak reports whether b holds a line break as YAML counts them:
// CR, LF, NEL, LS and PS.
func hasBreak(b []byte) bool {
	for i := range b {
		if breakLen(b, i) > 0 {
			return true
		}
	}
	return false
}
