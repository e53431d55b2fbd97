package splice

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
