package metricstest

import (
	"crypto/sha256"
	"fmt"
	"time"
)

// The series below are shaped as the exporters write them. No GPU runs
// here, so their own code cannot; each shape is taken from the exporter's
// metric definitions, cited where it is written.

// KubexContainer is one container of a pod as Kubex's gpu-process-exporter
// sees it.
type KubexContainer struct {
	Node, Namespace, Pod, Container string
	// KAI says whether KAI's annotations give the pod its share
	// (gpu_allocation_type KaiScheduler) rather than nvidia.com/gpu
	// limits (K8sResource).
	KAI bool
}

// Kubex's metric names (densify-dev/gpu-process-exporter @5cd0362,
// pkg/prometheus/prometheus.go): memory is a gauge in percent of the
// container's share of the device; SM use is a counter of percent-seconds,
// which Kubex's Prometheus stack records as the gauge SM
// (densify-dev/helm-charts, charts/kubex-automation-stack/values.yaml,
// rate over 1m).
const (
	KubexMemory    = "kubex_gpu_container_memory_footprint_percent"
	KubexSMCounter = SM + "_seconds_total"
)

// KubexSeries is the series of metric for container c on its device-th
// GPU, with the labels the exporter writes, in its order: node,
// namespace, pod, container, container_id, gpu_allocation_type, then
// gpu_uuid and gpu_model for a per-device metric (pkg/prometheus/
// prometheus.go @5cd0362: the container labels and the device labels).
func KubexSeries(metric string, c KubexContainer, device int) string {
	return metric + "{" + KubexLabels(c, device) + "}"
}

// KubexLabels are the labels of KubexSeries, as a file writes them
// between braces.
func KubexLabels(c KubexContainer, device int) string {
	alloc := "K8sResource"
	if c.KAI {
		alloc = "KaiScheduler"
	}
	s := Series("", "node", c.Node, "namespace", c.Namespace, "pod", c.Pod, "container", c.Container,
		"container_id", ContainerID(c.Pod+"/"+c.Container), "gpu_allocation_type", alloc,
		"gpu_uuid", GPUUUID(c.Node, device), "gpu_model", "NVIDIA A100-SXM4-80GB")
	return s[1 : len(s)-1]
}

// PodUID is a pod's uid as the API server writes it (a UUID), made from
// its name, for the uid label kube-state-metrics puts on every pod series.
func PodUID(namespace, pod string) string {
	h := sha256.Sum256([]byte(namespace + "/" + pod))
	h[6] = h[6]&0x0f | 0x40 // version 4, as the API server's are
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// GPUUUID is a GPU's UUID as NVML writes it (GPU-8-4-4-4-12 hex digits),
// made from its node and index so that a test's devices are stable.
func GPUUUID(node string, index int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%d", node, index))
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// ContainerID is a container's ID as the kubelet reports it from
// containerd: the runtime's scheme and 64 hex digits.
func ContainerID(name string) string {
	return fmt.Sprintf("containerd://%x", sha256.Sum256([]byte(name)))
}

// AddKubexCounter writes the SM counter of a container's device from the
// percent values a gauge would have, one a step from start: the exporter
// adds each process's SM percent times the seconds since its last poll,
// so the counter grows by value × step over each step
// (pkg/nvml/metrics.go @5cd0362). The counter starts one step before
// start, so that its rate has a value at every time the gauge has one.
func (r *Recording) AddKubexCounter(series string, start, step time.Duration, values ...float64) *Recording {
	total := 1000.0 // a counter that ran before the recording
	counts := []any{total}
	for _, v := range values {
		total += v * step.Seconds()
		counts = append(counts, total)
	}
	return r.Add(series, start-step, step, counts...)
}
