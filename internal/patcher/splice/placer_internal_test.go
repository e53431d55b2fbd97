package splice

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// checkPlacer asks a placer of each document of src about every node of
// it, in an order that seed shuffles, and about a node of no document:
// each answer must be places' own, before and after the placer gives up
// walking and indexes the document.
func checkPlacer(t *testing.T, src []byte, seed uint64) {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		return
	}
	stranger := &yaml.Node{Kind: yaml.ScalarNode, Value: "x"}
	for i, doc := range s.Docs {
		want := places(doc)
		var nodes []*yaml.Node
		for n := range want {
			nodes = append(nodes, n)
		}
		rand.New(rand.NewPCG(seed, uint64(i))).Shuffle(len(nodes), func(a, b int) { nodes[a], nodes[b] = nodes[b], nodes[a] })
		pl := newPlacer(doc)
		for _, n := range append(nodes, stranger) {
			got, ok := pl.lookup(n)
			w, wok := want[n]
			if ok != wok || got != w {
				t.Fatalf("document %d, node %q at %d:%d: placer says %+v %v, places %+v %v", i, n.Value, n.Line, n.Column, got, ok, w, wok)
			}
		}
		if len(nodes) > 2*placerWalks && !pl.whole {
			t.Fatalf("document %d: %d questions and still walking", i, len(nodes))
		}
	}
}

// TestPlacerIsPlaces: on the corpus of real manifests, and on documents
// whose places differ by style (flow inside block, block in a sequence),
// a placer answers as the index of every node does.
func TestPlacerIsPlaces(t *testing.T) {
	for _, src := range []string{
		"a: 1\n",
		"a: {b: [1, 2], c: {d: e}}\nf:\n  - g: 1\n    h: [x]\n  - - y\n    - z\n",
		"- a\n- b: c\n  d:\n    e: f\n---\nk: v\n",
		"x: &a {p: 1}\ny: *a\n",
		"? complex\n: value\n",
	} {
		checkPlacer(t, []byte(src), 1)
	}
	files, err := filepath.Glob(filepath.Join("..", "testdata", "corpus", "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the corpus: %d files, %v", len(files), err)
	}
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkPlacer(t, b, uint64(i))
	}
}

// FuzzPlacer: for any text that parses, a placer answers as places does.
func FuzzPlacer(f *testing.F) {
	for _, s := range []string{"a: 1\n", "a: {b: [1, 2]}\nc:\n- d\n- e: f\n", "- [a, {b: c}]\n- d\n", "x: &a {p: 1}\ny: *a\n"} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, src []byte, seed uint64) {
		checkPlacer(t, src, seed)
	})
}
