package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClustersSuggest: the command prints the draft on stdout and what
// it cannot resolve on stderr, each at its file and line; with nothing
// resolved it prints no map and exits 3.
func TestClustersSuggest(t *testing.T) {
	out, errOut, code := cli(t, "clusters", "suggest", "--repo", "../../internal/clustermap/testdata/flux")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "kind: ClusterMap\n")
	require.Contains(t, out, "    - name: staging\n      paths:\n        - apps/staging # clusters/staging/apps.yaml:24 (Kustomization flux-system/base)\n")
	require.Contains(t, errOut, `not resolved: clusters/staging/apps.yaml:12:9: spec.path: "./apps/${CLUSTER_NAME}" is substituted when it is applied`)
	require.NotContains(t, out, "not resolved")

	out, errOut, code = cli(t, "clusters", "suggest", "--repo", quickstartRepo)
	require.Equal(t, exitProblems, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "no cluster resolved, so no map to suggest")

	_, errOut, code = cli(t, "clusters", "suggest", "--repo", "does-not-exist")
	require.Equal(t, exitError, code)
	require.Contains(t, errOut, "open checkout")
}
