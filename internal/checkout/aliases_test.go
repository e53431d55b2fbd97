package checkout_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
)

func parseAll(t *testing.T, src string) []*yaml.Node {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(src))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		docs = append(docs, &n)
	}
}

// hang bounds what must return at once and would otherwise hang or run
// for hours: a minute, which a loaded 2-core machine under -race does
// not take for work of milliseconds, and which tells it from a hang.
const hang = time.Minute

// bomb is a document whose aliases expand to width^depth scalars.
func bomb(depth, width int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x]\n")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), width), ","))
	}
	return b.String()
}

func TestCheckAliases(t *testing.T) {
	fixture, err := os.ReadFile("testdata/alias-bomb.yaml")
	require.NoError(t, err)
	tests := []struct {
		name    string
		src     string
		refused bool
		// line of the alias refused, 0 when any.
		line  int
		cycle bool
	}{
		{name: "no aliases", src: "a: 1\nb: [1, 2, {c: d}]\n"},
		{name: "a shared block", src: "x: &r {limits: {nvidia.com/gpu: 1}}\na: *r\nb: *r\nc: {<<: *r, d: 1}\n"},
		{name: "a small bomb", src: bomb(5, 9)},
		{name: "the fixture", src: string(fixture), refused: true, line: 13},
		{name: "a wide bomb", src: bomb(3, 200), refused: true, line: 4},
		{name: "just under the limit", src: "big: &b [" + strings.Repeat("1,", 999) + "1]\nuses: [" + strings.Repeat("*b,", 999) + "1]\n"},
		{name: "just over the limit", src: "big: &b [" + strings.Repeat("1,", 1000) + "1]\nuses: [" + strings.Repeat("*b,", 999) + "*b]\n", refused: true, line: 2},
		{name: "small documents that add up", src: strings.Repeat(bomb(5, 9)+"---\n", 20), refused: true},
		{name: "an alias inside what it names", src: "a: &x [1, *x]\n", refused: true, line: 1, cycle: true},
		{name: "a merge into itself", src: "a: &x {b: 1, <<: *x}\n", refused: true, line: 1, cycle: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := parseAll(t, tt.src)
			start := time.Now()
			err := checkout.CheckAliases(docs...)
			require.Less(t, time.Since(start), hang, "the check must not expand the aliases")
			if !tt.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, checkout.ErrAliases)
			var ae *checkout.AliasError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, tt.cycle, ae.Cycle)
			if tt.line > 0 {
				require.Equal(t, tt.line, ae.Line)
			}
		})
	}
}

// The limit is on what aliases add, not on the file's own size.
func TestCheckAliasesLargePlainFile(t *testing.T) {
	var b bytes.Buffer
	for i := range 100_000 {
		fmt.Fprintf(&b, "- k%d: v\n", i)
	}
	require.NoError(t, checkout.CheckAliases(parseAll(t, b.String())...))
}

func ExampleCheckAliases() {
	// Each list names the one before ten times: b6 stands for ten
	// million scalars.
	src := "b0: &b0 [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i <= 6; i++ {
		src += fmt.Sprintf("b%d: &b%d [%s]\n", i, i, strings.Repeat(fmt.Sprintf("*b%d, ", i-1), 9)+fmt.Sprintf("*b%d", i-1))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(checkout.CheckAliases(&doc))
	// Output: aliases expand beyond the limit: with alias *b4, aliases add more than 1000000 nodes
}
