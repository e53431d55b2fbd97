package splice

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// predictSwaps puts each token of swaps in place of the scalar value it
// names (its value in the document) and returns predict's tree, nil when
// it refuses, and the edited text.
func predictSwaps(t testing.TB, src string, swaps map[string]string) (*Stream, []byte) {
	t.Helper()
	pred, _, b := predictSwapsFrom(t, src, swaps)
	return pred, b
}

// predictSwapsFrom is predictSwaps, and returns the original parse that
// predict started from as well.
func predictSwapsFrom(t testing.TB, src string, swaps map[string]string) (*Stream, *Stream, []byte) {
	t.Helper()
	b := []byte(src)
	s, err := Parse(b)
	require.NoError(t, err)
	require.Len(t, s.Docs, 1)
	sp := spanner{t: s.t, pl: s.placer(0)}
	ch := &chunk{b: b, s: s, docs: 1}
	done := map[string]bool{}
	for _, n := range scalars(s.Docs[0]) {
		tok, ok := swaps[n.Value]
		if !ok || done[n.Value] {
			continue
		}
		done[n.Value] = true
		ts, te, err := sp.span(n)
		if err != nil {
			// The spanner finds no key's end: a plain key ends where
			// its value does.
			ts, err = s.t.nodeOffset(n)
			require.NoError(t, err)
			te = ts + len(n.Value)
		}
		ch.pending = append(ch.pending, splice{off: ts, end: te, text: tok})
	}
	require.Len(t, ch.pending, len(swaps), "every swap finds its scalar")
	ch.segs = []segment{{orig: true, off: 0, end: len(b)}}
	require.NoError(t, ch.splice(b, ch.pending))
	f := &File{held: &Held{}}
	return f.predict(ch, b), s, ch.b
}

// checkPredict makes swaps in src: predict must refuse them, or, when it
// takes them, give what a parse of the result gives.
func checkPredict(t *testing.T, src string, swaps map[string]string, takes bool) {
	t.Helper()
	pred, b := predictSwaps(t, src, swaps)
	if !takes {
		require.Nil(t, pred, "predict must refuse:\n%s", b)
		return
	}
	require.NotNil(t, pred, "predict refused:\n%s", b)
	got, err := Parse(b)
	require.NoError(t, err)
	require.Empty(t, sameParse(got.Docs[0], pred.Docs[0], ""))
	require.Equal(t, string(b), string(pred.t.b))
}

// scalars lists n's scalars in preorder.
func scalars(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	if n.Kind == yaml.ScalarNode {
		out = append(out, n)
	}
	for _, c := range n.Content {
		out = append(out, scalars(c)...)
	}
	return out
}

// sameParse returns where two trees differ in anything a parse sets,
// positions, styles and comments included; "" when nowhere.
func sameParse(want, got *yaml.Node, at string) string {
	switch {
	case want.Kind != got.Kind, want.Style != got.Style, want.Tag != got.Tag, want.Value != got.Value,
		want.Anchor != got.Anchor, want.HeadComment != got.HeadComment, want.LineComment != got.LineComment,
		want.FootComment != got.FootComment, want.Line != got.Line, want.Column != got.Column,
		len(want.Content) != len(got.Content), (want.Alias == nil) != (got.Alias == nil):
		return fmt.Sprintf("%s: parsed %+v, predicted %+v", at, *want, *got)
	}
	for i := range want.Content {
		if d := sameParse(want.Content[i], got.Content[i], fmt.Sprintf("%s/%d", at, i)); d != "" {
			return d
		}
	}
	return ""
}

const swapDoc = `# d1: inference server
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d1
  labels:
    kai.scheduler/queue: serving # the team's queue
spec:
  template:
    metadata:
      annotations:
        gpu-fraction: "0.5" # last set by the bot
        note: 'it''s'
    spec:
      containers:
        - name: vllm
          args:
            - --gpu-memory-utilization=0.45
            - "0.45"
          env: {name: x}
      # a foot comment
      volumes:
        - name: shm
          more: |
            a
`

