package splice

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// errSpan is returned when the source of a node cannot be located exactly;
// the edit is then refused rather than guessed.
var errSpan = errors.New("cannot locate the node's source text")

// spanner finds where the nodes of one parse are in its text.
type spanner struct {
	t  *text
	pl *placer
}

// span finds the source bytes [start, end) of node n. For scalars it is the
// scalar itself (quotes and block header included, a tag before it
// excluded); for collections it runs to the end of the last item (block)
// or the closing bracket (flow).
func (s spanner) span(n *yaml.Node) (start, end int, err error) {
	start, err = s.t.nodeOffset(n)
	if err != nil {
		return 0, 0, err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return s.scalar(n, start)
	case yaml.AliasNode:
		i := start + 1
		for i < len(s.t.b) && !isBlank(s.t.b[i]) && breakLen(s.t.b, i) == 0 && !strings.ContainsRune(",[]{}", rune(s.t.b[i])) {
			i++
		}
		return start, i, nil
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Anchor != "" || n.Tag != "" && n.Style&yaml.TaggedStyle != 0 {
			return 0, 0, fmt.Errorf("%w: collection with an anchor or tag", errSpan)
		}
		if n.Style&yaml.FlowStyle != 0 {
			return s.flow(n, start)
		}
		if len(n.Content) == 0 {
			return 0, 0, fmt.Errorf("%w: empty block collection", errSpan)
		}
		_, end, err = s.span(n.Content[len(n.Content)-1])
		return start, end, err
	}
	return 0, 0, fmt.Errorf("%w: unexpected node kind", errSpan)
}

// flow finds the closing bracket of a flow collection starting at start.
func (s spanner) flow(n *yaml.Node, start int) (int, int, error) {
	open, closing := byte('['), byte(']')
	if n.Kind == yaml.MappingNode {
		open, closing = '{', '}'
	}
	if start >= len(s.t.b) || s.t.b[start] != open {
		return 0, 0, fmt.Errorf("%w: no %q at the flow collection's position", errSpan, open)
	}
	i := start + 1
	if len(n.Content) > 0 {
		_, e, err := s.span(n.Content[len(n.Content)-1])
		if err != nil {
			return 0, 0, err
		}
		i = e
	}
	for {
		i = s.t.skipSpaceComments(i)
		if i < len(s.t.b) && s.t.b[i] == ',' {
			i++
			continue
		}
		break
	}
	if i >= len(s.t.b) || s.t.b[i] != closing {
		return 0, 0, fmt.Errorf("%w: no closing %q", errSpan, closing)
	}
	return start, i + 1, nil
}

// scalar finds the source of a scalar starting at start.
func (s spanner) scalar(n *yaml.Node, start int) (int, int, error) {
	b := s.t.b
	if n.Anchor != "" {
		return 0, 0, fmt.Errorf("%w: scalar with an anchor", errSpan)
	}
	if start < len(b) && b[start] == '!' {
		// skip the tag and the blanks after it
		i := start
		for i < len(b) && !isBlank(b[i]) && breakLen(b, i) == 0 {
			i++
		}
		start = s.t.skipBlank(i)
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return s.quoted(n, start, '"')
	case n.Style&yaml.SingleQuotedStyle != 0:
		return s.quoted(n, start, '\'')
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return s.block(n, start)
	}
	return s.plain(n, start)
}

func (s spanner) quoted(n *yaml.Node, start int, q byte) (int, int, error) {
	b := s.t.b
	if start >= len(b) || b[start] != q {
		return 0, 0, fmt.Errorf("%w: no opening quote", errSpan)
	}
	i := start + 1
	for i < len(b) {
		switch {
		case q == '"' && b[i] == '\\':
			i += 2
			if i-1 < len(b) && b[i-1] == '\r' && i < len(b) && b[i] == '\n' {
				i++
			}
			continue
		case b[i] == q && q == '\'' && i+1 < len(b) && b[i+1] == '\'':
			i += 2
			continue
		case b[i] == q:
			end := i + 1
			// Check the reading: decode the snippet on its own, unless
			// it is printable ASCII without escapes (no backslash, no
			// doubled quote) or line breaks, which reads as it is.
			if plainQuoted(b[start+1:i], q) && string(b[start+1:i]) == n.Value {
				return start, end, nil
			}
			var got string
			if err := yaml.Unmarshal(b[start:end], &got); err != nil || got != n.Value {
				return 0, 0, fmt.Errorf("%w: quoted scalar does not read back", errSpan)
			}
			return start, end, nil
		}
		i++
	}
	return 0, 0, fmt.Errorf("%w: no closing quote", errSpan)
}

