package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGitOpsLayouts plans examples/gitops-layouts, a repository whose
// GPU Deployments are built by a Kustomize overlay and rendered from an
// in-repository chart: each edit lands where its value is set (the
// overlay's patch, the base, the chart's values), proven by building and
// rendering again, and nothing is written.
func TestGitOpsLayouts(t *testing.T) {
	const repo = "../../examples/gitops-layouts"
	before := treeHash(t, repo)
	out, errOut, code := cli(t, "plan", "--repo", repo, "--metrics-file", quickstartMetrics)
	require.Equal(t, exitOK, code, errOut)
	golden(t, "gitops-layouts-plan.txt", []byte(out))
	for _, want := range []string{
		"--- a/kustomize/overlays/prod/gpu.yaml\n", `+        gpu-fraction: "0.72"`,
		"--- a/kustomize/base/chat/deployment.yaml\n", `"--gpu-memory-utilization", "0.64"]`,
		"--- a/charts/translate/values.yaml\n", `+  fraction: "0.32"`,
	} {
		require.Contains(t, out, want)
	}
	require.Equal(t, before, treeHash(t, repo), "plan must write nothing")
}