// A swap predict takes gives the tree a parse of the result gives, to
// the positions and comments; one it refuses would be read otherwise, or
// is outside what design.md §10 argues.
func TestPredict(t *testing.T) {
	for _, tc := range []struct {
		name  string
		swaps map[string]string
		ok    bool
	}{
		{"double-quoted, with a comment after", map[string]string{"0.5": `"0.25"`}, true},
		{"plain, a comment after", map[string]string{"serving": "training"}, true},
		{"plain in a sequence", map[string]string{"--gpu-memory-utilization=0.45": "--gpu-memory-utilization=0.3"}, true},
		{"three at once", map[string]string{"0.5": `"1"`, "0.45": `"0.9"`, "d1": "d2"}, true},
		{"single-quoted", map[string]string{"it's": `'a b'`}, true},
		{"an escape", map[string]string{"0.5": `"\t0.5"`}, true},
		{"plain that reads as a number", map[string]string{"serving": "0.5"}, true},
		{"plain with a blank inside", map[string]string{"serving": "a b"}, true},

		// Read alone, these are not one plain scalar; in place they
		// would not be either.
		{"a mapping", map[string]string{"serving": "a: b"}, false},
		{"a comment", map[string]string{"serving": "a #b"}, false},
		{"a block scalar, which takes the lines after it", map[string]string{"d1": "|"}, false},
		{"a sequence", map[string]string{"d1": "- a"}, false},
		{"an alias", map[string]string{"d1": "*a"}, false},
		{"an anchor", map[string]string{"d1": "&a b"}, false},
		{"a tag", map[string]string{"d1": "!!int 5"}, false},
		{"a flow sequence", map[string]string{"d1": "[a, b]"}, false},
		{"a line break", map[string]string{"0.5": "\"a\nb\""}, false},
		{"a quote that ends early", map[string]string{"0.5": `"a" b`}, false},

		// Outside the argument: a key, flow context, another kind of
		// token, a block scalar.
		{"a key", map[string]string{"name": "nom"}, false},
		{"in a flow mapping", map[string]string{"x": "y"}, false},
		{"plain to quoted", map[string]string{"serving": `"serving2"`}, false},
		{"quoted to plain", map[string]string{"0.5": "0.25"}, false},
		{"a block scalar", map[string]string{"a\n": "b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPredict(t, swapDoc, tc.swaps, tc.ok) })
	}
}

// An independent review found these: tokens that read one way alone, at
// the start of a stream, and another in place; line breaks other than CR
// and LF; an alias that would still point at the old tree. Read as a
// value, a document marker is text, as in place: predict takes it, and
// agrees with a parse. The rest it refuses.
func TestPredictWhereAloneReadsOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name, src, value, tok string
		takes                 bool
	}{
		{"a document marker and more", "k: x\nl: z\n", "x", "--- y", true},
		{"a document marker", "k: x\n", "x", "---", true},
		{"a marker, then a number", "k: x\nl: z\n", "x", "--- 5", true},
		{"a byte order mark", "k: x\n", "x", "\ufeffy", false},
		{"LS in a plain token", "k: x\nl: z\n", "x", "a\u2028b", false},
		{"NEL in a quoted token", "k: \"x\"\nl: z\n", "x", "\"a\u0085b\"", false},
		{"PS in a single-quoted token", "k: 'x'\nl: z\n", "x", "'a\u2029b'", false},
		{"NEL in the old token", "a:\n  k: a\u0085   b\n  l: z\n", "a b", "c", false},
		{"an alias of the swapped node's parent", "base: &b\n  gpu: \"0.5\"\nuse: *b\n", "0.5", `"0.25"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPredict(t, tc.src, map[string]string{tc.value: tc.tok}, tc.takes) })
	}
}

// The tree predict makes shares the old tree's nodes but those on the
// way to a swap, and leaves the old tree as it was.
func TestPredictLeavesTheOriginal(t *testing.T) {
	pred, orig, _ := predictSwapsFrom(t, swapDoc, map[string]string{"0.5": `"0.25"`})
	require.NotNil(t, pred)
	require.Empty(t, sameParse(mustParse(t, swapDoc), orig.Docs[0], ""), "the original parse is as it was")
	require.Equal(t, "0.5", Lookup(orig.Docs[0].Content[0], "spec", "template", "metadata", "annotations", "gpu-fraction").Value)
	require.Equal(t, "0.25", Lookup(pred.Docs[0].Content[0], "spec", "template", "metadata", "annotations", "gpu-fraction").Value)

	oldRoot, newRoot := orig.Docs[0].Content[0], pred.Docs[0].Content[0]
	require.NotSame(t, Lookup(oldRoot, "spec"), Lookup(newRoot, "spec"), "spec is on the way to the swap")
	require.Same(t, Lookup(oldRoot, "metadata"), Lookup(newRoot, "metadata"), "metadata is not")
	require.Same(t, Lookup(oldRoot, "spec", "template", "spec"), Lookup(newRoot, "spec", "template", "spec"))
}

func mustParse(t *testing.T, src string) *yaml.Node {
	s, err := Parse([]byte(src))
	require.NoError(t, err)
	return s.Docs[0]
}

// FuzzPredict swaps two scalars of a document for any tokens: whatever
// predict takes, a parse of the result must give exactly.
func FuzzPredict(f *testing.F) {
	for _, s := range []string{swapDoc, "a: b\n", "a:\n  - b # c\n  - 'd'\n", "k: \"v\"\r\nl: w\r\n", "a: b\n# foot\nc: d\n",
		"a:\n  b: c\n  # head\n  d: e # line\n", "- a\n- - b\n  - c\n", "a: b   \n", "a: b #c\n  # d\ne: f\n"} {
		f.Add(s, uint(0), uint(1), `"x"`, "y")
	}
	// What an independent review found predict took wrongly.
	f.Add("k: x\nl: z\n", uint(1), uint(1), "--- 5", "")
	f.Add("k: x\n", uint(1), uint(1), "\ufeffy", "")
	f.Add("a:\n  k: x\n  l: z\n", uint(2), uint(2), "a\u2028   b", "")
	f.Add("base: &b\n  gpu: \"0.5\"\nuse: *b\n", uint(3), uint(3), `"0.25"`, "")
	// Swaps predict takes.
	f.Add("a: \"b\" # c\nd:\n  - e\n", uint(1), uint(3), `"f"`, "g")
	f.Add(swapDoc, uint(15), uint(24), `"0.25"`, `"0.3"`)
	f.Fuzz(func(t *testing.T, src string, k1, k2 uint, tok1, tok2 string) {
		s, err := Parse([]byte(src))
		if err != nil || len(s.Docs) != 1 {
			return
		}
		all := scalars(s.Docs[0])
		if len(all) == 0 {
			return
		}
		sp := spanner{t: s.t, pl: s.placer(0)}
		ch := &chunk{b: []byte(src), s: s, docs: 1, segs: []segment{{orig: true, off: 0, end: len(src)}}}
		for i, k := range []uint{k1, k2} {
			n := all[k%uint(len(all))]
			if i == 1 && n == all[k1%uint(len(all))] {
				break
			}
			ts, te, err := sp.span(n)
			if err != nil {
				return
			}
			ch.pending = append(ch.pending, splice{off: ts, end: te, text: []string{tok1, tok2}[i]})
		}
		orig := ch.b
		if ch.splice(orig, ch.pending) != nil {
			return
		}
		pred := (&File{held: &Held{}}).predict(ch, orig)
		if pred == nil {
			return
		}
		got, err := Parse(ch.b)
		require.NoError(t, err, "predicted a parse of\n%s", ch.b)
		require.Len(t, got.Docs, 1)
		require.Empty(t, sameParse(got.Docs[0], pred.Docs[0], ""), "in\n%s", ch.b)
	})
}