// plainQuoted reports whether the text inside a quoted scalar with quote q
// reads as itself: printable ASCII, no backslash in a double-quoted one,
// no quote at all (a single-quoted one doubles its quotes).
func plainQuoted(in []byte, q byte) bool {
	for _, c := range in {
		if c < 0x20 || c > 0x7e || c == q || q == '"' && c == '\\' {
			return false
		}
	}
	return true
}

// block finds a literal or folded block scalar: the header line and every
// following line that is blank or indented deeper than the block that
// holds the scalar. The end is the end of the last non-blank line.
func (s spanner) block(n *yaml.Node, start int) (int, int, error) {
	b := s.t.b
	i := start + 1
	for i < len(b) && (b[i] == '+' || b[i] == '-' || b[i] >= '0' && b[i] <= '9') {
		if b[i] >= '0' && b[i] <= '9' {
			return 0, 0, fmt.Errorf("%w: block scalar with an indentation indicator", errSpan)
		}
		i++
	}
	end := i
	indent := s.pl.at(n).indent
	for l := s.t.nextLine(start); l < len(b); l = s.t.nextLine(l) {
		j := s.t.skipBlank(l)
		if j >= len(b) || breakLen(b, j) > 0 {
			continue // blank line
		}
		if j-l <= indent {
			break
		}
		end = s.t.lineEnd(l)
	}
	return start, end, nil
}

// plain finds a plain scalar. Its end is where its value, re-folded from
// the source lines, equals the decoded value; anything else is an error.
func (s spanner) plain(n *yaml.Node, start int) (int, int, error) {
	b := s.t.b
	flow := s.pl.at(n).flow
	if n.Tag == "!!null" && n.Value == "" {
		return start, start, nil // an empty value has no source
	}
	lineEnd := func(i int) int {
		for ; i < len(b) && breakLen(b, i) == 0; i++ {
			if b[i] == '#' && i > 0 && isBlank(b[i-1]) {
				break
			}
			if flow && (b[i] == ',' || b[i] == ']' || b[i] == '}') {
				break
			}
			if flow && b[i] == ':' && (i+1 >= len(b) || isBlank(b[i+1]) || breakLen(b, i+1) > 0 || strings.IndexByte(",[]{}", b[i+1]) >= 0) {
				break
			}
		}
		for i > 0 && isBlank(b[i-1]) {
			i--
		}
		return i
	}
	end := lineEnd(start)
	if end < start {
		end = start
	}
	folded := string(b[start:end])
	breaks := 0
	for folded != n.Value {
		if !strings.HasPrefix(n.Value, folded) || end >= len(b) {
			return 0, 0, fmt.Errorf("%w: plain scalar does not read back", errSpan)
		}
		l := s.t.nextLine(end)
		if l >= len(b) {
			return 0, 0, fmt.Errorf("%w: plain scalar does not read back", errSpan)
		}
		j := s.t.skipBlank(l)
		if j >= len(b) || breakLen(b, j) > 0 {
			breaks++
			end = s.t.lineEnd(l)
			continue
		}
		if b[j] == '#' {
			return 0, 0, fmt.Errorf("%w: plain scalar does not read back", errSpan)
		}
		e := lineEnd(j)
		if e <= j {
			return 0, 0, fmt.Errorf("%w: plain scalar does not read back", errSpan)
		}
		if breaks == 0 {
			folded += " "
		} else {
			folded += strings.Repeat("\n", breaks)
		}
		breaks = 0
		folded += string(b[j:e])
		end = e
	}
	return start, end, nil
}

// entryStart returns where a mapping entry begins: its key, or its value
// when the key is empty and implicit.
func (s spanner) entryStart(k *yaml.Node) (int, error) {
	if k.Anchor != "" || k.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("%w: complex or anchored key", errSpan)
	}
	return s.t.nodeOffset(k)
}
