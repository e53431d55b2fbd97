package splice

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// heldBatch runs steps by document on a held File of src, every
// document kept, and Finish.
func heldBatch(t *testing.T, src string, steps map[int][]Step) (*File, error) {
	t.Helper()
	s, err := Parse([]byte(src))
	require.NoError(t, err)
	h := Hold([]byte(src), s, func(int) bool { return true })
	require.NotNil(t, h, "the file can be held")
	f, err := NewHeldFile("d.yaml", []byte(src), h)
	require.NoError(t, err)
	for idx := range len(s.Docs) {
		if len(steps[idx]) > 0 {
			if _, _, err := f.EditDoc(idx, steps[idx]); err != nil {
				return f, err
			}
		}
	}
	return f, f.Finish()
}

// threeDocs starts with a comment of its own before the first ---, in
// CRLF, the last document without a final line break.
var threeDocs = strings.ReplaceAll("# the app\n---\n"+twoDocs+"---\n# c\napiVersion: v1\nkind: Service\nmetadata:\n  name: s # svc", "\n", "\r\n")

// A held batch gives the bytes a batch proven by a parse of the whole
// file gives, document by document.
func TestHeldAsBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		steps map[int][]Step
	}{
		{name: "two documents, both edited", src: twoDocs, steps: map[int][]Step{
			0: {setScalar("y", "spec", "template", "spec", "containers", "0", "image"), setScalar("renamed", "metadata", "name")},
			1: {setScalar("z", "metadata", "name")}}},
		{name: "the second of two", src: twoDocs, steps: map[int][]Step{1: {setScalar("w", "metadata", "name")}}},
		{name: "a comment before the first ---, CRLF, no final break", src: threeDocs, steps: map[int][]Step{
			1: {setScalar("y", "metadata", "name")}, 2: {setScalar("t", "metadata", "name")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, _, err := batch(t, tc.src, tc.steps)
			require.NoError(t, err)
			want, changed := whole.Result()
			require.True(t, changed)

			f, err := heldBatch(t, tc.src, tc.steps)
			require.NoError(t, err)
			got, _ := f.Result()
			require.Equal(t, string(want), string(got))
			require.Equal(t, whole.Splices(), f.Splices())
		})
	}
}

// A held batch parses only the documents it edits, each alone. A splice
// that changes a byte outside what its step meant is refused by Finish,
// and the text stays as it was. The first two cases are what a parse of
// one document alone cannot see: it parses to its expected tree, but in
// the file the next document's --- joins its last line, or its own ---
// is gone. Without the check of the cut (stillCut) they would pass.
func TestHeldRefused(t *testing.T) {
	// raw splices once: run again on the result, where when no longer
	// holds, it finds nothing to do, as a step must.
	raw := func(name string, when func(b string) bool, sp func(d *Doc) splice) Step {
		return Step{Name: name, Run: func(d *Doc) error {
			if when(string(d.t.b)) {
				d.splices = append(d.splices, sp(d))
			}
			return nil
		}}
	}
	always := func(string) bool { return true }
	at := func(d *Doc, s string) int { return strings.Index(string(d.t.b), s) }
	for _, tc := range []struct {
		name  string
		src   string
		steps map[int][]Step
		why   string // what Finish says
	}{
		{name: "the line break before the next --- dropped", src: twoDocs,
			steps: map[int][]Step{0: {raw("drop the break", func(b string) bool { return strings.HasSuffix(b, "\n") },
				func(d *Doc) splice { return splice{off: len(d.t.b) - 1, end: len(d.t.b)} })}},
			why: "no longer ends with a line break"},
		{name: "its own --- dropped", src: twoDocs,
			steps: map[int][]Step{1: {raw("drop ---", func(b string) bool { return strings.HasPrefix(b, "---") },
				func(*Doc) splice { return splice{off: 0, end: 4} })}},
			why: "no longer starts with its ---"},
		{name: "a directive for the next document", src: twoDocs,
			steps: map[int][]Step{0: {raw("a directive", func(b string) bool { return !strings.Contains(b, "%TAG") }, func(d *Doc) splice {
				return splice{off: len(d.t.b), end: len(d.t.b), text: "...\n%TAG !e! tag:example.com,2000:\n"}
			})}},
			why: "does not parse"},
		{name: "a byte order mark before the next ---", src: twoDocs,
			steps: map[int][]Step{0: {raw("a BOM", func(b string) bool { return !strings.Contains(b, "\ufeff") },
				func(d *Doc) splice { return splice{off: len(d.t.b), end: len(d.t.b), text: "\ufeff"} })}},
			why: "does not parse"},
		{name: "a splice past its document, into the next", src: twoDocs,
			steps: map[int][]Step{0: {raw("past the end", always, func(d *Doc) splice {
				return splice{off: len(d.t.b) + 20, end: len(d.t.b) + 21, text: "c"}
			})}},
			why: "splice out of range"},
		{name: "a byte of another field of the document", src: twoDocs,
			steps: map[int][]Step{1: {setScalar("y", "spec", "template", "spec", "containers", "0", "image"),
				raw("rename too", func(b string) bool { return strings.Contains(b, "name: b") },
					func(d *Doc) splice { i := at(d, "name: b"); return splice{off: i + 6, end: i + 7, text: "q"} })}},
			why: `metadata.name: expected "b", got "q"`},
		{name: "a comment", src: threeDocs,
			steps: map[int][]Step{2: {setScalar("t", "metadata", "name"),
				raw("drop the comment", func(b string) bool { return strings.Contains(b, "# c") },
					func(d *Doc) splice { i := at(d, "# c"); return splice{off: i, end: i + 5} })}},
			why: "comment"},
		{name: "a second document", src: twoDocs,
			steps: map[int][]Step{0: {raw("a document", func(b string) bool { return !strings.Contains(b, "Extra") }, func(d *Doc) splice {
				return splice{off: len(d.t.b), end: len(d.t.b), text: "---\nkind: Extra\n"}
			})}},
			why: "expected 1 documents, got 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := heldBatch(t, tc.src, tc.steps)
			require.ErrorIs(t, err, ErrVerify)
			require.ErrorContains(t, err, tc.why)
			got, changed := f.Result()
			require.False(t, changed)
			require.Equal(t, tc.src, string(got))
		})
	}
}

