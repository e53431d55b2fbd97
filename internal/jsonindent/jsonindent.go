// Package jsonindent writes JSON indented as encoding/json indents it,
// without the encoder's second pass: a plan's decisions, written one at
// a time at their depth, byte for byte as one indented Encode would.
package jsonindent

import (
	"bytes"
	"encoding/json"
	"io"
)

// Encoder writes values, each at its own depth, through one encoder and
// one indenting buffer: made for each of 10,000 decisions, they were
// garbage.
type Encoder struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
	out []byte
}

// NewEncoder returns an Encoder that writes to w.
func NewEncoder(w io.Writer) *Encoder {
	e := &Encoder{w: w}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// Encode writes v as encoding/json writes it at the depth whose lines
// start with prefix (indented by two spaces a level below it; on one line
// when prefix is ""): HTML characters as they are, without the encoder's
// line break.
func (e *Encoder) Encode(v any, prefix string) error {
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	b := e.buf.Bytes()[:e.buf.Len()-1]
	if prefix != "" {
		// The encoder's own indentation runs its validating scanner over
		// every byte again, which cost more than encoding a decision. Its
		// output is compact and valid: knowing where the strings are is
		// enough to indent it.
		e.out = Append(e.out[:0], b, prefix)
		b = e.out
	}
	_, err := e.w.Write(b)
	return err
}

// Append appends compact JSON src to dst as json.Indent with indent "  "
// does: a line for each member and element, "{}" and "[]" kept when
// empty, a space after each colon.
func Append(dst, src []byte, prefix string) []byte {
	depth, open, inString := 0, false, false
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, "  "...)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			// Copy a string's run up to its next quote or escape at once.
			j := i
			for j < len(src) && src[j] != '"' && src[j] != '\\' {
				j++
			}
			dst = append(dst, src[i:j]...)
			if j == len(src) {
				break
			}
			dst = append(dst, src[j])
			if src[j] == '\\' && j+1 < len(src) {
				j++
				dst = append(dst, src[j])
			} else {
				inString = false
			}
			i = j
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			depth++
			newline()
		}
		switch c {
		case '"':
			inString = true
			dst = append(dst, c)
		case '{', '[':
			open = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				newline()
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
