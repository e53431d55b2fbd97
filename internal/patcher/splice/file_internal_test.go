package splice

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// dropFinalBreak deletes the line break that ends its document, before
// the next one's ---. The document alone still parses to the same tree,
// but in the file that --- then ends the document's last line.
func dropFinalBreak(d *Doc) error {
	start, err := d.t.nodeOffset(d.Root)
	if err != nil {
		return err
	}
	at := len(d.t.b) - 1 // a chunk ends where the next document starts
	if i := strings.Index(string(d.t.b[start:]), "\n---\n"); i >= 0 {
		at = start + i // one chunk for the whole file
	}
	d.splices = append(d.splices, splice{off: at, end: at + 1})
	return nil
}

const twoDocs = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
spec:
  template:
    spec:
      containers: [{name: c, image: x}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
spec:
  template:
    spec:
      containers: [{name: c, image: x}]
`

// Each step verifies only its document's chunk; the whole file is
// verified once at the end. A step that only the whole file shows to be
// wrong passes its chunk and fails VerifyAll; done on one chunk (whole),
// the step itself is refused. Edit does both: the faulty step is refused
// and the good step on the other document is kept.
func TestWholeFileVerificationAfterChunks(t *testing.T) {
	f, err := NewFile("d.yaml", []byte(twoDocs), false)
	require.NoError(t, err)
	require.False(t, f.Whole)
	require.Len(t, f.chunks, 2)
	_, _, err = f.EditDoc(0, []Step{{Name: "dropFinalBreak", Run: dropFinalBreak}})
	require.NoError(t, err)
	require.Error(t, f.VerifyAll(), "the file as a whole no longer parses")

	f, err = NewFile("d.yaml", []byte(twoDocs), true)
	require.NoError(t, err)
	_, _, err = f.EditDoc(0, []Step{{Name: "dropFinalBreak", Run: dropFinalBreak}})
	require.ErrorIs(t, err, ErrVerify)
	cur, changed := f.Result()
	require.False(t, changed)
	require.Equal(t, twoDocs, string(cur))

	var runs int
	var errs [2]error
	f, err = Edit("d.yaml", []byte(twoDocs), func(f *File) {
		runs++
		_, _, errs[0] = f.EditDoc(0, []Step{{Name: "dropFinalBreak", Run: dropFinalBreak}})
		_, _, errs[1] = f.EditDoc(1, []Step{{Name: "rename", Run: func(d *Doc) error {
			_, err := d.ReplaceScalar(Lookup(d.Root, "metadata", "name"), "z", "name", ScalarOpts{})
			return err
		}}})
	})
	require.NoError(t, err)
	require.Equal(t, 2, runs, "chunked, then again as one chunk")
	require.True(t, f.Whole)
	require.ErrorIs(t, errs[0], ErrVerify)
	require.NoError(t, errs[1])
	cur, changed = f.Result()
	require.True(t, changed)
	require.Equal(t, strings.Replace(twoDocs, "name: b", "name: z", 1), string(cur))
	require.NoError(t, f.VerifyAll())

	runs = 0
	_, err = Edit("d.yaml", []byte(twoDocs), func(f *File) { runs++ })
	require.NoError(t, err)
	require.Equal(t, 1, runs, "a file whose chunks prove it is edited once")
}

// A file is cut into chunks at its document markers, directives going
// with the --- after them; each chunk parses on its own to the documents
// of the stream. A file where that fails is one chunk.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		src    string
		chunks int
	}{
		{src: twoDocs, chunks: 2},
		{src: "%TAG !e! tag:example.com,2000:\n---\n" + twoDocs, chunks: 2},
		{src: "# header\n---\n" + twoDocs + "...\n# trailer\n", chunks: 3},
		{src: "\ufeff---\n" + twoDocs, chunks: 2},
		{src: twoDocs + "...\n%TAG !e! tag:example.com,2000:\n--- # the last\n" + strings.NewReplacer("name: a", "name: y", "name: b", "name: z").Replace(twoDocs), chunks: 4},
		// a block scalar at the top of a document runs to the next marker
		{src: "--- |\n  x\n---\n" + twoDocs + "--- >\n text\n", chunks: 4},
	} {
		f, err := NewFile("d.yaml", []byte(tc.src), false)
		require.NoError(t, err, tc.src)
		require.False(t, f.Whole, tc.src)
		require.Len(t, f.chunks, tc.chunks, tc.src)
	}

	// A chunk that does not parse alone: its document needs the stream.
	f := &File{Orig: []byte("a: 1\n---\nb: 2\n"), eol: "\n"}
	s, err := Parse(f.Orig)
	require.NoError(t, err)
	s.Docs[1].Content[0].Content[1].Value = "different"
	require.Nil(t, f.split(s))
}