// Hold keeps a file only when its documents can be proven one by one.
func TestHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		held bool
	}{
		{name: "documents between markers", src: twoDocs, held: true},
		{name: "a comment first, CRLF", src: threeDocs, held: true},
		{name: "one document", src: "a: 1\n", held: true},
		{name: "an anchor", src: twoDocs + "---\na: &x 1\nb: *x\n"},
		{name: "a directive", src: "%TAG !e! tag:example.com,2000:\n---\n" + twoDocs},
		{name: "a byte order mark", src: "\ufeff" + twoDocs},
		{name: "a lone CR", src: "a: 1\rb: 2\n---\nc: 3\n"},
		{name: "an empty document", src: "---\n---\na: 1\n", held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.src))
			require.NoError(t, err)
			h := Hold([]byte(tc.src), s, func(int) bool { return true })
			require.Equal(t, tc.held, h != nil)
		})
	}
}

// FuzzHold: for any text Hold keeps, each of its chunks parses alone to
// the documents the whole stream gave there, and the kept trees come back
// as they were. Finish's proof of a held file rests on this.
//
//	go test ./internal/patcher/splice -run '^$' -fuzz FuzzHold -fuzztime 1m
func FuzzHold(f *testing.F) {
	for _, s := range []string{twoDocs, threeDocs, "a: 1\n", "---\n---\na: 1\n", "a: |\n  x\n---\nb: >-\n  y\n",
		"a: [1,\n  2]\n---\nb: {c: d}\n", "a: 'x\n  y'\n---\nb: \"z\"\n", "# c\n--- # d\na: 1\n... # e\n---\nb: 2\n",
		"--- |\n text\n--- >\n more\n", "a: 1\n--- !!map\nb: 2\n", "a:\n- b\n---\n- c\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		h := Hold(b, s, func(int) bool { return true })
		if h == nil {
			return
		}
		for _, c := range h.chunks {
			alone, err := Parse(b[c.off:c.end])
			require.NoError(t, err, "chunk %q", b[c.off:c.end])
			if c.doc < 0 {
				require.Empty(t, alone.Docs, "chunk %q", b[c.off:c.end])
				continue
			}
			require.Len(t, alone.Docs, 1, "chunk %q", b[c.off:c.end])
			require.Nil(t, Compare(s.Docs[c.doc], alone.Docs[0], ""), "chunk %q", b[c.off:c.end])
			require.Nil(t, Compare(s.Docs[c.doc], c.tree.thaw(), ""))
			require.Equal(t, s.Docs[c.doc].Line, alone.Docs[0].Line+c.line0)
		}
	})
}

// blockDeployment is a Deployment in block style, named by %s.
const blockDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
  labels:
    team: t
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: c
          image: x
          args:
            - --a
