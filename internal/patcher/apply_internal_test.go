package patcher

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

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
		workload.Edit{Workload: usage.Ref{Kind: "Deployment", Name: "a"}, Ops: []Op{SetGPUFraction("0.5")}},
		workload.Edit{Workload: usage.Ref{Kind: "Deployment", Name: "c"}, Ops: []Op{SetGPUFraction("0.5")}},
	)
	require.Len(t, res.Files, 1)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, ErrAlias)
	require.Contains(t, res.Refused[0].Err.Error(), "d.yaml:26: ")
}
