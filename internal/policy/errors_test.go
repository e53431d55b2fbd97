package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/policy"
)

// TestLoadReportsEveryError: a document's errors are told all at once, in
// the order of the file, none hiding another, and a misspelt name is
// told with the name it most likely meant.
func TestLoadReportsEveryError(t *testing.T) {
	const durationHelp = "use a number and a unit, e.g. 30s, 10m, 2h or 7d"
	tests := []struct {
		name, file string
		want       []string
	}{
		{
			name: "a bad duration does not hide the threshold beside it", file: "duration-and-threshold.yaml",
			want: []string{
				`duration-and-threshold.yaml:10:24: spec.metrics.compute.upsize.metricsWindow: invalid duration "2 minutes": ` + durationHelp,
				"duration-and-threshold.yaml:11:27: spec.metrics.compute.upsize.thresholdPercent: 5000 is out of range: must be between 1 and 1000",
			},
		},
		{
			name: "an error in each metric", file: "two-metrics.yaml",
			want: []string{
				`two-metrics.yaml:9:34: spec.metrics.compute.scaleBack.metricsWindow: invalid duration "10 min": ` + durationHelp,
				"two-metrics.yaml:9:60: spec.metrics.compute.scaleBack.thresholdPercent: 150 is out of range: must be between 1 and 100",
				"two-metrics.yaml:11:34: spec.metrics.memory.upsize.thresholdPercent: 0 is out of range: must be between 1 and 1000",
			},
		},
		{
			name: "misspelt fields of a Kubex kind", file: "misspelt-kubex.yaml",
			want: []string{
				`misspelt-kubex.yaml:6:40: spec.scope.namespaceSelecter: unknown field (did you mean "namespaceSelector"?)`,
				`misspelt-kubex.yaml:9:16: spec.metrics.compute.upsize.thresholdPercnet: unknown field (did you mean "thresholdPercent"?)`,
				`misspelt-kubex.yaml:9:38: spec.metrics.compute.upsize.metricWindow: unknown field (did you mean "metricsWindow"?)`,
			},
		},
		{
			name: "misspelt fields of the project's kind, and a bad value between them", file: "misspelt-project.yaml",
			want: []string{
				`misspelt-project.yaml:7:5: spec.gitops.groupng: unknown field (did you mean "grouping"?)`,
				"misspelt-project.yaml:8:23: spec.gitops.minChangePercent: 400 is out of range: must be between 0 and 100",
				`misspelt-project.yaml:9:5: spec.gitops.lables: unknown field (did you mean "labels"?)`,
			},
		},
		{
			name: "a misspelt kind", file: "misspelt-kind.yaml",
			want: []string{
				`misspelt-kind.yaml:1:1: kind: unknown kind "ClusterProactivPolicy" in gpu-rightsizing.github.io/v1alpha1 (did you mean "ClusterProactivePolicy"?)`,
			},
		},
		{
			name: "validation and decoding errors in the order of the file", file: "file-order.yaml",
			want: []string{
				`file-order.yaml:4:1: spec.experimental.gpuKaiContract: missing: GPU/KAI settings are experimental; set it to "v1alpha1-2026-07"`,
				`file-order.yaml:5:27: spec.scope.workloadTypes[0]: unknown workload type "Deploymnet" (did you mean "Deployment"?)`,
				`file-order.yaml:8:38: spec.metrics.compute.upsize.headroom: unknown field (did you mean "headroomPercent"?)`,
			},
		},
		{
			// "must name at least one workload type" and "must configure
			// compute" would only repeat the errors told.
			name: "a value of the wrong type is told once", file: "not-a-mapping.yaml",
			want: []string{
				`not-a-mapping.yaml:6:26: spec.scope.workloadTypes: expected a list, got the string "Deployment"`,
				`not-a-mapping.yaml:8:14: spec.metrics.compute: expected a mapping, got the string "90%"`,
				"not-a-mapping.yaml:9:3: spec.automationStrategyRef.name: missing",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "errors", tt.file))
			require.NoError(t, err)
			set := policy.Parse(tt.file, b)
			var got []string
			for _, e := range set.Errors {
				got = append(got, e.Error())
			}
			require.Equal(t, tt.want, got)
			require.Len(t, set.Broken, 1, "nothing the document governs is changed")
		})
	}
}
