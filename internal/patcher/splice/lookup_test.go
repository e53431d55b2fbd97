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

// TestCompareNamesThePath: a mismatch names where it is, from the root
// given, through keys and sequence items, and says when it is a key.
func TestCompareNamesThePath(t *testing.T) {
	for _, c := range []struct{ want, got, root, msg string }{
		{"a:\n  b:\n  - x: 1\n  - x: 2\n", "a:\n  b:\n  - x: 1\n  - x: 3\n", "", `a.b[1].x: expected "2", got "3"`},
		{"a:\n  b: 1\n", "a:\n  c: 1\n", "", `a.b (key): expected "b", got "c"`},
		{"- - a\n", "- - b\n", "doc", `doc[0][0]: expected "a", got "b"`},
		{"a: [1]\n", "a: [1, 2]\n", "", "a: expected 1 items, got 2"},
		{"a: 1\n", "a: 1\n", "", ""},
	} {
		w, err := splice.Parse([]byte(c.want))
		require.NoError(t, err)
		g, err := splice.Parse([]byte(c.got))
		require.NoError(t, err)
		m := splice.Compare(w.Docs[0], g.Docs[0], c.root)
		if c.msg == "" {
			require.Nil(t, m)
			continue
		}
		require.NotNil(t, m)
		require.Equal(t, c.msg, m.Error())
	}
	w, _ := splice.Parse([]byte("a:\n  b: 1\n  c: 2\n"))
	g, _ := splice.Parse([]byte("a:\n  c: 2\n  d: 1\n"))
	require.Equal(t, "a.b: expected the key, missing", splice.CompareBuilt(w.Docs[0], g.Docs[0], "").Error())
}
