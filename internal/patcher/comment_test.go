package patcher_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// RemovePodAnnotation keeps a comment between flow entries that an
// earlier version of its deletion took with it.
func TestRemovePodAnnotationKeepsFlowComments(t *testing.T) {
	src := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    metadata:
      annotations: {
        prometheus.io/scrape: "true",  # scrape me
        gpu-fraction: "0.5"
      }
    spec:
      containers: [{name: c, image: x}]
`
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "d.yaml"), []byte(src), 0o644))
	ctx := context.Background()
	inv, err := patcher.Discover(ctx, root)
	require.NoError(t, err)
	ref := usage.Ref{Kind: "Deployment", Name: "app"}
	res, err := patcher.Apply(ctx, root, inv, []patcher.Edit{{Workload: ref, Ops: []workload.Op{patcher.RemovePodAnnotation("gpu-fraction")}}})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	require.Contains(t, string(res.Files[0].New), "      annotations: {\n        prometheus.io/scrape: \"true\"  # scrape me\n      }\n")
}
