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

	var sum, initMax int64
	for _, r := range allContainers(pod) {
		n, _ := gpuCount(r.c)
		if r.list == "containers" {
			sum += n
		} else {
			initMax = max(initMax, n)
		}
		if n > 0 {
			w.GPU.WholeContainers = append(w.GPU.WholeContainers, containerLabel(r.c, r.i))
		}
	}
	// Kubernetes sums what the containers request and takes the larger of
	// that and the largest init container, which runs alone.
	w.GPU.Whole = max(sum, initMax)
	if ts, ok := gpuTargets(tmpl); ok && len(ts) == 1 {
		w.GPU.Container = containerLabel(ts[0].c, ts[0].i)
	}

	for _, c := range containerNodes(pod, "containers") {
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

// containerRef is one container or init container of a pod spec.
type containerRef struct {
	list string // "containers" or "initContainers"
	i    int    // index in list
	c    *yaml.Node
}

// allContainers returns the containers, then the init containers of pod.
func allContainers(pod *yaml.Node) []containerRef {
	var out []containerRef
	for _, list := range []string{"containers", "initContainers"} {
		for i, c := range containerNodes(pod, list) {
			out = append(out, containerRef{list: list, i: i, c: c})
		}
	}
	return out
}

// gpuCount is a container's nvidia.com/gpu: the larger of its limit and
// request. present is true when either is written, even as 0; a value that
// is not a plain count (a template, ...) counts as 1.
func gpuCount(c *yaml.Node) (n int64, present bool) {
	for _, list := range []string{"limits", "requests"} {
		_, v := field(lookup(c, "resources", list), resourceGPU)
		if v == nil {
			continue
		}
		present = true
		q, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
		if err != nil {
			q = 1
		}
		n = max(n, q)
	}
	return n, present
}

// gpuHolders returns the containers and init containers that request
// nvidia.com/gpu (a count that is not zero).
func gpuHolders(pod *yaml.Node) []containerRef {
	var out []containerRef
	for _, r := range allContainers(pod) {
		if n, _ := gpuCount(r.c); n > 0 {
			out = append(out, r)
		}
	}
	return out
}

// gpuTargets returns the containers the pod's GPU goes to, as KAI reads
// the pod template tmpl: the one named by gpu-fraction-container-name
// (containers first, then init containers); else those that request
// nvidia.com/gpu; else the first container, which is where KAI puts a
// fraction or gpu-memory. ok is false when the named container does not
// exist.
//
// A pod with both a fraction and nvidia.com/gpu is one that an Edit is
// moving to a fraction (KAI refuses both): RemoveWholeGPUs will name the
// container that held the GPU, so the answer does not depend on the order
// of the ops.
func gpuTargets(tmpl *yaml.Node) (ts []containerRef, ok bool) {
	pod := lookup(tmpl, "spec")
	if name := str(lookup(tmpl, "metadata", "annotations"), annContainerName); name != "" {
		for _, r := range allContainers(pod) {
			if str(r.c, "name") == name {
				return []containerRef{r}, true
			}
		}
		return nil, false
	}
	if hs := gpuHolders(pod); len(hs) > 0 {
		return hs, true
	}
	if cs := containerNodes(pod, "containers"); len(cs) > 0 {
		return []containerRef{{list: "containers", i: 0, c: cs[0]}}, true
	}
	return nil, true
}

// containerLabel names a container in a field path: its name, else its
// index.
func containerLabel(c *yaml.Node, i int) string {
	if n := str(c, "name"); n != "" {
		return n
	}
	return fmt.Sprint(i)
}
