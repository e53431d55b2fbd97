package preset_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const (
	hamiPod  = "chat-7d9f8c6b5d-x2b4z"
	dcgmPod  = "train-5f6d7b8c9-bcdfg"
	dcgmFrac = "embed-6c8f9d7b5-m4n5p"
	gib      = 1 << 30
)

// presetRecording holds HAMi series behind a ServiceMonitor without
// honorLabels (exported_*), and DCGM series of a two-GPU pod and of a pod
// holding a gpu-fraction.
func presetRecording() *metricstest.Recording {
	hami := func(metric, container string) string {
		return metricstest.Series(metric, "namespace", "kai-resource-isolator", "pod", "kai-vgpu-monitor-8x7kq", "container", "monitor",
			"exported_namespace", "team-h", "exported_pod", hamiPod, "exported_container", container,
			"vdevice_index", "0", "device_uuid", "GPU-1", "zone", "vGPU")
	}
	dcgm := func(metric, pod, gpu string) string {
		return metricstest.Series(metric, "namespace", "team-d", "pod", pod, "container", "main", "gpu", gpu, "UUID", "GPU-"+gpu)
	}
	const min = time.Minute
	r := new(metricstest.Recording)
	r.Add(hami("hami_container_device_utilization_ratio", "server"), 0, min, 30, 35, 40)
	r.Add(hami("hami_container_device_utilization_ratio", "sidecar"), 0, min, 1, 1, 1)
	r.Add(hami("hami_vgpu_memory_limit_bytes", "server"), 0, min, 8*gib, 8*gib, 8*gib)
	r.Add(hami("hami_vgpu_memory_limit_bytes", "sidecar"), 0, min, 2*gib, 2*gib, 0)
	r.Add(hami("hami_vgpu_memory_used_bytes", "server"), 0, min, 4*gib, 5*gib, 6*gib)
	r.Add(hami("hami_vgpu_memory_used_bytes", "sidecar"), 0, min, gib, gib, gib)
	r.Add(dcgm("DCGM_FI_DEV_FB_FREE", dcgmPod, "0"), 0, min, 60000, 40000, 20000)
	r.Add(dcgm("DCGM_FI_DEV_FB_FREE", dcgmPod, "1"), 0, min, 80000, 80000, 80000)
	r.Add(dcgm("DCGM_FI_DEV_FB_FREE", dcgmFrac, "2"), 0, min, 40000, 40000, 40000)
	r.Add(dcgm("DCGM_FI_DEV_FB_USED", dcgmPod, "0"), 0, min, 20000, 40000, 60000)
	r.Add(dcgm("DCGM_FI_DEV_FB_USED", dcgmPod, "1"), 0, min, 0, 0, 0)
	r.Add(dcgm("DCGM_FI_DEV_FB_USED", dcgmFrac, "2"), 0, min, 40000, 40000, 40000)
	r.Add(dcgm("DCGM_FI_DEV_GPU_UTIL", dcgmPod, "0"), 0, min, 50, 70, 90)
	r.Add(dcgm("DCGM_FI_DEV_GPU_UTIL", dcgmPod, "1"), 0, min, 0, 0, 10)
	r.Add(dcgm("DCGM_FI_DEV_GPU_UTIL", dcgmFrac, "2"), 0, min, 100, 100, 100)
	r.Add(metricstest.Series("kube_pod_annotations", "namespace", "team-d", "pod", dcgmFrac, "annotation_gpu_fraction", "0.5"), 0, min, 1, 1, 1)
	return r
}

