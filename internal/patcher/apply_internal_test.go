package patcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// dropFinalBreak deletes the line break that ends its document, before
// the next one's ---. The document alone still parses to the same tree,
// but in the file that --- then ends the document's last line.
type dropFinalBreak struct{}

func (dropFinalBreak) String() string { return "dropFinalBreak()" }

func (dropFinalBreak) apply(d *podEdit) error {
	start, err := d.t.nodeOffset(d.root)
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

func applyInternal(t *testing.T, src string, edits ...Edit) *Result {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "d.yaml"), []byte(src), 0o644))
	ctx := context.Background()
	inv, err := Discover(ctx, root)
	require.NoError(t, err)
	res, err := Apply(ctx, root, inv, edits)
	require.NoError(t, err)
	return res
}

// Each op verifies only its document's chunk; the whole file is verified
// once at the end. An edit that only the whole file shows to be wrong is
// caught there: the file is done again, verifying the whole file after
// every op, which refuses that edit and keeps the others.
func TestApplyWholeFileVerificationAfterChunks(t *testing.T) {
	f, err := newFileEdit("d.yaml", []byte(twoDocs), false)
	require.NoError(t, err)
	require.False(t, f.whole)
	require.Len(t, f.chunks, 2)

	a, b := usage.Ref{Kind: "Deployment", Name: "a"}, usage.Ref{Kind: "Deployment", Name: "b"}
	res := applyInternal(t, twoDocs,
		Edit{Workload: a, Ops: []Op{dropFinalBreak{}}},
		Edit{Workload: b, Ops: []Op{SetGPUFraction("0.5")}},
	)
	require.Len(t, res.Refused, 1)
	require.Equal(t, a, res.Refused[0].Workload)
	require.ErrorIs(t, res.Refused[0].Err, ErrVerify)
	require.Len(t, res.Files, 1)
	require.Equal(t, 1, len(res.Files[0].Changes))
	require.Contains(t, string(res.Files[0].New), "  name: a\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: x}]\n---\n")
}

// A file is cut into chunks at its document markers, directives going
// with the --- after them; each chunk parses on its own to the documents
// of the stream. A file where that fails is one chunk.
func TestApplySplit(t *testing.T) {
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
		f, err := newFileEdit("d.yaml", []byte(tc.src), false)
		require.NoError(t, err, tc.src)
		require.False(t, f.whole, tc.src)
		require.Len(t, f.chunks, tc.chunks, tc.src)
		res := applyInternal(t, tc.src, Edit{Workload: usage.Ref{Kind: "Deployment", Name: "a"}, File: "d.yaml", Ops: []Op{SetGPUFraction("0.5")}})
		require.Empty(t, res.Refused, tc.src)
		require.Len(t, res.Files, 1, tc.src)
	}

	// A chunk that does not parse alone: its document needs the stream.
	f := &fileEdit{orig: []byte("a: 1\n---\nb: 2\n"), eol: "\n"}
	s, err := parseStream(f.orig)
	require.NoError(t, err)
	s.docs[1].Content[0].Content[1].Value = "different"
	require.Nil(t, f.split(s))
}

// Refusals and notes name lines of the file as it is, even after an
// earlier edit of the same file added lines above them.
func TestApplyLinesOfTheOriginalFile(t *testing.T) {
	src := twoDocs + "---\n" + `apiVersion: apps/v1
kind: Deployment
metadata:
  name: c
spec:
  template:
    metadata:
      annotations: &shared {team: ml}
    spec:
      containers: [{name: c, image: x}]
`
	res := applyInternal(t, src,
		Edit{Workload: usage.Ref{Kind: "Deployment", Name: "a"}, Ops: []Op{SetGPUFraction("0.5")}},
		Edit{Workload: usage.Ref{Kind: "Deployment", Name: "c"}, Ops: []Op{SetGPUFraction("0.5")}},
	)
	require.Len(t, res.Files, 1)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, ErrAlias)
	require.Contains(t, res.Refused[0].Err.Error(), "d.yaml:26: ")
}
