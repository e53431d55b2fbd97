package metrics_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
)

// TestKSMLabelName holds the rule to kube-state-metrics' own cases
// (v2.20.0, internal/store/utils_test.go, TestKubeLabelsToPrometheusLabels)
// and to keys the recommender reads.
func TestKSMLabelName(t *testing.T) {
	tests := []struct{ key, want string }{
		{"app1", "label_app1"},
		{"0_app3", "label_0_app3"},
		{"", "label_"},
		{"$app4", "label__app4"},
		{"_app5", "label__app5"},
		{"camelCase", "label_camel_case"},
		{"snake_camelCase", "label_snake_camel_case"},
		{"nodePool", "label_node_pool"},
		{"kai.scheduler/queue", "label_kai_scheduler_queue"},
		{"nvidia.com/gpu.product", "label_nvidia_com_gpu_product"},
		{"app.kubernetes.io/name", "label_app_kubernetes_io_name"},
		{"GPUType", "label_gputype"},
		{"MyLabel2X", "label_my_label2_x"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, metrics.KSMLabelName("label", tt.key), tt.key)
	}
	require.Equal(t, "annotation_gpu_fraction_num_devices", metrics.KSMLabelName("annotation", "gpu-fraction-num-devices"))
	require.Equal(t, "nvidia_com_gpu", metrics.KSMResourceName("nvidia.com/gpu"))
}

// upstreamLabelName is kube-state-metrics' rule as its code writes it,
// with the same regular expressions (internal/store/utils.go).
func upstreamLabelName(prefix, key string) string {
	invalid := regexp.MustCompile(`[^a-zA-Z0-9_]`)
	allCap := regexp.MustCompile("([a-z0-9])([A-Z])")
	return prefix + "_" + strings.ToLower(allCap.ReplaceAllString(invalid.ReplaceAllString(key, "_"), "${1}_${2}"))
}

func FuzzKSMLabelName(f *testing.F) {
	for _, k := range []string{"nodePool", "kai.scheduler/queue", "aB1Cd", "é.X", "ABC", "a1B2C"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if got, want := metrics.KSMLabelName("label", key), upstreamLabelName("label", key); got != want {
			t.Fatalf("KSMLabelName(%q) = %q, kube-state-metrics writes %q", key, got, want)
		}
	})
}
