package patcher

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// KAI annotation and label keys (KAI-Scheduler pkg/common/constants).
const (
	annFraction      = "gpu-fraction"
	annMemory        = "gpu-memory"
	annNumDevices    = "gpu-fraction-num-devices"
	annContainerName = "gpu-fraction-container-name"
	labelQueue       = "kai.scheduler/queue"
	resourceGPU      = "nvidia.com/gpu"
)

// kindSpec says how to read one workload kind: which API groups it lives
// in and where its pod template is. Adding StatefulSet, DaemonSet or Job is
// one more case in kindSpecFor.
type kindSpec struct {
	groups   []string
	template []string
}

func kindSpecFor(kind string) (kindSpec, bool) {
	switch kind {
	case "Deployment":
		return kindSpec{groups: []string{"apps", "extensions"}, template: []string{"spec", "template"}}, true
	}
	return kindSpec{}, false
}

func (k kindSpec) accepts(apiVersion string) bool {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return false
	}
	for _, want := range k.groups {
		if g == want {
			return true
		}
	}
	return false
}

// identify returns the workload identity of a document root, ok=false when
// it is not a workload kind we read.
func identify(root *yaml.Node) (usage.Ref, kindSpec, bool) {
	if root == nil || root.Kind != yaml.MappingNode {
		return usage.Ref{}, kindSpec{}, false
	}
	kind := str(root, "kind")
	spec, ok := kindSpecFor(kind)
	if !ok || !spec.accepts(str(root, "apiVersion")) {
		return usage.Ref{}, kindSpec{}, false
	}
	md := lookup(root, "metadata")
	return usage.Ref{Kind: kind, Namespace: str(md, "namespace"), Name: str(md, "name")}, spec, true
}

// readWorkload builds a Workload from a document root that identify
// accepted.
func readWorkload(root *yaml.Node, ref usage.Ref, spec kindSpec) Workload {
	w := Workload{Ref: ref}
	w.Labels = stringMap(lookup(root, "metadata", "labels"))
	tmpl := lookup(root, spec.template...)
	w.PodLabels = stringMap(lookup(tmpl, "metadata", "labels"))
	w.PodAnnotations = stringMap(lookup(tmpl, "metadata", "annotations"))
	pod := lookup(tmpl, "spec")
	w.SchedulerName = str(pod, "schedulerName")
	w.Queue = w.Labels[labelQueue]
	if w.Queue == "" {
		w.Queue = w.PodLabels[labelQueue]
	}

	w.GPU.FractionText = w.PodAnnotations[annFraction]
	if f, err := strconv.ParseFloat(strings.TrimSpace(w.GPU.FractionText), 64); err == nil && f > 0 && f < 1 && !math.IsNaN(f) {
		w.GPU.Fraction = f
	}
	if m, err := strconv.ParseInt(strings.TrimSpace(w.PodAnnotations[annMemory]), 10, 64); err == nil && m > 0 {
		w.GPU.MemoryMiB = m
	}
	w.GPU.NumDevices = 1
	if n, err := strconv.Atoi(strings.TrimSpace(w.PodAnnotations[annNumDevices])); err == nil && n > 0 {
		w.GPU.NumDevices = n
	}

	for _, c := range containerNodes(pod, "containers") {
		for _, list := range []string{"limits", "requests"} {
			if n, err := strconv.ParseInt(strings.TrimSpace(str(lookup(c, "resources", list), resourceGPU)), 10, 64); err == nil && n > w.GPU.Whole {
				w.GPU.Whole = n
			}
		}
		v := scanVLLM(c)
		w.Containers = append(w.Containers, Container{
			Name:                 str(c, "name"),
			Image:                str(c, "image"),
			VLLM:                 v.isVLLM(),
			GPUMemoryUtilization: v.current(),
			KVCacheMemoryBytes:   v.kvBytes,
		})
	}
	return w
}

// containerNodes returns the mapping items of pod.<list>.
func containerNodes(pod *yaml.Node, list string) []*yaml.Node {
	_, s := field(pod, list)
	if s == nil || s.Kind != yaml.SequenceNode {
		return nil
	}
	var out []*yaml.Node
	for _, c := range s.Content {
		if c.Kind == yaml.MappingNode {
			out = append(out, c)
		}
	}
	return out
}

// gpuContainerIndex is the container KAI gives the fraction to: the one
// named by gpu-fraction-container-name, else the first.
func gpuContainerIndex(pod *yaml.Node, name string) int {
	if name == "" {
		return 0
	}
	for i, c := range containerNodes(pod, "containers") {
		if str(c, "name") == name {
			return i
		}
	}
	return -1
}

func hasGPU(c *yaml.Node) bool {
	return str(lookup(c, "resources", "limits"), resourceGPU) != "" || str(lookup(c, "resources", "requests"), resourceGPU) != ""
}

// containerLabel names a container in a field path: its name, else its
// index.
func containerLabel(c *yaml.Node, i int) string {
	if n := str(c, "name"); n != "" {
		return n
	}
	return fmt.Sprint(i)
}
