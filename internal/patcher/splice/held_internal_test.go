package splice

import (
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

// TestHeldExpectedApart: a held document's expected tree, which the
// steps change, is its parse again and shares no node with the parse the
// steps read.
func TestHeldExpectedApart(t *testing.T) {
	src := []byte(threeDocs)
	s, err := Parse(src)
	require.NoError(t, err)
	f, err := NewHeldFile("d.yaml", src, Hold(src, s, func(int) bool { return true }))
	require.NoError(t, err)
	for idx := range s.Docs {
		doc, _ := f.Document(idx)
		require.NotNil(t, doc)
		require.Nil(t, Compare(f.Expected[idx], doc, ""))
		parsed := map[*yaml.Node]bool{}
		var walk func(n *yaml.Node, seen map[*yaml.Node]bool)
		walk = func(n *yaml.Node, seen map[*yaml.Node]bool) {
			seen[n] = true
			for _, c := range n.Content {
				walk(c, seen)
			}
		}
		walk(doc, parsed)
		expected := map[*yaml.Node]bool{}
		walk(f.Expected[idx], expected)
		for n := range expected {
			require.False(t, parsed[n], "document %d: a node shared", idx)
		}
	}
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
	require.LessOrEqual(t, unsafe.Sizeof(frozenNode{}), uintptr(16))
}
