package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// fleetPod is a pod of the fleet pool: the quickstart recording's own
// pod names, so that its kube-state-metrics owner series name their
// workloads.
type fleetPod struct {
	deployment, rs, pod, node, fraction string
	whole                               int64
}

// The fleet pool, worked by hand. The plan upsizes chat (2 replicas) from
// 0.5 to 0.72 and translate from 0.25 to 0.32. Placed as KAI would pack
// them (largest first, tightest device):
//
//	gpu-a/0 asr-whisper 1 GPU          free 0
//	gpu-a/1 chat-…-x2k4q 0.5, ocr 0.2  free 0.3
//	gpu-b/0 summarize 0.6, embed 0.4   free 0
//	gpu-b/1 chat-…-p7w9z 0.5           free 0.5
//	gpu-c/0 rerank 0.3, translate 0.25 free 0.45
//
// chat's rollout (maxSurge 25% of 2 → 1, maxUnavailable → 0) wants a
// surge pod of 0.72: no device has it, so it stalls at 0 of 2. With
// maxSurge 0 and maxUnavailable 1, p7w9z leaves gpu-b/1 (1.0 free) and
// its replacement fits; then x2k4q leaves gpu-a/1 (0.8 free) and its
// replacement fits. translate's surge pod of 0.32 fits gpu-c/0 (0.45).
//
// Consolidation: 5 GPUs in use; 3.75 GPUs of share need 4. The plan also
// scales asr-whisper back to 0.24 and summarize to 0.33: 3.23 GPUs, still
// 4. No node is under 50% once they merge (gpu-a 1.16 of 2, gpu-b 1.45
// of 2, gpu-c 0.62 of 1): no candidate, 5 GPUs in use after.
var fleetPods = []fleetPod{
	{deployment: "asr-whisper", rs: "asr-whisper-9f5c7d8b4", pod: "asr-whisper-9f5c7d8b4-zp4nb", node: "gpu-a", whole: 1},
	{deployment: "chat", rs: "chat-7c9d8b5f6d", pod: "chat-7c9d8b5f6d-x2k4q", node: "gpu-a", fraction: "0.5"},
	{deployment: "chat", rs: "chat-7c9d8b5f6d", pod: "chat-7c9d8b5f6d-p7w9z", node: "gpu-b", fraction: "0.5"},
	{deployment: "ocr", rs: "ocr-7b5d6c8f9", pod: "ocr-7b5d6c8f9-kq9xd", node: "gpu-a", fraction: "0.2"},
	{deployment: "summarize", rs: "summarize-6b8f9c7d5", pod: "summarize-6b8f9c7d5-t4hxm", node: "gpu-b", fraction: "0.6"},
	{deployment: "embed", rs: "embed-5d7c8f9b6", pod: "embed-5d7c8f9b6-mq2zr", node: "gpu-b", fraction: "0.4"},
	{deployment: "rerank", rs: "rerank-84f6d9c7b", pod: "rerank-84f6d9c7b-w5lks", node: "gpu-c", fraction: "0.3"},
	{deployment: "translate", rs: "translate-6c4d9f7b8", pod: "translate-6c4d9f7b8-vr2hg", node: "gpu-c", fraction: "0.25"},
}

var fleetNodes = []struct {
	name string
	gpus int64
}{{"gpu-a", 2}, {"gpu-b", 2}, {"gpu-c", 1}}

// fleetPool makes the fleet pool on the API server, as the controllers,
// the kubelets and GPU feature discovery would have.
func fleetPool(t *testing.T, s *kubeenv.APIServer) {
	t.Helper()
	s.Apply(t, []byte(reportReader))
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig(t, kubeenv.Admin))
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	for _, n := range fleetNodes {
		node, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
			Labels: map[string]string{"pool": "inference", "nvidia.com/gpu.product": "NVIDIA-L4"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		node.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n.gpus, resource.DecimalSI)}
		_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	yes := true
	owned := func(kind, name string, uid metav1.Object) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid.GetUID(), Controller: &yes}}
	}
	rss := map[string]*appsv1.ReplicaSet{}
	for _, p := range fleetPods {
		labels := map[string]string{"app": p.deployment}
		if rss[p.rs] == nil {
			tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			sel := &metav1.LabelSelector{MatchLabels: labels}
			spec := appsv1.DeploymentSpec{Selector: sel, Template: tmpl}
			if p.deployment == "chat" {
				two := int32(2)
				spec.Replicas = &two
			}
			dep, err := kube.AppsV1().Deployments("inference").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: p.deployment}, Spec: spec}, metav1.CreateOptions{})
			require.NoError(t, err)
			rss[p.rs], err = kube.AppsV1().ReplicaSets("inference").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: p.rs,
				OwnerReferences: owned("Deployment", p.deployment, dep)}, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.pod, Labels: labels, OwnerReferences: owned("ReplicaSet", p.rs, rss[p.rs])},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if p.fraction != "" {
			pod.Annotations = map[string]string{"gpu-fraction": p.fraction}
		} else {
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(p.whole, resource.DecimalSI)}
		}
		_, err = kube.CoreV1().Pods("inference").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// quickstartEnd is the last sample of the quickstart recording: the
