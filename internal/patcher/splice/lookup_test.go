package splice_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// TestLookupAgreesWithKyaml: Lookup walks plain keys itself and must find
// what kyaml's Lookup finds, on documents, nulls, scalars, sequences,
// duplicate keys, and the paths it leaves to kyaml.
func TestLookupAgreesWithKyaml(t *testing.T) {
	src := "x: &x\n  y: z\na:\n  b:\n    c: 1\n  n: null\n  t: !!null\n  s: x\n  l:\n  - name: p\n    v: 2\n  - name: q\n    v: 3\n" +
		"  d: first\n  d: second\n  '7': seven\n  ' k': spaced\n  e: {}\n  f: *x\n"
	s, err := splice.Parse([]byte(src))
	require.NoError(t, err)
	doc := s.Docs[0]
	paths := [][]string{
		{}, {"a"}, {"a", "b", "c"}, {"a", "b", "c", "d"}, {"a", "n"}, {"a", "n", "x"}, {"a", "t", "x"},
		{"a", "s", "x"}, {"a", "l"}, {"a", "l", "0"}, {"a", "l", "1", "v"}, {"a", "l", "[name=q]", "v"},
		{"a", "l", "-"}, {"a", "d"}, {"a", "7"}, {"a", " k"}, {"a", "", "b"}, {"a", "e", "x"},
		{"a", "f", "y"}, {"x", "y"}, {"missing"}, {"a", "+"}, {"a", "-1"},
	}
	for _, p := range paths {
		for _, n := range []*yaml.Node{doc, doc.Content[0]} {
			want, err := yaml.NewRNode(n).Pipe(yaml.Lookup(p...))
			var w *yaml.Node
			if err == nil && want != nil {
				w = want.YNode()
			}
			require.Same(t, w, splice.Lookup(n, p...), "path %q", p)
		}
	}
	for _, name := range []string{"a", "x", "missing", "d"} {
		m := doc.Content[0]
		if name == "d" {
			m = splice.Lookup(doc, "a")
		}
		f := yaml.NewRNode(m).Field(name)
		k, v := splice.Field(m, name)
		if f == nil {
			require.Nil(t, k)
			require.Nil(t, v)
			continue
		}
		require.Same(t, f.Key.YNode(), k, name)
		require.Same(t, f.Value.YNode(), v, name)
	}
}
