package splice

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestDuplicateKey: the first key met twice in one mapping, in document
// order, with its tag (1 and "1" differ), in short mappings and in long
// ones, which keep a set.
func TestDuplicateKey(t *testing.T) {
	long := func(dup string) string {
		var b strings.Builder
		for i := range 2 * shortMapping {
			fmt.Fprintf(&b, "k%d: %d\n", i, i)
		}
		return b.String() + dup
	}
	for _, c := range []struct {
		src  string
		line int // of the duplicate, 0 for none
	}{
		{"a: 1\nb: 2\n", 0},
		{"a: 1\nb: 2\na: 3\n", 3},
		{"1: a\n\"1\": b\n", 0},
		{"1: a\n!!int \"1\": b\n", 2},
		{"a:\n  x: 1\n  x: 2\nb: 1\nb: 2\n", 3},
		{"- a: 1\n- a: 1\n  a: 2\n", 3},
		{long(""), 0},
		{long("k3: again\n"), 2*shortMapping + 1},
		{long("\"7\": str\n"), 0},
	} {
		s, err := Parse([]byte(c.src))
		require.NoError(t, err)
		k := duplicateKey(s.Docs[0])
		if c.line == 0 {
			require.Nil(t, k, c.src)
			continue
		}
		require.NotNil(t, k, c.src)
		require.Equal(t, c.line, k.Line, c.src)
	}
}

// TestReplaceAll: the splices of a batch, applied in one pass, give the
// text that applying them one at a time from the last gives, on segments
// that are already a mix of the original and of literals.
func TestReplaceAll(t *testing.T) {
	orig := "0123456789abcdefghij"
	text := func(segs []segment) string {
		var b strings.Builder
		for _, s := range segs {
			if s.orig {
				b.WriteString(orig[s.off:s.end])
			} else {
				b.WriteString(s.lit)
			}
		}
		return b.String()
	}
	base := []segment{{orig: true, off: 0, end: 5}, {lit: "XY"}, {orig: true, off: 8, end: 20}}
	for _, sps := range [][]splice{
		nil,
		{{off: 0, end: 0, text: "<"}},
		{{off: 3, end: 6, text: "-"}},
		{{off: 5, end: 7, text: ""}, {off: 7, end: 7, text: "+"}},
		{{off: 0, end: 2, text: "a"}, {off: 4, end: 4, text: "b"}, {off: 4, end: 10, text: "c"}, {off: 19, end: 19, text: "!"}},
		{{off: 1, end: 19, text: ""}},
	} {
		want := text(base)
		for i := len(sps) - 1; i >= 0; i-- {
			want = want[:sps[i].off] + sps[i].text + want[sps[i].end:]
		}
		in := append([]segment(nil), base...)
		got := replaceAll(in, sps)
		require.Equal(t, want, text(got), "%v", sps)
		require.Equal(t, base, in, "the segments given are left as they were")
		for _, s := range got {
			require.NotZero(t, s.len(), "no empty segment: %v", got)
		}
	}
}

// TestPlainQuoted: only what yaml.v3 reads as the text itself skips the
// decode of a quoted scalar's span; the rest is decoded.
func TestPlainQuoted(t *testing.T) {
	for _, c := range []struct {
		src   string
		plain bool
	}{
		{`"0.45"`, true}, {`'0.45'`, true}, {`"a b/c:d#e"`, true}, {`""`, true},
		{`"a\tb"`, false}, {`"a\u00e9"`, false}, {`'it''s'`, false}, {"\"a\tb\"", false},
		{"\"é\"", false}, {"'a\n  b'", false},
	} {
		var v string
		require.NoError(t, yaml.Unmarshal([]byte(c.src), &v))
		in := []byte(c.src[1 : len(c.src)-1])
		require.Equal(t, c.plain, plainQuoted(in, c.src[0]), c.src)
		if c.plain {
			require.Equal(t, string(in), v, c.src)
		}
	}
}
