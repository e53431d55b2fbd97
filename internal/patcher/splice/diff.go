package splice

import (
	"fmt"
	"strings"
)

// Whole is the one splice that turns a into b: the bytes between
// their common prefix and suffix.
func Whole(a, b []byte) Splice {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return Splice{Off: p, Len: len(a) - p - s, Text: string(b[p : len(b)-s])}
}

// FirstDiff names the first line where two outputs differ.
func FirstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: %q became %q", i+1, x, y)
		}
	}
	return "no line differs"
}
