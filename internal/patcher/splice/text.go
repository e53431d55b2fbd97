package splice

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// text is the bytes of one file plus what it takes to turn a node's
// Line/Column into a byte offset and to find where a node's source ends.
// Lines are counted the way the YAML scanner counts them (CRLF, CR, LF, NEL,
// LS and PS all end a line), so positions from yaml.v3 map exactly.
type text struct {
	b     []byte
	bom   int   // 3 when the file starts with a UTF-8 byte order mark
	lines []int // byte offset where each line starts; lines[0] == 0
	eol   string
	// odd is set when the file has line breaks other than LF and CRLF
	// (lone CR, NEL, LS, PS): positions still map, but inserted lines
	// could not follow the file's convention, so edits are refused.
	odd bool
}

func newText(b []byte) *text {
	t := &text{b: b, lines: []int{0}}
	if bytes.HasPrefix(b, []byte("\ufeff")) {
		t.bom = 3
	}
	if plainBreaks(b) {
		// Every line ends at an LF: found a line at a time, where the
		// loop below looks at every byte, for every file discovery reads.
		t.lines = make([]int, 1, bytes.Count(b, []byte{'\n'})+1)
		for i := 0; ; {
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			t.lines = append(t.lines, i)
		}
		t.eol = "\n"
		return t
	}
	crlf, lf := 0, 0
	for i := 0; i < len(b); {
		switch n := breakLen(b, i); {
		case n == 0:
			i++
			continue
		case b[i] == '\r' && n == 2:
			crlf++
		case b[i] == '\n':
			lf++
		default:
			t.odd = true
		}
		i += breakLen(b, i)
		t.lines = append(t.lines, i)
	}
	t.eol = "\n"
	if crlf > lf {
		t.eol = "\r\n"
	}
	return t
}

// plainBreaks reports whether LF is the only line break of b: it has no
// CR and no first byte of NEL, LS or PS.
func plainBreaks(b []byte) bool {
	return bytes.IndexByte(b, '\r') < 0 && bytes.IndexByte(b, 0xC2) < 0 && bytes.IndexByte(b, 0xE2) < 0
}

// breakLen returns the length of the line break starting at b[i], 0 when
// there is none. It mirrors is_break/is_crlf of the yaml.v3 scanner.
func breakLen(b []byte, i int) int {
	switch {
	case b[i] == '\n':
		return 1
	case b[i] == '\r':
		if i+1 < len(b) && b[i+1] == '\n' {
			return 2
		}
		return 1
	case b[i] == 0xC2 && i+1 < len(b) && b[i+1] == 0x85:
		return 2
	case b[i] == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
		return 3
	}
	return 0
}

// offset converts a 1-based line and a 1-based column counted in runes into
// a byte offset.
func (t *text) offset(line, col int) (int, error) {
	if line < 1 || line > len(t.lines) || col < 1 {
		return 0, fmt.Errorf("position %d:%d outside the file", line, col)
	}
	off := t.lines[line-1]
	if line == 1 {
		off += t.bom
	}
	for c := 1; c < col; c++ {
		if off >= len(t.b) || breakLen(t.b, off) > 0 {
			return 0, fmt.Errorf("position %d:%d beyond the end of its line", line, col)
		}
		_, w := utf8.DecodeRune(t.b[off:])
		off += w
	}
	return off, nil
}

// nodeOffset is offset for a node's own position.
func (t *text) nodeOffset(n *yaml.Node) (int, error) { return t.offset(n.Line, n.Column) }

// lineIndex returns the 0-based index of the line holding off.
func (t *text) lineIndex(off int) int {
	lo, hi := 0, len(t.lines)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.lines[m] <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// lineStart returns the offset of the start of the line holding off.
func (t *text) lineStart(off int) int {
	s := t.lines[t.lineIndex(off)]
	if s == 0 {
		s = t.bom
	}
	return s
}

// lineEnd returns the offset of the line break that ends the line holding
// off, or len(b) on a last line without one.
func (t *text) lineEnd(off int) int {
	i := off
	for i < len(t.b) && breakLen(t.b, i) == 0 {
		i++
	}
	return i
}

// nextLine returns the start of the line after the one holding off, or
// len(b) when that line is the last.
func (t *text) nextLine(off int) int {
	e := t.lineEnd(off)
	if e == len(t.b) {
		return e
	}
	return e + breakLen(t.b, e)
}

// indentOf returns the text before off on its line when it is only blanks.
func (t *text) indentOf(off int) (string, bool) {
	s := t.lineStart(off)
	p := t.b[s:off]
	for _, c := range p {
		if c != ' ' && c != '\t' {
			return string(p), false
		}
	}
	return string(p), true
}

// eolAt returns the line break ending the line holding off, or the file's
// usual one when that line has none.
func (t *text) eolAt(off int) string {
	if e := t.lineEnd(off); e < len(t.b) {
		return string(t.b[e : e+breakLen(t.b, e)])
	}
	return t.eol
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// skipBlank returns the first offset at or after i that is not a space or tab.
func (t *text) skipBlank(i int) int {
	for i < len(t.b) && isBlank(t.b[i]) {
		i++
	}
	return i
}

// skipSpaceComments skips blanks, line breaks and comments (inside flow
// collections).
func (t *text) skipSpaceComments(i int) int {
	for i < len(t.b) {
		switch {
		case isBlank(t.b[i]):
			i++
		case breakLen(t.b, i) > 0:
			i += breakLen(t.b, i)
		case t.b[i] == '#' && (i == 0 || isBlank(t.b[i-1]) || breakLen(t.b, i-1) > 0):
			i = t.lineEnd(i)
		default:
			return i
		}
	}
	return i
}
