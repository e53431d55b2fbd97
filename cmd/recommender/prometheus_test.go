package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// The quickstart planned from a real Prometheus serving its recording is
// the golden plan of the recording, byte for byte.
func TestQuickstartPlanFromPrometheus(t *testing.T) {
	srv := testenv.StartPrometheus(t, quickstartMetrics)
	if srv == nil {
		return
	}
	want, err := os.ReadFile(filepath.Join("testdata", "quickstart-plan.json"))
	require.NoError(t, err)
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))

	out, errOut, code := cli(t, "plan", "--repo", quickstartRepo, "--prometheus-url", srv.URL, "--at", "2026-11-30T12:00:00Z", "-o", "json",
		"--prometheus-token-file", token, "--prometheus-header", "X-Scope-OrgID: tenant-1", "--prometheus-timeout", "10s")
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, string(want), out)
	require.NotContains(t, errOut, "s3cret")

	// Down: every workload is left as it is, and the run says why.
	out, errOut, code = cli(t, "plan", "--repo", quickstartRepo, "--prometheus-url", "http://127.0.0.1:1", "--at", "2026-11-30T12:00:00Z",
		"--prometheus-timeout", "1s")
	require.Equal(t, exitProblems, code, errOut)
	require.Contains(t, out, "usage query for 6 workload(s) failed: usage from Prometheus at http://127.0.0.1:1: prometheus unavailable")
	require.NotContains(t, out, "scaleBack ")
}
