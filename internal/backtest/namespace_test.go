package backtest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
)

// TestReplayNamespacedPolicies: namespaced policies govern only their own
// namespace, so a trace is replayed there; before, it stood in a made-up
// namespace no namespaced policy can match. Policies that govern no
// namespace tried say which were.
func TestReplayNamespacedPolicies(t *testing.T) {
	const strategy = `apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: %sAutomationStrategy
metadata: {name: gpu%s}
spec:
  experimental: {gpuKaiContract: v1alpha1-2026-07}
  enablement: {gpu: {requests: {upsize: true, downsize: true}}}
---
apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: %sProactivePolicy
metadata: {name: p%s}
spec:
  scope: {%sworkloadTypes: [Deployment]}
  automationStrategyRef: {name: gpu}
`
	tests := []struct {
		name, kind, ns, scope string
		err                   string
	}{
		{name: "namespaced, in ml", ns: ", namespace: ml"},
		{name: "cluster-wide", kind: "Cluster"},
		{name: "cluster-wide, selecting team namespaces only", kind: "Cluster", scope: "namespaceSelector: {operator: In, values: [team-*]}, ",
			err: "do not govern a Deployment labelled nvidia.com/gpu.present=true in namespace backtest: out-of-scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			text := fmtPolicies(strategy, tt.kind, tt.ns, tt.scope)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "policies.yaml"), []byte(text), 0o644))
			e, err := backtest.LoadEngine(context.Background(), dir)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Empty(t, e.Governance.Skip)
			require.NotNil(t, e.Governance.Strategy)
		})
	}
}

func fmtPolicies(format, kind, ns, scope string) string {
	return fmt.Sprintf(format, kind, ns, kind, ns, scope)
}
