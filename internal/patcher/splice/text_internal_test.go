package splice

import (
	"slices"
	"testing"
)

// linesByByte is newText's count of lines, byte by byte: where each line
// starts, the usual line break, and whether any other than LF and CRLF
// appears.
func linesByByte(b []byte) (lines []int, eol string, odd bool) {
	lines = []int{0}
	crlf, lf := 0, 0
	for i := 0; i < len(b); {
		n := breakLen(b, i)
		if n == 0 {
			i++
			continue
		}
		switch {
		case b[i] == '\r' && n == 2:
			crlf++
		case b[i] == '\n':
			lf++
		default:
			odd = true
		}
		i += n
		lines = append(lines, i)
	}
	eol = "\n"
	if crlf > lf {
		eol = "\r\n"
	}
	return lines, eol, odd
}

// FuzzNewText: newText finds the lines the YAML scanner counts, as a
// scan of every byte does, whatever breaks the text holds.
func FuzzNewText(f *testing.F) {
	for _, s := range []string{"", "a", "a: 1\nb: 2\n", "a: 1\nb: 2", "a\r\nb\r\n", "a\rb", "é: ü\n", "a\u0085b\n",
		"a\u2028b\u2029c", "€\n", "\ufeffa: 1\n", "\n\n\n", "a\r\n\nb\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tx := newText(b)
		lines, eol, odd := linesByByte(b)
		if !slices.Equal(tx.lines, lines) || tx.eol != eol || tx.odd != odd {
			t.Fatalf("newText(%q) = %v %q %v, byte by byte %v %q %v", b, tx.lines, tx.eol, tx.odd, lines, eol, odd)
		}
	})
}
