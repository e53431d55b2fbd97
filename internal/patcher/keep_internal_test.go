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

// TestKeep: Keep lets go of what discovery held of the files no edit
// changes, keeps the others', and an edit of a file let go is made as
// well from a parse of it.
func TestKeep(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a", "b"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name+".yaml"), []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: `+name+`
  namespace: ml
spec:
  template:
    metadata:
      annotations:
        gpu-fraction: "0.5" # by hand
    spec:
      schedulerName: kai-scheduler
      containers:
        - name: c
          image: nginx
`), 0o644))
	}
	inv, err := Discover(context.Background(), root)
	require.NoError(t, err)
	ref := func(name string) usage.Ref { return usage.Ref{Namespace: "ml", Kind: "Deployment", Name: name} }
	edit := func(name string) Edit {
		return Edit{Workload: ref(name), File: name + ".yaml", Ops: []workload.Op{SetGPUFraction("0.7")}}
	}
	inv.Keep([]Edit{edit("a"), {Workload: ref("b")}})
	require.NotNil(t, inv.parsed["a.yaml"].p.Load(), "a.yaml is edited")
	require.NotNil(t, inv.parsed["b.yaml"].p.Load(), "b's edit names no file: every file of b is kept")
	inv.Keep([]Edit{edit("a")})
	require.NotNil(t, inv.parsed["a.yaml"].p.Load())
	require.Nil(t, inv.parsed["b.yaml"].p.Load(), "no edit changes b.yaml")

	res, err := Apply(context.Background(), root, inv, []Edit{edit("a"), edit("b")})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 2)
	for _, f := range res.Files {
		require.Contains(t, string(f.New), `gpu-fraction: "0.7" # by hand`, f.Path)
	}
}
