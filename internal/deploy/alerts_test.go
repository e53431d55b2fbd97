package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/runmetrics"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// TestAlertRules: the example alert rules load in Prometheus (`promtool
// check rules`) and fire as their comments say on series shaped as a run
// pushes them (`promtool test rules`), and they read the metric a run
// writes.
func TestAlertRules(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	if promtool == "" {
		return
	}
	dir := filepath.Join(root, "examples", "alerts")
	tests := []struct {
		name string
		args []string
	}{
		{name: "check", args: []string{"check", "rules", "recommender-rules.yaml"}},
		{name: "unit tests", args: []string{"test", "rules", "recommender-rules.test.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(promtool, tt.args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
		})
	}
	rules, err := os.ReadFile(filepath.Join(dir, "recommender-rules.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(rules), "time() - "+runmetrics.LastSuccess+" > 2 * 3600")
}