`

// heldSteps change a held Deployment every way a step can: a scalar
// replaced, a mapping entry added, one deleted, a sequence item appended;
// each finds nothing to do once done, as Finish asks.
var heldSteps = []Step{
	{Name: "replace", Run: func(d *Doc) error {
		c := Lookup(d.Root, "spec", "template", "spec", "containers").Content[0]
		_, err := d.ReplaceScalar(Lookup(c, "image"), "y", "image", ScalarOpts{})
		return err
	}},
	{Name: "add", Run: func(d *Doc) error {
		return d.SetString(d.Root, "labels.app", []string{"metadata", "labels", "app"}, "a", ScalarOpts{})
	}},
	{Name: "delete", Run: func(d *Doc) error {
		m := Lookup(d.Root, "spec")
		k, v := Field(m, "replicas")
		if k == nil {
			return nil // done: Finish runs each step again on the result
		}
		return d.DeleteEntry(m, k, v, "replicas")
	}},
	{Name: "append", Run: func(d *Doc) error {
		args := Lookup(Lookup(d.Root, "spec", "template", "spec", "containers").Content[0], "args")
		if args.Content[len(args.Content)-1].Value == "--b" {
			return nil
		}
		return d.AppendItem(args, "--b", "args")
	}},
}

// TestHeldStepsLeaveTheParse: the steps of a held document change its
// expected tree, never the parse they read (what Finish checks the
// comments against), and the result is what the same steps give on a
// parse of the whole file.
func TestHeldStepsLeaveTheParse(t *testing.T) {
	src := fmt.Sprintf(blockDeployment, "a") + "---\n" + fmt.Sprintf(blockDeployment, "b")
	steps := map[int][]Step{0: heldSteps, 1: heldSteps[1:3]}
	whole, _, err := batch(t, src, steps)
	require.NoError(t, err)
	want, changed := whole.Result()
	require.True(t, changed)

	s, err := Parse([]byte(src))
	require.NoError(t, err)
	f, err := NewHeldFile("d.yaml", []byte(src), Hold([]byte(src), s, func(int) bool { return true }))
	require.NoError(t, err)
	for idx := range 2 {
		_, _, err := f.EditDoc(idx, steps[idx])
		require.NoError(t, err)
		read, _ := f.Document(idx)
		require.Nil(t, Compare(s.Docs[idx], read, ""), "document %d: the parse the steps read changed", idx)
		require.NotNil(t, Compare(f.Expected[idx], read, ""), "document %d: the expected tree did not change", idx)
	}
	require.NoError(t, f.Finish())
	got, _ := f.Result()
	require.Equal(t, string(want), string(got))
}

// TestHeldExpectedSharesTheUnchanged: a held document's expected tree is
// the parse's nodes but those a step changed and the path to them: a
// second tree of every node was a sixth of a plan's allocations.
func TestHeldExpectedSharesTheUnchanged(t *testing.T) {
	src := fmt.Sprintf(blockDeployment, "a")
	s, err := Parse([]byte(src))
	require.NoError(t, err)
	f, err := NewHeldFile("d.yaml", []byte(src), Hold([]byte(src), s, func(int) bool { return true }))
	require.NoError(t, err)
	_, _, err = f.EditDoc(0, heldSteps[:1])
	require.NoError(t, err)
	read, _ := f.Document(0)
	parsed := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node, seen map[*yaml.Node]bool)
	walk = func(n *yaml.Node, seen map[*yaml.Node]bool) {
		seen[n] = true
		for _, c := range n.Content {
			walk(c, seen)
		}
	}
	walk(read, parsed)
	expected := map[*yaml.Node]bool{}
	walk(f.Expected[0], expected)
	shared := 0
	for n := range expected {
		if parsed[n] {
			shared++
		}
	}
	// One scalar of 32 nodes changed: it and the path down to it from
	// the document node, 8 nodes, are copies.
	require.GreaterOrEqual(t, shared, len(expected)-8, "%d of %d nodes shared", shared, len(expected))
	require.NoError(t, f.Finish())
}

// TestFreezeThaw: a held document comes back with every field the edits
// and their proof read (kind, style, tag, value, line, column), in
// sixteen bytes a node; one whose line or column does not fit is not
// held, and its file is edited from a parse.
func TestFreezeThaw(t *testing.T) {
	long := strings.Repeat("#\n", 70000) + "a: 1\n"
	for _, tc := range []struct {
		name, src string
		held      bool
	}{
		{name: "styles and tags", src: "a: 'x'\nb: \"y\"\nc: |\n  z\nd: !custom [1, {e: f}]\ng: !!binary aGk=\nh:\n- ~\n- \"\"\n", held: true},
		{name: "empty values beside long ones", src: "a: \"\"\nb: " + strings.Repeat("v", 300) + "\nc: ''\n", held: true},
		{name: "a line past 65,535 in its chunk", src: long},
		{name: "a column past 65,535", src: "a: [" + strings.Repeat(" ", 70000) + "1]\n"},
		{name: "a sequence of 65,535 items", src: "a: [" + strings.Repeat(strings.Repeat("1,", 100)+"\n  ", 655) + strings.Repeat("1,", 34) + "1]\n", held: true},
		{name: "a sequence past 65,535 items", src: "a: [" + strings.Repeat(strings.Repeat("1,", 100)+"\n  ", 655) + strings.Repeat("1,", 35) + "1]\n"},
		{name: "every kind and style", src: "--- !!map\na: !!seq [x, 'y', \"z\"]\nb: |-\n  l\nc: >\n  f\nd: {e: f}\n", held: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.src))
			require.NoError(t, err)
			f := freeze(s.Docs[0], 0)
			require.Equal(t, tc.held, f != nil)
			if f == nil {
				return
			}
			var same func(want, got *yaml.Node)
			same = func(want, got *yaml.Node) {
				require.Equal(t, []any{want.Kind, want.Style, want.Tag, want.Value, want.Line, want.Column},
					[]any{got.Kind, got.Style, got.Tag, got.Value, got.Line, got.Column})
				require.Len(t, got.Content, len(want.Content))
				for i := range want.Content {
					same(want.Content[i], got.Content[i])
				}
			}
			same(s.Docs[0], f.thaw())
		})
	}
	require.LessOrEqual(t, unsafe.Sizeof(frozenNode{}), uintptr(12))
}
