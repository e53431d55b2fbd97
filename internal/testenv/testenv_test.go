package testenv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// recorder stands in for a test so that Fatalf and Skipf can be observed
// instead of ending the calling test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func (r *recorder) Skipf(format string, args ...any) { r.skip = fmt.Sprintf(format, args...) }

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "fake-tool")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir)

	tests := []struct {
		name      string
		tool      string
		strict    string
		wantPath  string
		wantFatal bool
		wantSkip  bool
	}{
		{name: "found", tool: "fake-tool", wantPath: tool},
		{name: "found strict", tool: "fake-tool", strict: "1", wantPath: tool},
		{name: "missing skips", tool: "no-such-tool", wantSkip: true},
		{name: "missing fails when strict", tool: "no-such-tool", strict: "1", wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(testenv.StrictEnv, tt.strict)
			r := &recorder{TB: t}
			got := testenv.LookPath(r, tt.tool)
			require.Equal(t, tt.wantPath, got)
			if tt.wantFatal {
				require.Contains(t, r.fatal, "no-such-tool is needed and RECOMMENDER_TEST_STRICT is set")
				require.Contains(t, r.fatal, "make test-deps")
			} else {
				require.Empty(t, r.fatal)
			}
			if tt.wantSkip {
				require.Contains(t, r.skip, "no-such-tool not found, skipping")
				require.Contains(t, r.skip, "make test-deps")
			} else {
				require.Empty(t, r.skip)
			}
		})
	}
}