// plan's evaluation time.
const quickstartEnd = 1796040000

// fleetRecording is the quickstart recording with what kube-state-metrics
// says of the fleet pool, and an hour of HAMi's per-device series, each
// a sample a minute up to the recording's end. GPU-d96e6aec-dbd1-146c-c9db-1836fe5d375c (gpu-a's device 1)
// is saturated (95%) in minutes 10 to 51 of the hour, 42 minutes; then
// chat's pod there uses 0.61 of it (two containers, 0.41 and 0.20)
// against its share of 0.50, at 3 of its 4 GiB, and ocr 0.15 of its
// 0.20. GPU-b1 peaks at 80%: not saturated.
func fleetRecording(t *testing.T) string {
	t.Helper()
	base, err := os.ReadFile(quickstartMetrics)
	require.NoError(t, err)
	var b strings.Builder
	family := func(name string, series ...string) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		for _, s := range series {
			b.WriteString(s)
		}
	}
	// hour writes a sample a minute for an hour: before for minutes
	// before 10, during for 10 to 51, after for the rest.
	hour := func(series string, before, during, after float64) string {
		var s strings.Builder
		for m := range 60 {
			v := before
			if m >= 10 && m < 52 {
				v = during
			} else if m >= 52 {
				v = after
			}
			fmt.Fprintf(&s, "%s %g %d\n", series, v, quickstartEnd-(59-m)*60)
		}
		return s.String()
	}
	last := func(series string, v float64) string { return hour(series, v, v, v) }

	var capacity, labels []string
	for _, n := range fleetNodes {
		capacity = append(capacity, last(fmt.Sprintf(`kube_node_status_capacity{node="%s",resource="nvidia_com_gpu",unit="integer"}`, n.name), float64(n.gpus)))
		labels = append(labels, last(fmt.Sprintf(`kube_node_labels{label_nvidia_com_gpu_product="NVIDIA-L4",label_pool="inference",node="%s"}`, n.name), 1))
	}
	family("kube_node_status_capacity", capacity...)
	family("kube_node_labels", labels...)
	var info, annotations, limits []string
	for _, p := range fleetPods {
		uid := metricstest.PodUID("inference", p.pod)
		info = append(info, last(fmt.Sprintf(`kube_pod_info{namespace="inference",pod="%s",uid="%s",host_ip="",pod_ip="",node="%s",created_by_kind="ReplicaSet",created_by_name="%s",priority_class="",host_network="false"}`,
			p.pod, uid, p.node, p.pod[:strings.LastIndexByte(p.pod, '-')]), 1))
		ann := ""
		if p.fraction != "" {
			ann = fmt.Sprintf(`annotation_gpu_fraction="%s",`, p.fraction)
		} else {
			limits = append(limits, last(fmt.Sprintf(`kube_pod_container_resource_limits{namespace="inference",pod="%s",uid="%s",container="c",node="%s",resource="nvidia_com_gpu",unit="integer"}`, p.pod, uid, p.node), float64(p.whole)))
		}
		annotations = append(annotations, last(fmt.Sprintf(`kube_pod_annotations{namespace="inference",pod="%s",uid="%s"%s}`, p.pod, uid, strings.TrimSuffix(","+ann, ",")), 1))
	}
	family("kube_pod_info", info...)
	family("kube_pod_annotations", annotations...)
	family("kube_pod_container_resource_limits", limits...)
	var replicas, surge, unavailable []string
	for _, d := range []string{"asr-whisper", "chat", "embed", "ocr", "rerank", "summarize", "translate"} {
		n := 1.0
		if d == "chat" {
			n = 2
		}
		replicas = append(replicas, last(fmt.Sprintf(`kube_deployment_spec_replicas{deployment="%s",namespace="inference"}`, d), n))
		surge = append(surge, last(fmt.Sprintf(`kube_deployment_spec_strategy_rollingupdate_max_surge{deployment="%s",namespace="inference"}`, d), 1))
		unavailable = append(unavailable, last(fmt.Sprintf(`kube_deployment_spec_strategy_rollingupdate_max_unavailable{deployment="%s",namespace="inference"}`, d), 0))
	}
	family("kube_deployment_spec_replicas", replicas...)
	family("kube_deployment_spec_strategy_rollingupdate_max_surge", surge...)
	family("kube_deployment_spec_strategy_rollingupdate_max_unavailable", unavailable...)

	// HAMi v2.10's series (cmd/vGPUmonitor/metrics.go) as its chart's
	// ServiceMonitor, without honorLabels, hands them to Prometheus: the
	// container's own namespace, pod and container arrive as exported_*,
	// beside the device plugin pod's (prometheus-operator's target
	// labels); a host series names its node and device.
	uuidA, uuidB := metricstest.GPUUUID("gpu-a", 0), metricstest.GPUUUID("gpu-b", 0)
	target := func(node string) string {
		return fmt.Sprintf(`container="vgpu-monitor",endpoint="monitorport",instance="%s:9394",job="hami-device-plugin-monitor",namespace="kube-system",pod="hami-device-plugin-%s",service="hami-device-plugin-monitor"`,
			map[string]string{"gpu-a": "10.0.1.11", "gpu-b": "10.0.1.12"}[node], map[string]string{"gpu-a": "8x7kq", "gpu-b": "m2p4z"}[node])
	}
	host := func(node, uuid string) string {
		return fmt.Sprintf(`hami_host_gpu_utilization_ratio{%s,device_index="0",device_type="NVIDIA-L4",device_uuid="%s",node="%s"}`, target(node), uuid, node)
	}
	family("hami_host_gpu_utilization_ratio",
		hour(host("gpu-a", uuidA), 50, 95, 60),
		hour(host("gpu-b", uuidB), 50, 80, 60))
	ctr := func(pod, c, uuid string) string {
		node := "gpu-a"
		if uuid == uuidB {
			node = "gpu-b"
		}
		return fmt.Sprintf(`{%s,device_uuid="%s",exported_container="%s",exported_namespace="inference",exported_pod="%s",vdevice_index="0"}`, target(node), uuid, c, pod)
	}
	family("hami_container_device_utilization_ratio",
		hour("hami_container_device_utilization_ratio"+ctr("chat-7c9d8b5f6d-x2k4q", "vllm", uuidA), 20, 41, 20),
		hour("hami_container_device_utilization_ratio"+ctr("chat-7c9d8b5f6d-x2k4q", "sidecar", uuidA), 5, 20, 5),
		hour("hami_container_device_utilization_ratio"+ctr("ocr-7b5d6c8f9-kq9xd", "main", uuidA), 10, 15, 10),
		hour("hami_container_device_utilization_ratio"+ctr("chat-7c9d8b5f6d-p7w9z", "vllm", uuidB), 40, 60, 40))
	gib := float64(1 << 30)
	family("hami_vgpu_memory_used_bytes",
		hour("hami_vgpu_memory_used_bytes"+ctr("chat-7c9d8b5f6d-x2k4q", "vllm", uuidA), 2*gib, 2.5*gib, 2*gib),
		hour("hami_vgpu_memory_used_bytes"+ctr("chat-7c9d8b5f6d-x2k4q", "sidecar", uuidA), 0.5*gib, 0.5*gib, 0.5*gib))
	family("hami_vgpu_memory_limit_bytes",
		last("hami_vgpu_memory_limit_bytes"+ctr("chat-7c9d8b5f6d-x2k4q", "vllm", uuidA), 3*gib),
		last("hami_vgpu_memory_limit_bytes"+ctr("chat-7c9d8b5f6d-x2k4q", "sidecar", uuidA), 1*gib))
	b.WriteString("# EOF\n")
	// examples/fleet keeps the cluster's series for `make demo-fleet`,
	// which appends them to the quickstart's recording as done here.
	const cluster = "../../examples/fleet/cluster.om"
	if *update {
		require.NoError(t, os.WriteFile(cluster, []byte(b.String()), 0o644))
	}
	kept, err := os.ReadFile(cluster)
	require.NoError(t, err, "run with -update to create %s", cluster)
	require.Equal(t, b.String(), string(kept), "examples/fleet/cluster.om is what this test writes: run with -update")
	path := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(path, []byte(strings.TrimSuffix(string(base), "# EOF\n")+b.String()), 0o644))
	return path
}

