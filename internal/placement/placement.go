// Package placement reads what runs on a cluster's GPU nodes into the
// input of a consolidation report (consolidate.Placement): the nodes with
// their pool labels, GPU count and model, and the scheduled pods holding
// GPU share, each with the workload its recommendation resizes. It only
// gets and lists: a report never evicts nor patches, so the reader needs
// no more than get and list on nodes, pods and replicasets.
package placement

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const (
	// GPUResource is the device plugin's resource: a node's capacity and a
	// container's whole-GPU limit.
	GPUResource corev1.ResourceName = kai.GPUResource
	// ProductLabel is the GPU model GPU feature discovery labels a node
	// with.
	ProductLabel = "nvidia.com/gpu.product"
)

// Read lists the cluster's GPU nodes and the pods holding GPU share on
// them. Notes say which pods were left out and why. Device indexes stay
// unknown: KAI's runai-gpu-group label names a sharing group, not the
// device the group landed on, so each pod is placed as KAI would pack it.
func Read(ctx context.Context, kube kubernetes.Interface) (consolidate.Placement, []string, error) {
	var out consolidate.Placement
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, nil, fmt.Errorf("list nodes: %w", err)
	}
	for _, n := range nodes.Items {
		q, ok := n.Status.Capacity[GPUResource]
		if !ok || q.Value() < 1 {
			continue
		}
		out.Nodes = append(out.Nodes, consolidate.Node{Name: n.Name, Labels: maps.Clone(n.Labels),
			GPUs: int(q.Value()), Model: n.Labels[ProductLabel]})
	}
	pods, err := listPods(ctx, kube)
	if err != nil {
		return out, nil, err
	}
	r := owners{kube: kube, top: map[usage.Ref]usage.Ref{}}
	var notes []string
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		sh, ok, err := share(p)
		if err != nil {
			notes = append(notes, fmt.Sprintf("pod %s/%s left out: %v", p.Namespace, p.Name, err))
			continue
		}
		if !ok {
			continue
		}
		w, err := r.workload(ctx, p)
		if err != nil {
			return out, notes, err
		}
		out.Pods = append(out.Pods, consolidate.Pod{Namespace: p.Namespace, Name: p.Name, Workload: w,
			Node: p.Spec.NodeName, Share: sh, Queue: p.Labels[kai.QueueLabel]})
	}
	rollouts, queues, more, err := readRollouts(ctx, kube, out.Pods)
	out.Rollouts = rollouts
	for i, p := range out.Pods {
		if q := queues[p.Workload]; q != "" {
			out.Pods[i].Queue = q
		}
	}
	return out, append(notes, more...), err
}

// listPods lists the scheduled pods that have not ended, in pages: a
// cluster's pods can run to tens of thousands, and one answer that large
// weighs on the API server.
func listPods(ctx context.Context, kube kubernetes.Interface) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{Limit: 500,
		FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"}
	var out []corev1.Pod
	for {
		page, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list pods: %w", err)
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

// share is the pod's GPU request as KAI places it; ok is false for a pod
// asking for no GPU. gpu-memory pods are left out with an error: their
// share of a card depends on its memory, which the node does not say.
func share(p *corev1.Pod) (sh consolidate.Share, ok bool, err error) {
	var n int64
	for _, c := range p.Spec.Containers {
		if q, has := c.Resources.Limits[GPUResource]; has {
			n += q.Value()
		}
	}
	return shareOf(p.Annotations, n)
}

// owners finds the workload a pod belongs to, remembering each
// ReplicaSet's owner so that the pods of one Deployment cost one GET.
type owners struct {
	kube kubernetes.Interface
	top  map[usage.Ref]usage.Ref
}

// workload is the top owner a recommendation names: a ReplicaSet's owner
// (a Deployment, an Argo Rollout), else the pod's controller (a
// StatefulSet, a LeaderWorkerSet), else the pod itself.
func (o *owners) workload(ctx context.Context, p *corev1.Pod) (usage.Ref, error) {
	c := metav1.GetControllerOf(p)
	if c == nil {
		return usage.Ref{Namespace: p.Namespace, Kind: "Pod", Name: p.Name}, nil
	}
	ref := usage.Ref{Namespace: p.Namespace, Kind: c.Kind, Name: c.Name}
	if c.Kind != "ReplicaSet" || c.APIVersion != "apps/v1" {
		return ref, nil
	}
	if top, ok := o.top[ref]; ok {
		return top, nil
	}
	rs, err := o.kube.AppsV1().ReplicaSets(p.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	top := ref
	switch {
	case apierrors.IsNotFound(err):
		// Deleted while its pods wind down: they are the ReplicaSet's own.
	case err != nil:
		return ref, fmt.Errorf("get replicaset %s/%s: %w", p.Namespace, c.Name, err)
	default:
		if rc := metav1.GetControllerOf(rs); rc != nil {
			top = usage.Ref{Namespace: p.Namespace, Kind: rc.Kind, Name: rc.Name}
		}
	}
	o.top[ref] = top
	return top, nil
}