func TestPresets(t *testing.T) {
	r := presetRecording()
	rec := r.Parse(t)
	defaults := preset.Kubex.Mappings()
	named := map[usage.Metric]usage.Mapping{usage.Compute: {Metric: "DCGM_FI_DEV_GPU_UTIL", NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container"}}
	tests := []struct {
		name       string
		preset     preset.Preset
		metrics    map[usage.Metric]usage.Mapping
		containers []string
		workloads  []usage.Ref
		want       string
	}{
		{
			name: "hami: exported labels, memory used of the limit summed over containers", preset: preset.HAMi,
			workloads: []usage.Ref{metricstest.Deployment("team-h", "chat")},
			// Memory: (4+1)/(8+2), (5+1)/(8+2), and the sidecar's limit of
			// 0 at 120 s makes that sum 6+1 of 8: the limits are summed
			// before dividing.
			want: `team-h/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 31@0 36@60 41@120
    memory (busiest device): 50@0 60@60 87.5@120
warning: metric hami_container_device_utilization_ratio (compute): took exported_namespace, exported_pod for namespace, pod (the scrape renamed the exporter's labels: a ServiceMonitor without honorLabels: true)
warning: metric hami_vgpu_memory_used_bytes (memory): took exported_namespace, exported_pod for namespace, pod (the scrape renamed the exporter's labels: a ServiceMonitor without honorLabels: true)
`,
		},
		{
			name: "hami: one container", preset: preset.HAMi, containers: []string{"server"},
			workloads: []usage.Ref{metricstest.Deployment("team-h", "chat")},
			want: `team-h/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 30@0 35@60 40@120
    memory (busiest device): 50@0 62.5@60 75@120
warning: metric hami_container_device_utilization_ratio (compute): took exported_namespace, exported_pod, exported_container for namespace, pod, container (the scrape renamed the exporter's labels: a ServiceMonitor without honorLabels: true)
warning: metric hami_vgpu_memory_used_bytes (memory): took exported_namespace, exported_pod, exported_container for namespace, pod, container (the scrape renamed the exporter's labels: a ServiceMonitor without honorLabels: true)
`,
		},
		{
			name: "dcgm: two GPUs of one pod; a pod holding a gpu-fraction is not read", preset: preset.DCGM,
			workloads: []usage.Ref{metricstest.Deployment("team-d", "train"), metricstest.Deployment("team-d", "embed")},
			// Each device on its own, the busiest deciding, never the two
			// added up: compute 50, 70, 90 (GPU 0; GPU 1 reads 0, 0,
			// 10); memory 20000/(20000+60000) = 25%, 50%, 75% on GPU 0,
			// of which GPU 1 uses none.
			want: `team-d/Deployment/train step=1m0s liveKnown=false
  train-5f6d7b8c9-bcdfg live=false start=-
    compute (busiest device): 50@0 70@60 90@120
    memory (busiest device): 25@0 50@60 75@120
warning: team-d/Deployment/embed: pod embed-6c8f9d7b5-m4n5p holds a gpu-fraction of 0.5, and DCGM cannot tell a shared GPU's pods apart: its usage is not read (use the hami or kubex preset)
`,
		},
		{
			name: "kubex is the default: nothing of the others is read", preset: preset.Kubex,
			workloads: []usage.Ref{metricstest.Deployment("team-h", "chat"), metricstest.Deployment("team-d", "train")},
			want: `warning: metric kubex_gpu_container_sm_utilization_percent (compute) is not in test.om
warning: metric kubex_gpu_container_memory_footprint_percent (memory) is not in test.om
`,
		},
		{
			name: "a policy that names its series keeps them", preset: preset.HAMi, metrics: named,
			workloads: []usage.Ref{metricstest.Deployment("team-d", "train")},
			want: `team-d/Deployment/train step=1m0s liveKnown=false
  train-5f6d7b8c9-bcdfg live=false start=-
    compute (busiest device): 50@0 70@60 90@120
`,
		},
	}
	// The server's half runs where its tools are (always under
	// RECOMMENDER_TEST_STRICT), and the recording's half everywhere.
	var prom *prometheus.Source
	if haveTools("prometheus", "promtool") {
		path := filepath.Join(t.TempDir(), "presets.om")
		require.NoError(t, os.WriteFile(path, []byte(r.String()), 0o644))
		var err error
		prom, err = prometheus.New(prometheus.Config{URL: testenv.StartPrometheus(t, path).URL, Timeout: 5 * time.Second})
		require.NoError(t, err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := tt.metrics
			if ms == nil {
				ms = defaults
			}
			q := usage.Query{At: metricstest.T0.Add(2 * time.Minute), Lookback: time.Hour, Metrics: ms, Containers: tt.containers, Workloads: tt.workloads}
			res, err := preset.Wrap(rec, tt.preset).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Render(res))
			if prom == nil {
				return
			}
			got, err := preset.Wrap(prom, tt.preset).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, metricstest.Workloads(res), metricstest.Workloads(got), "the server agrees")
		})
	}
}

func TestParsePreset(t *testing.T) {
	for _, p := range preset.All() {
		got, err := preset.Parse(string(p))
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	_, err := preset.Parse("nvidia")
	require.EqualError(t, err, `unknown metrics preset "nvidia": use kubex, hami, dcgm`)
}

// haveTools reports whether the tools are on PATH, or their absence must
// fail the test (testenv.StrictEnv).
func haveTools(names ...string) bool {
	if os.Getenv(testenv.StrictEnv) != "" {
		return true
	}
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			return false
		}
	}
	return true
}

