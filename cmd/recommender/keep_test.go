package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlanReadsOnlyWhatItNeeds adds series no policy reads to the
// quickstart's recording: the plan, which opens it keeping only what its
// queries read, is still the golden one, and a series it drops is still
// checked.
func TestPlanReadsOnlyWhatItNeeds(t *testing.T) {
	orig, err := os.ReadFile(quickstartMetrics)
	require.NoError(t, err)
	body, ok := strings.CutSuffix(string(orig), "# EOF\n")
	require.True(t, ok)
	lines := strings.Count(body, "\n")
	// unread writes a day of a power series no policy reads, a sample a
	// minute up to the recording's end.
	unread := func() string {
		var b strings.Builder
		for i := range 1440 {
			fmt.Fprintf(&b, "kubex_gpu_container_power_watts{container=\"server\",namespace=\"team-a\",pod=\"chat-0\"} 250 %d\n", 1796040000-1439*60+i*60)
		}
		return b.String()
	}
	tests := []struct {
		name    string
		extra   string
		args    []string
		golden  string
		wantErr string
	}{
		{name: "the default evaluation time", extra: unread(), golden: "quickstart-plan.txt"},
		{name: "an evaluation time", extra: unread(), args: []string{"--at", "2026-11-30T12:00:00Z", "-o", "json"}, golden: "quickstart-plan.json"},
		{
			name:    "a series it drops is still checked",
			extra:   "unread_total 1 1796040000\nunread_total 2 1796039940\n",
			wantErr: fmt.Sprintf("metrics.om:%d:16: series unread_total: timestamp 1796039940.000 is not after 1796040000.000 on line %d", lines+2, lines+1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "metrics.om")
			require.NoError(t, os.WriteFile(path, []byte(body+tt.extra+"# EOF\n"), 0o644))
			out, errOut, code := cli(t, append([]string{"plan", "--repo", quickstartRepo, "--metrics-file", path}, tt.args...)...)
			if tt.wantErr != "" {
				require.NotEqual(t, exitOK, code)
				require.Contains(t, errOut, tt.wantErr)
				return
			}
			require.Equal(t, exitOK, code, errOut)
			want, err := os.ReadFile(filepath.Join("testdata", tt.golden))
			require.NoError(t, err)
			require.Equal(t, string(want), out)
		})
	}
}