// TestReportFleet is `recommender report` on the fleet pool: the rollout
// room and the noisy neighbours worked by hand above, read from the API
// server (whose user may only get and list) and, the same, from
// kube-state-metrics' series. The golden holds the whole table; the
// same findings in a run's pull requests are internal/run's
// TestRunFleetFindings, from examples/fleet/cluster.om, which this test
// writes.
func TestReportFleet(t *testing.T) {
	s := kubeenv.StartAPIServer(t, kubeenv.User{Name: "reader"})
	if s == nil {
		return
	}
	fleetPool(t, s)
	repo := withPool(t)
	before := treeHash(t, repo)
	metricsFile := fleetRecording(t)

	out, errOut, code := cli(t, "report", "--repo", repo, "--metrics-file", metricsFile, "--kubeconfig", s.Kubeconfig(t, "reader"))
	require.Equal(t, exitOK, code, errOut)
	golden(t, "fleet-report.txt", []byte(out))
	for _, want := range []string{
		"rollout room: the rollout of chat to 0.72 stalls after 0 of 2 new pods: no GPU of the pool has 0.72 free while the old pods still hold theirs; maxSurge: 0, maxUnavailable: 1 fits\n",
		"rollout room: the rollout of translate to 0.32 fits: with maxSurge 1 and maxUnavailable 0 every new pod finds room while the old ones still hold theirs\n",
		"saturated: GPU GPU-d96e6aec-dbd1-146c-c9db-1836fe5d375c on gpu-a for 42 minutes: inference/chat-7c9d8b5f6d-x2k4q 0.61 of 0.50 (0.11 over), inference/ocr-7b5d6c8f9-kq9xd 0.15 of 0.20\n",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "GPU-b1", "GPU-b1 was never saturated")

	t.Run("json", func(t *testing.T) {
		out, errOut, code := cli(t, "report", "--repo", repo, "--metrics-file", metricsFile, "--kubeconfig", s.Kubeconfig(t, "reader"), "-o", "json")
		require.Equal(t, exitOK, code, errOut)
		golden(t, "fleet-report.json", []byte(out))
	})

	// The dashboard's body lists the same findings, by workload.
	t.Run("markdown", func(t *testing.T) {
		out, errOut, code := cli(t, "report", "--repo", repo, "--metrics-file", metricsFile, "--kubeconfig", s.Kubeconfig(t, "reader"), "-o", "markdown")
		require.Equal(t, exitOK, code, errOut)
		_, findings, ok := strings.Cut(out, "\n## Fleet findings\n\n")
		require.True(t, ok, out)
		require.Contains(t, findings, "- inference/Deployment/chat: the rollout of chat to 0.72 stalls after 0 of 2 new pods")
		require.Contains(t, findings, "maxSurge: 0, maxUnavailable: 1")
		require.Contains(t, findings, "- inference/Deployment/chat: while GPU GPU-d96e6aec-dbd1-146c-c9db-1836fe5d375c on gpu-a was saturated for 42 minutes")
		require.NotContains(t, findings, "translate", "translate's rollout fits: nothing to say")
	})

	t.Run("from kube-state-metrics", func(t *testing.T) {
		fromSeries, errOut, code := cli(t, "report", "--repo", repo, "--metrics-file", metricsFile, "--placement", "metrics")
		require.Equal(t, exitOK, code, errOut)
		require.Equal(t, out, fromSeries)
	})
	require.Equal(t, before, treeHash(t, repo), "report must write nothing")
}

// TestReportPlacementFlag: where the placement comes from is checked
// before anything is read.
func TestReportPlacementFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "an unknown source", args: []string{"--placement", "etcd"}, want: "invalid `--placement` \"etcd\": use cluster or metrics"},
		{name: "metrics with a kubeconfig", args: []string{"--placement", "metrics", "--kubeconfig", "k"},
			want: "`--kubeconfig` reads the cluster: it does not go with `--placement metrics`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"report", "--repo", t.TempDir(), "--metrics-file", quickstartMetrics}, tt.args...)
			_, errOut, code := cli(t, args...)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut, tt.want)
		})
	}
}

func TestRunFleetFindingsFlag(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  string
	}{
		{name: "an unknown source", value: "etcd", want: "invalid `--fleet-findings` \"etcd\": use off, cluster or metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := cli(t, "run", "--scm", "local", "--repo", t.TempDir(), "--metrics-file", quickstartMetrics, "--fleet-findings", tt.value)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut, tt.want)
		})
	}
}
