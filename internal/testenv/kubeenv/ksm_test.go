package kubeenv_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// TestKubeStateMetricsVersion: the version testenv looks for is the one
// hack/kube-state-metrics builds.
func TestKubeStateMetricsVersion(t *testing.T) {
	path := filepath.Join("..", "..", "..", "hack", "kube-state-metrics", "go.mod")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := modfile.Parse(path, b, nil)
	require.NoError(t, err)
	var got string
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kube-state-metrics/v2" {
			got = r.Mod.Version
		}
	}
	require.Equal(t, kubeenv.KubeStateMetricsVersion, got, "%s requires k8s.io/kube-state-metrics/v2", path)
	require.Len(t, f.Tool, 1, "%s builds one tool", path)
	require.Equal(t, "k8s.io/kube-state-metrics/v2", f.Tool[0].Path)
}

// ksmOptions allowlist labels and annotations as kube-state-metrics' docs
// tell users to.
var ksmOptions = kubeenv.KubeStateMetricsOptions{
	LabelsAllowlist:      "pods=[kai.scheduler/queue],deployments=[kai.scheduler/queue],nodes=[*]",
	AnnotationsAllowlist: "pods=[gpu-fraction,gpu-fraction-num-devices,gpu-memory]",
}

// TestKubeStateMetrics: the real kube-state-metrics, against the real API
// server holding a GPU node, a Deployment (one pod running, one evicted)
// owned by an InferenceService, and a StatefulSet, writes the series the
// usage side reads, under its own names; a real Prometheus scraping it
// answers them; and a recording made of its output is one promtool and
// internal/metrics/openmetrics take.
func TestKubeStateMetrics(t *testing.T) {
	kube := kubeenv.StartAPIServer(t)
	if kube == nil {
		return
	}
	kube.CreateNode(t, kubeenv.Node{
		Name:   "gpu-node-a",
		Labels: map[string]string{"nodePool": "a100-pool", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
		GPUs:   8,
	})
	isvc := kubeenv.ObjectRef{APIVersion: "serving.kserve.io/v1beta1", Kind: "InferenceService", Namespace: "serving", Name: "chat", UID: "0d4b6c62-3f4e-4d55-9a51-6a1c2d7f0e11"}
	// Half of each of two GPUs, as KAI shares them; one pod evicted.
	chat := kube.CreateWorkload(t, kubeenv.Workload{
		Kind: "Deployment", Namespace: "serving", Name: "chat-predictor",
		Labels: map[string]string{"kai.scheduler/queue": "serving"},
		Owner:  &isvc,
		Template: kubeenv.PodTemplate{
			Labels:        map[string]string{"kai.scheduler/queue": "serving"},
			Annotations:   map[string]string{"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"},
			Container:     "kserve-container",
			SchedulerName: "kai-scheduler",
		},
		Pods: []kubeenv.PodState{
			{Node: "gpu-node-a"},
			{Node: "gpu-node-a", Phase: kubeenv.PodFailed, Reason: "Evicted"},
		},
	})
	// GPU memory, as KAI takes it.
	embed := kube.CreateWorkload(t, kubeenv.Workload{
		Kind: "StatefulSet", Namespace: "serving", Name: "embed",
		Template: kubeenv.PodTemplate{
			Annotations:   map[string]string{"gpu-memory": "20000"},
			Container:     "tei",
			Image:         "ghcr.io/huggingface/text-embeddings-inference:1.8",
			SchedulerName: "kai-scheduler",
		},
		Pods: []kubeenv.PodState{{Node: "gpu-node-a"}},
	})
	// Whole GPUs, one replica waiting for a node.
	llm := kube.CreateWorkload(t, kubeenv.Workload{
		Kind: "Deployment", Namespace: "batch", Name: "llm",
		Template: kubeenv.PodTemplate{Container: "vllm", GPUs: 2},
		Pods:     []kubeenv.PodState{{Node: "gpu-node-a"}, {Phase: kubeenv.PodPending}},
	})

	ksm := kubeenv.StartKubeStateMetrics(t, kube, ksmOptions)
	if ksm == nil {
		return
	}
	samples := ksm.Samples(t)
	running, evicted := chat.Pods[0].Name, chat.Pods[1].Name
	rs := chat.ReplicaSet.Name
	tests := []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		{name: "pod owned by its ReplicaSet", metric: "kube_pod_owner",
			labels: []string{"pod", running, "owner_kind", "ReplicaSet", "owner_name", rs, "owner_is_controller", "true"}, want: 1},
		{name: "an evicted pod keeps its owner", metric: "kube_pod_owner",
			labels: []string{"pod", evicted, "owner_kind", "ReplicaSet", "owner_name", rs}, want: 1},
		{name: "ReplicaSet owned by its Deployment", metric: "kube_replicaset_owner",
			labels: []string{"replicaset", rs, "owner_kind", "Deployment", "owner_name", "chat-predictor", "owner_is_controller", "true"}, want: 1},
		{name: "Deployment owned by its InferenceService", metric: "kube_deployment_owner",
			labels: []string{"deployment", "chat-predictor", "owner_kind", "InferenceService", "owner_name", "chat"}, want: 1},
		{name: "StatefulSet pod owned by the StatefulSet", metric: "kube_pod_owner",
			labels: []string{"pod", "embed-0", "owner_kind", "StatefulSet", "owner_name", "embed"}, want: 1},
		{name: "running pod", metric: "kube_pod_status_phase",
			labels: []string{"pod", running, "phase", "Running"}, want: 1},
		{name: "evicted pod is Failed", metric: "kube_pod_status_phase",
			labels: []string{"pod", evicted, "phase", "Failed"}, want: 1},
		{name: "evicted pod is not Running", metric: "kube_pod_status_phase",
			labels: []string{"pod", evicted, "phase", "Running"}, want: 0},
		{name: "eviction reason", metric: "kube_pod_status_reason",
			labels: []string{"pod", evicted, "reason", "Evicted"}, want: 1},
		{name: "node label in snake case", metric: "kube_node_labels",
			labels: []string{"node", "gpu-node-a", "label_node_pool", "a100-pool", "label_nvidia_com_gpu_product", "NVIDIA-A100-SXM4-80GB"}, want: 1},
		{name: "pod queue label", metric: "kube_pod_labels",
			labels: []string{"pod", running, "label_kai_scheduler_queue", "serving"}, want: 1},
		{name: "Deployment queue label", metric: "kube_deployment_labels",
			labels: []string{"deployment", "chat-predictor", "label_kai_scheduler_queue", "serving"}, want: 1},
		{name: "gpu-fraction annotations", metric: "kube_pod_annotations",
			labels: []string{"pod", running, "annotation_gpu_fraction", "0.5", "annotation_gpu_fraction_num_devices", "2"}, want: 1},
		{name: "gpu-memory annotation", metric: "kube_pod_annotations",
			labels: []string{"pod", "embed-0", "annotation_gpu_memory", "20000"}, want: 1},
		{name: "node GPU capacity", metric: "kube_node_status_capacity",
			labels: []string{"node", "gpu-node-a", "resource", "nvidia_com_gpu", "unit", "integer"}, want: 8},
		{name: "node GPU allocatable", metric: "kube_node_status_allocatable",
			labels: []string{"node", "gpu-node-a", "resource", "nvidia_com_gpu", "unit", "integer"}, want: 8},
		{name: "container GPU limit", metric: "kube_pod_container_resource_limits",
			labels: []string{"namespace", "batch", "pod", llm.Pods[0].Name, "container", "vllm", "resource", "nvidia_com_gpu", "unit", "integer"}, want: 2},
		{name: "pending pod", metric: "kube_pod_status_phase",
			labels: []string{"namespace", "batch", "pod", llm.Pods[1].Name, "phase", "Pending"}, want: 1},
		{name: "unscheduled pod", metric: "kube_pod_status_unschedulable",
			labels: []string{"namespace", "batch", "pod", llm.Pods[1].Name}, want: 1},
		{name: "pod on its node", metric: "kube_pod_info",
			labels: []string{"pod", "embed-0", "node", "gpu-node-a", "created_by_kind", "StatefulSet"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := samples.Find(tt.metric, tt.labels...)
			require.Len(t, got, 1, "%s%q in:\n%s", tt.metric, tt.labels, samples.Find(tt.metric))
			require.Equal(t, tt.want, got[0].Value, "%v", got[0])
		})
	}
	require.Equal(t, embed.Pods[0].UID, samples.Find("kube_pod_info", "pod", "embed-0")[0].Labels["uid"])

	t.Run("fixture", func(t *testing.T) {
		checkFixture(t, ksm.Scrape(t))
	})

	t.Run("changes after the start", func(t *testing.T) {
		kube.SetPodState(t, embed.Pods[0], kubeenv.PodState{Node: "gpu-node-a", Phase: kubeenv.PodFailed, Reason: "Evicted"})
		late := kube.CreateWorkload(t, kubeenv.Workload{
			Kind: "Deployment", Namespace: "batch", Name: "late",
			Template: kubeenv.PodTemplate{GPUs: 1}, Pods: []kubeenv.PodState{{Node: "gpu-node-a"}},
		})
		s := ksm.Sync(t)
		require.Len(t, s.Find("kube_pod_status_phase", "pod", "embed-0", "phase", "Failed"), 1)
		require.Equal(t, 1.0, s.Find("kube_pod_status_phase", "pod", "embed-0", "phase", "Failed")[0].Value)
		require.Len(t, s.Find("kube_pod_owner", "pod", late.Pods[0].Name, "owner_name", late.ReplicaSet.Name), 1)
	})

	t.Run("scraped by Prometheus", func(t *testing.T) {
		prom := testenv.StartScrapingPrometheus(t, ksm.Addr)
		if prom == nil {
			return
		}
		q := url.Values{"query": {`kube_pod_owner{namespace="serving",owner_kind="ReplicaSet"}`}}
		var result []struct {
			Metric map[string]string `json:"metric"`
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(result) < 2 {
			require.True(t, time.Now().Before(deadline), "Prometheus has no kube_pod_owner after 30s:\n%s", prom.Log())
			time.Sleep(200 * time.Millisecond)
			resp, err := http.Get(prom.URL + "/api/v1/query?" + q.Encode())
			require.NoError(t, err)
			var r struct {
				Data struct {
					Result json.RawMessage `json:"result"`
				} `json:"data"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
			resp.Body.Close()
			require.NoError(t, json.Unmarshal(r.Data.Result, &result))
		}
		pods := map[string]string{}
		for _, r := range result {
			require.Equal(t, "serving", r.Metric["namespace"])
			pods[r.Metric["pod"]] = r.Metric["owner_name"]
		}
		require.Equal(t, map[string]string{running: rs, evicted: rs}, pods)
	})

	t.Run("recorded", func(t *testing.T) {
		at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		rec := ksm.Recording(t, at.Add(-time.Minute), at)
		file := filepath.Join(t.TempDir(), "ksm.om")
		require.NoError(t, os.WriteFile(file, rec, 0o600))
		_, err := openmetrics.ParseRecorded(bytes.NewReader(rec), file)
		require.NoError(t, err)
		prom := testenv.StartPrometheus(t, file)
		if prom == nil {
			return
		}
		q := url.Values{"query": {`kube_node_labels`}, "time": {at.Format(time.RFC3339)}}
		resp, err := http.Get(prom.URL + "/api/v1/query?" + q.Encode())
		require.NoError(t, err)
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		require.Len(t, r.Data.Result, 1)
		require.Equal(t, "a100-pool", r.Data.Result[0].Metric["label_node_pool"])
	})
}

var update = flag.Bool("update", false, "rewrite testdata/ksm-"+kubeenv.KubeStateMetricsVersion+".prom from a fresh scrape")

// ksmFixture is one real scrape of kube-state-metrics, kept for people to
// read and for tests that want its shape without running it.
var ksmFixture = filepath.Join("testdata", "ksm-"+kubeenv.KubeStateMetricsVersion+".prom")

// checkFixture holds the committed scrape to a fresh one: the same series,
// names and labels, with the labels that differ from run to run (uids,
// container IDs) and the values aside. -update rewrites it.
func checkFixture(t *testing.T, scrape []byte) {
	if *update {
		header := fmt.Sprintf(`# One scrape of kube-state-metrics %[1]s (k8s.io/kube-state-metrics/v2, built from
# hack/kube-state-metrics by scripts/install-test-deps.sh), a plain GET of /metrics
# (the Prometheus text format), byte for byte, taken on %[2]s by
#   go test ./internal/testenv/kubeenv -run 'TestKubeStateMetrics$' -update
# against kube-apiserver %[3]s holding what TestKubeStateMetrics creates, with
#   --resources=%[4]s
#   --metric-labels-allowlist=%[5]s
#   --metric-annotations-allowlist=%[6]s
# uids, container IDs and timestamps change from run to run; TestKubeStateMetrics
# checks that a fresh scrape has these series otherwise.
`, kubeenv.KubeStateMetricsVersion, time.Now().UTC().Format("2006-01-02"), kubeenv.APIServerVersion,
			strings.Join(kubeenv.DefaultKubeStateMetricsResources(), ","), ksmOptions.LabelsAllowlist, ksmOptions.AnnotationsAllowlist)
		require.NoError(t, os.WriteFile(ksmFixture, append([]byte(header), scrape...), 0o644))
	}
	b, err := os.ReadFile(ksmFixture)
	require.NoError(t, err)
	want, err := testenv.ParseText(b)
	require.NoError(t, err)
	got, err := testenv.ParseText(scrape)
	require.NoError(t, err)
	require.Equal(t, seriesShape(want), seriesShape(got), "%s is not what kube-state-metrics %s writes now: run this test with -update", ksmFixture, kubeenv.KubeStateMetricsVersion)
}

// seriesShape lists the series of s without their values, uids and
// container IDs.
func seriesShape(s testenv.Samples) []string {
	var out []string
	for _, x := range s {
		x.Value = 0
		for _, l := range []string{"uid", "container_id"} {
			if _, ok := x.Labels[l]; ok {
				x.Labels[l] = "*"
			}
		}
		out = append(out, x.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}
