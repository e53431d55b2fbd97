package splice

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// indexPlaces is places as it was before walkPlaces: the reference the
// placer and places are held to, written apart from both.
func indexPlaces(doc *yaml.Node) map[*yaml.Node]place {
	m := map[*yaml.Node]place{}
	var walk func(n *yaml.Node, p place)
	walk = func(n *yaml.Node, p place) {
		if _, seen := m[n]; seen {
			return
		}
		m[n] = p
		flow := p.flow || n.Style&yaml.FlowStyle != 0
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				ind := p.indent
				if !flow {
					ind = k.Column - 1
				}
				walk(k, place{parent: n, flow: flow, indent: ind})
				walk(v, place{parent: n, key: k, flow: flow, indent: ind})
			}
		case yaml.SequenceNode:
			ind := p.indent
			if !flow {
				ind = n.Column - 1
			}
			for _, c := range n.Content {
				walk(c, place{parent: n, flow: flow, indent: ind})
			}
		}
	}
	for _, c := range doc.Content {
		walk(c, place{indent: -1})
	}
	return m
}

// nodesOf returns n and every node below it, a node met twice twice.
func nodesOf(n *yaml.Node) []*yaml.Node {
	out := []*yaml.Node{n}
	for _, c := range n.Content {
		out = append(out, nodesOf(c)...)
	}
	return out
}

// share puts k nodes of doc a second time into a collection of it that
// is not below them (a copy made as ownCopy makes one, half the time):
// the shared trees the package's copy-on-write builds.
func share(doc *yaml.Node, r *rand.Rand, k int) {
	for range k {
		ns := nodesOf(doc)[1:]
		var cols []*yaml.Node
		for _, n := range ns {
			if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
				cols = append(cols, n)
			}
		}
		if len(cols) == 0 {
			return
		}
		c, x := cols[r.IntN(len(cols))], ns[r.IntN(len(ns))]
		if r.IntN(2) == 0 && len(x.Content) > 0 {
			x = ownCopy(x)
		}
		if slices.Contains(nodesOf(x), c) {
			continue // c below x: a cycle
		}
		at := r.IntN(len(c.Content)/2+1) * 2
		add := []*yaml.Node{x}
		if c.Kind == yaml.MappingNode {
			add = []*yaml.Node{{Kind: yaml.ScalarNode, Value: "shared", Line: 1, Column: 1}, x}
		} else {
			at = r.IntN(len(c.Content) + 1)
		}
		c.Content = slices.Insert(slices.Clone(c.Content), min(at, len(c.Content)), add...)
	}
}

// checkPlacer asks places and a placer of doc about every node of it,
// some more than once, in an order r shuffles, and about the document
// node, nil and a node of no document: each answer must be the
// reference's, before and after the placer gives up walking.
func checkPlacer(t *testing.T, doc *yaml.Node, r *rand.Rand) {
	t.Helper()
	want := indexPlaces(doc)
	if got := places(doc); len(got) != len(want) {
		t.Fatalf("places: %d nodes, the reference %d", len(got), len(want))
	}
	qs := append(nodesOf(doc), nil, &yaml.Node{Kind: yaml.ScalarNode, Value: "stranger"})
	qs = append(qs, qs[:r.IntN(len(qs))]...)
	r.Shuffle(len(qs), func(a, b int) { qs[a], qs[b] = qs[b], qs[a] })
	idx, pl := places(doc), newPlacer(doc)
	for _, n := range qs {
		w, wok := want[n]
		got, ok := pl.lookup(n)
		if ok != wok || got != w {
			t.Fatalf("placer (walks %d, whole %v): %+v %v, the reference %+v %v", pl.walks, pl.whole, got, ok, w, wok)
		}
		if got, ok := idx[n]; ok != wok || got != w {
			t.Fatalf("places: %+v %v, the reference %+v %v", got, ok, w, wok)
		}
	}
	if pl.walks > placerWalks {
		t.Fatalf("%d walks: past %d the placer indexes the document", pl.walks, placerWalks)
	}
}

// checkSource checks every document of src as parsed, then shared.
func checkSource(t *testing.T, src []byte, seed uint64) {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		return
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for _, doc := range s.Docs {
		checkPlacer(t, doc, r)
		share(doc, r, 1+r.IntN(4))
		checkPlacer(t, doc, r)
	}
}

// TestPlacerIsPlaces: on the corpus of real manifests, and on documents
// whose places differ by style (flow inside block, block in a sequence),
// parsed and with nodes shared, a placer answers as an index of every
// node does.
func TestPlacerIsPlaces(t *testing.T) {
	for i, src := range []string{
		"a: 1\n",
		"a: {b: [1, 2], c: {d: e}}\nf:\n  - g: 1\n    h: [x]\n  - - y\n    - z\n",
		"- a\n- b: c\n  d:\n    e: f\n---\nk: v\n",
		"x: &a {p: 1}\ny: *a\n",
		"? complex\n: value\n",
	} {
		checkSource(t, []byte(src), uint64(i))
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
		checkSource(t, b, uint64(i))
	}
}

// TestWalkPlacesStopped: once a node stops the walk, stopped hears of it
// and of each node above it, bottom up, each with its place; a walk that
// no node stops calls it never.
func TestWalkPlacesStopped(t *testing.T) {
	s, err := Parse([]byte("a:\n  b: [x, {y: z}]\nc: d\n"))
	if err != nil {
		t.Fatal(err)
	}
	doc := s.Docs[0]
	want := indexPlaces(doc)
	for _, target := range append(nodesOf(doc)[1:], &yaml.Node{}) {
		var got, path []*yaml.Node
		walkPlaces(doc, func(n *yaml.Node, _ place) (enter, stop bool) { return true, n == target },
			func(n *yaml.Node, p place) {
				if p != want[n] {
					t.Fatalf("stopped with %+v for %q, its place is %+v", p, n.Value, want[n])
				}
				got = append(got, n)
			})
		if _, in := want[target]; in {
			for c := target; c != nil; c = want[c].parent {
				path = append(path, c)
			}
		}
		if !slices.Equal(got, path) {
			t.Fatalf("stopped at %q: heard of %d nodes, the path has %d", target.Value, len(got), len(path))
		}
	}
}

// FuzzPlacer: for any text that parses, as parsed and with nodes shared,
// a placer answers as an index of every node does.
func FuzzPlacer(f *testing.F) {
	for _, s := range []string{"a: 1\n", "a: {b: [1, 2]}\nc:\n- d\n- e: f\n", "- [a, {b: c}]\n- d\n", "x: &a {p: 1}\ny: *a\n"} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, src []byte, seed uint64) {
		checkSource(t, src, seed)
	})
}