// TestHAMiBeforeV29: HAMi v2.8 and earlier wrote other names, with the
// labels podnamespace, podname and ctrname (HAMi v2.8.3,
// cmd/vGPUmonitor/metrics.go); where only those are in the store the hami
// preset reads them, and says so.
func TestHAMiBeforeV29(t *testing.T) {
	legacy := func(metric string) string {
		return metricstest.Series(metric, "podnamespace", "team-h", "podname", hamiPod, "ctrname", "server",
			"vdeviceid", "0", "deviceuuid", "GPU-1")
	}
	const min = time.Minute
	r := new(metricstest.Recording).
		Add(legacy("Device_utilization_desc_of_container"), 0, min, 30, 35, 40).
		Add(legacy("vGPU_device_memory_usage_in_bytes"), 0, min, 4*gib, 5*gib, 6*gib).
		Add(legacy("vGPU_device_memory_limit_in_bytes"), 0, min, 8*gib, 8*gib, 8*gib)
	q := usage.Query{At: metricstest.T0.Add(2 * time.Minute), Lookback: time.Hour, Metrics: preset.Kubex.Mappings(),
		Workloads: []usage.Ref{metricstest.Deployment("team-h", "chat")}}
	res, err := preset.Wrap(r.Parse(t), preset.HAMi).Usage(context.Background(), q)
	require.NoError(t, err)
	require.Equal(t, `team-h/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 30@0 35@60 40@120
    memory (busiest device): 50@0 62.5@60 75@120
warning: compute read from Device_utilization_desc_of_container: HAMi before v2.9 (or --legacy-metrics): its current series are not in the store
warning: memory read from vGPU_device_memory_usage_in_bytes: HAMi before v2.9 (or --legacy-metrics): its current series are not in the store
`, metricstest.Render(res))
}

// TestNamedSeriesWin: a policy that names Kubex's series keeps them under
// another preset (here hami, over a store holding both exporters'), in
// either form Kubex's exporter writes (the counter's rate where the gauge
// is missing); the same series unnamed, the policies' default, is the
// preset's to map.
func TestNamedSeriesWin(t *testing.T) {
	kubex := func(metric string) string {
		return metricstest.Series(metric, "namespace", "team-h", "pod", hamiPod, "container", "server", "gpu_uuid", "GPU-1")
	}
	hami := func(metric string) string {
		return metricstest.Series(metric, "namespace", "team-h", "pod", hamiPod, "container", "server", "device_uuid", "GPU-1")
	}
	const min = time.Minute
	r := new(metricstest.Recording).
		Add(hami("hami_container_device_utilization_ratio"), 0, min, 30, 35, 40).
		Add(hami("hami_vgpu_memory_used_bytes"), 0, min, 4*gib, 5*gib, 6*gib).
		Add(hami("hami_vgpu_memory_limit_bytes"), 0, min, 8*gib, 8*gib, 8*gib).
		// 90 and 95 percent of a GPU, as percent-seconds
		Add(kubex("kubex_gpu_container_sm_utilization_percent_seconds_total"), 0, min, 0, 5400, 11100).
		Add(kubex("kubex_gpu_container_memory_footprint_percent"), 0, min, 70, 80, 90)
	named := preset.Kubex.Mappings()
	for m, mp := range named {
		mp.DeviceLabel, mp.Named = "", true
		named[m] = mp
	}
	tests := []struct {
		name    string
		metrics map[usage.Metric]usage.Mapping
		want    string
		keeps   []string
	}{
		{name: "named: Kubex's, its counter standing in for the gauge", metrics: named,
			want: `team-h/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 90@60 95@120
    memory (busiest device): 70@0 80@60 90@120
warning: compute read from kubex_gpu_container_sm_utilization_percent_seconds_total: its rate: the exporter's counter, without the gauge kubex_gpu_container_sm_utilization_percent that Kubex's stack records from it
`,
			keeps: []string{"kubex_gpu_container_memory_footprint_percent", "kubex_gpu_container_sm_utilization_percent", "kubex_gpu_container_sm_utilization_percent_seconds_total"}},
		{name: "unnamed: the preset's", metrics: preset.Kubex.Mappings(),
			want: `team-h/Deployment/chat step=1m0s liveKnown=false
  chat-7d9f8c6b5d-x2b4z live=false start=-
    compute (busiest device): 30@0 35@60 40@120
    memory (busiest device): 50@0 62.5@60 75@120
`,
			keeps: []string{"Device_utilization_desc_of_container", "hami_container_device_utilization_ratio", "hami_vgpu_memory_limit_bytes",
				"hami_vgpu_memory_used_bytes", "vGPU_device_memory_limit_in_bytes", "vGPU_device_memory_usage_in_bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := usage.Query{At: metricstest.T0.Add(2 * time.Minute), Lookback: time.Hour, Metrics: tt.metrics,
				Workloads: []usage.Ref{metricstest.Deployment("team-h", "chat")}}
			res, err := preset.Wrap(r.Parse(t), preset.HAMi).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Render(res))
			require.Equal(t, tt.keeps, preset.HAMi.MetricsOf([]usage.Query{q}), "a recording keeps what the query reads")
		})
	}
}
