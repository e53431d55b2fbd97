package splice

import (
	"bytes"
	"fmt"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// comment is one comment of a text: b[off:end] runs from the # to the end
// of its line.
type comment struct {
	off, end int
	text     string
}

// comments returns every comment of t in order: a # at the start of a line
// or after a blank, outside quoted and block scalars. docs are the parse of
// t; they say where its quoted and block scalars are.
// pls(i), when not nil, returns the placer of docs[i].
func (t *text) comments(docs []*yaml.Node, pls func(int) *placer) ([]comment, error) {
	if bytes.IndexByte(t.b, '#') < 0 {
		return nil, nil
	}
	var skip [][2]int // quoted scalars and block scalar bodies, in any order
	for i, doc := range docs {
		// The tree is walked; only a block scalar needs its place.
		var pl *placer
		var walk func(n *yaml.Node) error
		walk = func(n *yaml.Node) error {
			for _, c := range n.Content {
				if err := walk(c); err != nil {
					return err
				}
			}
			if n.Kind != yaml.ScalarNode || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
				return nil
			}
			var p place
			if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				if pl == nil && pls != nil {
					pl = pls(i)
				} else if pl == nil {
					pl = newPlacer(doc)
				}
				p = pl.at(n)
			}
			s, e, err := t.scalarText(n, p)
			if err != nil {
				return err
			}
			skip = append(skip, [2]int{s, e})
			return nil
		}
		for _, c := range doc.Content {
			if err := walk(c); err != nil {
				return nil, err
			}
		}
	}
	return t.commentsOutside(skip), nil
}

// commentsOutside returns the comments of t that start in none of the
// ranges skip. The #s are met in order; so are the ranges once sorted by
// start, and a # is in one when it is before the farthest end of those
// that start at or before it. A flag for each byte of the text was a
// fortieth of a plan's allocations.
func (t *text) commentsOutside(skip [][2]int) []comment {
	slices.SortFunc(skip, func(a, b [2]int) int { return a[0] - b[0] })
	var out []comment
	b := t.b
	next, end := 0, 0
	for i := t.bom; i < len(b); i++ {
		h := bytes.IndexByte(b[i:], '#')
		if h < 0 {
			break
		}
		i += h
		for ; next < len(skip) && skip[next][0] <= i; next++ {
			end = max(end, skip[next][1])
		}
		if i < end {
			continue
		}
		if i > t.bom && !isBlank(b[i-1]) && breakLen(b, i-1) == 0 {
			continue
		}
		e := t.lineEnd(i)
		out = append(out, comment{off: i, end: e, text: string(b[i:e])})
		i = e
	}
	return out
}

// scalarText returns the bytes of quoted scalar n, quotes included, or the
// body lines of block scalar n (its header line, which may hold a
// comment, excluded). Unlike spanner.span it accepts anchors, tags and
// indentation indicators, and does not check the reading: it only has to
// say where comments cannot be.
func (t *text) scalarText(n *yaml.Node, p place) (int, int, error) {
	b := t.b
	i, err := t.nodeOffset(n)
	if err != nil {
		return 0, 0, err
	}
	// skip an anchor and a tag, and the blanks or line breaks after them
	for i < len(b) && (b[i] == '&' || b[i] == '!') {
		for i < len(b) && !isBlank(b[i]) && breakLen(b, i) == 0 {
			i++
		}
		for i < len(b) && (isBlank(b[i]) || breakLen(b, i) > 0) {
			i += max(breakLen(b, i), 1)
		}
	}
	// Made only when it fails: formatted for every quoted scalar, it was
	// most of the comment check's time.
	fail := func() (int, int, error) {
		return 0, 0, fmt.Errorf("%w: cannot find the scalar at %d:%d to tell its text from comments", ErrVerify, n.Line, n.Column)
	}
	if i >= len(b) {
		return fail()
	}
	switch q := b[i]; {
	case q == '"' || q == '\'':
		for j := i + 1; j < len(b); j++ {
			switch {
			case q == '"' && b[j] == '\\':
				j++
			case q == '\'' && b[j] == '\'' && j+1 < len(b) && b[j+1] == '\'':
				j++
			case b[j] == q:
				return i, j + 1, nil
			}
		}
		return fail()
	case q == '|' || q == '>':
		start := t.nextLine(i)
		end := start
		for l := start; l < len(b); l = t.nextLine(l) {
			j := t.skipBlank(l)
			if j < len(b) && breakLen(b, j) == 0 && j-l <= p.indent {
				break
			}
			end = t.lineEnd(l)
		}
		return start, end, nil
	}
	return fail()
}

// keptComments checks that every comment of before that lies outside the
// ranges an op meant to remove is in after, in the same order, and that
// after has no other comment.
func keptComments(before, after []comment, removed [][2]int) error {
	var want []comment
	for _, c := range before {
		gone := false
		for _, r := range removed {
			if r[0] <= c.off && c.end <= r[1] {
				gone = true
				break
			}
		}
		if !gone {
			want = append(want, c)
		}
	}
	for i, c := range want {
		if i >= len(after) || after[i].text != c.text {
			return fmt.Errorf("%w: the comment %q is lost", ErrVerify, c.text)
		}
	}
	if len(after) > len(want) {
		return fmt.Errorf("%w: new comment %q", ErrVerify, after[len(want)].text)
	}
	return nil
}
