package testenv_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// Two scrapes as kube-state-metrics v2.20.0 writes OpenMetrics: a gauge
// family of two series, a counter (whose family name keeps _total, as
// kube-state-metrics writes it), a pod that is gone by the second scrape.
const (
	scrape1 = `# HELP kube_pod_status_phase [STABLE] The pods current phase.
# TYPE kube_pod_status_phase gauge
kube_pod_status_phase{namespace="serving",pod="a",uid="u1",phase="Running"} 1
kube_pod_status_phase{namespace="serving",pod="b",uid="u2",phase="Failed"} 1
# HELP kube_pod_container_status_restarts_total [STABLE] The number of container restarts per container.
# TYPE kube_pod_container_status_restarts_total counter
kube_pod_container_status_restarts_total{namespace="serving",pod="a",uid="u1",container="vllm"} 0
# EOF
`
	scrape2 = `# HELP kube_pod_status_phase [STABLE] The pods current phase.
# TYPE kube_pod_status_phase gauge
kube_pod_status_phase{namespace="serving",pod="a",uid="u1",phase="Running"} 1
# HELP kube_pod_container_status_restarts_total [STABLE] The number of container restarts per container.
# TYPE kube_pod_container_status_restarts_total counter
kube_pod_container_status_restarts_total{namespace="serving",pod="a",uid="u1",container="vllm"} 2
# EOF
`
	recording = `# HELP kube_pod_status_phase [STABLE] The pods current phase.
# TYPE kube_pod_status_phase gauge
kube_pod_status_phase{namespace="serving",pod="a",uid="u1",phase="Running"} 1 1796040000
kube_pod_status_phase{namespace="serving",pod="a",uid="u1",phase="Running"} 1 1796040060.5
kube_pod_status_phase{namespace="serving",pod="b",uid="u2",phase="Failed"} 1 1796040000
# HELP kube_pod_container_status_restarts_total [STABLE] The number of container restarts per container.
# TYPE kube_pod_container_status_restarts_total counter
kube_pod_container_status_restarts_total{namespace="serving",pod="a",uid="u1",container="vllm"} 0 1796040000
kube_pod_container_status_restarts_total{namespace="serving",pod="a",uid="u1",container="vllm"} 2 1796040060.5
# EOF
`
)

func TestOpenMetricsRecording(t *testing.T) {
	t0 := time.Unix(1796040000, 0)
	tests := []struct {
		name    string
		scrapes []testenv.TimedScrape
		want    string
		wantErr string
	}{
		{
			name:    "series kept together, in time order",
			scrapes: []testenv.TimedScrape{{At: t0, OpenMetrics: []byte(scrape1)}, {At: t0.Add(60500 * time.Millisecond), OpenMetrics: []byte(scrape2)}},
			want:    recording,
		},
		{
			name:    "text format",
			scrapes: []testenv.TimedScrape{{At: t0, OpenMetrics: []byte("# TYPE x gauge\nx 1\n")}},
			wantErr: `scrape 1: not OpenMetrics: it does not end with "# EOF"`,
		},
		{
			name:    "times not increasing",
			scrapes: []testenv.TimedScrape{{At: t0, OpenMetrics: []byte(scrape1)}, {At: t0, OpenMetrics: []byte(scrape2)}},
			wantErr: "scrape 2: at",
		},
		{
			name:    "a timestamp already",
			scrapes: []testenv.TimedScrape{{At: t0, OpenMetrics: []byte("x{a=\"b c\"} 1 1796040000\n# EOF\n")}},
			wantErr: `scrape 1, line 1: a sample with a timestamp or an exemplar already`,
		},
		{
			name:    "not a number",
			scrapes: []testenv.TimedScrape{{At: t0, OpenMetrics: []byte("x{a=\"b\"} one\n# EOF\n")}},
			wantErr: `scrape 1, line 1: value "one" is not a number`,
		},
		{
			name:    "another comment",
			scrapes: []testenv.TimedScrape{{At: t0, OpenMetrics: []byte("# produced by hand\nx 1\n# EOF\n")}},
			wantErr: `scrape 1, line 1: a comment OpenMetrics does not allow`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testenv.OpenMetricsRecording(tt.scrapes...)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
			// The reader of recordings takes it, as promtool does
			// (TestKubeStateMetrics in kubeenv backfills one).
			_, err = openmetrics.ParseRecorded(bytes.NewReader(got), "recording.om")
			require.NoError(t, err)
		})
	}
}

func TestParseText(t *testing.T) {
	text := `# HELP kube_node_labels [STABLE] Kubernetes labels converted to Prometheus labels.
# TYPE kube_node_labels gauge
kube_node_labels{node="gpu-node-a",label_node_pool="a100-pool"} 1
kube_node_labels{node="gpu-node-b",label_node_pool="h100 \"pool\""} 1
# HELP kube_node_status_capacity The capacity for different resources of a node.
# TYPE kube_node_status_capacity gauge
kube_node_status_capacity{node="gpu-node-a",resource="nvidia_com_gpu",unit="integer"} 8
`
	s, err := testenv.ParseText([]byte(text))
	require.NoError(t, err)
	require.Len(t, s, 3)
	tests := []struct {
		name   string
		metric string
		labels []string
		want   []string
	}{
		{name: "by name", metric: "kube_node_labels", want: []string{
			`kube_node_labels{label_node_pool="a100-pool",node="gpu-node-a"} 1`,
			`kube_node_labels{label_node_pool="h100 \"pool\"",node="gpu-node-b"} 1`,
		}},
		{name: "by a label", metric: "kube_node_labels", labels: []string{"label_node_pool", `h100 "pool"`}, want: []string{
			`kube_node_labels{label_node_pool="h100 \"pool\"",node="gpu-node-b"} 1`,
		}},
		{name: "an absent label", metric: "kube_node_status_capacity", labels: []string{"node", "gpu-node-a", "zone", ""}, want: []string{
			`kube_node_status_capacity{node="gpu-node-a",resource="nvidia_com_gpu",unit="integer"} 8`,
		}},
		{name: "none", metric: "kube_node_labels", labels: []string{"node", "gpu-node-c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, x := range s.Find(tt.metric, tt.labels...) {
				got = append(got, x.String())
			}
			require.Equal(t, tt.want, got)
		})
	}
	_, err = testenv.ParseText([]byte("x{a=\"b\"} one\n"))
	require.Error(t, err)
}
