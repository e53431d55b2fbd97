package live

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// QueueResource is KAI's Queue (cluster-scoped): a function, so that no
// caller can change which resource the quota check reads.
func QueueResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2", Resource: "queues"}
}

// QueueCheck is what a workload's KAI queue says about an upsize.
type QueueCheck struct {
	Queue string
	// Quota is the queue's GPU quota; negative when unlimited.
	Quota float64
	// Requested is what the queue's Deployments ask for now, and After
	// what they would ask for with the upsize, in GPUs: replicas × the
	// pod's request, from the Deployments' specs.
	Requested, After float64
	// Namespaces are where the Deployments were counted: the ones the
	// tool may read, so a lower bound when the queue spans others.
	Namespaces []string
	// Note says why the queue could not be checked; the check is then
	// silent, not fatal.
	Note string
}

// Exceeds reports whether the upsize would take the queue over its
// quota: KAI places non-preemptible pods (inference) only within quota,
// so the new pods could stay Pending.
func (q QueueCheck) Exceeds() bool {
	return q.Note == "" && q.Quota >= 0 && kai.Above(q.After, q.Quota)
}

// Warning is the sentence for the decision and the pull request, "" when
// there is nothing to warn of.
func (q QueueCheck) Warning() string {
	switch {
	case q.Note != "":
		return q.Note
	case q.Exceeds():
		return fmt.Sprintf("KAI queue %s: the upsize takes its Deployments (in %s) from %s to %s GPUs, over its GPU quota of %s: non-preemptible pods run only within quota, so new pods could stay Pending",
			q.Queue, strings.Join(q.Namespaces, ", "), gpus(q.Requested), gpus(q.After), gpus(q.Quota))
	}
	return ""
}

// gpus writes an amount of GPU on KAI's grid, away from binary error.
func gpus(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// CheckQueue reads the KAI queue of Deployment namespace/name and what the
// Deployments charged to it in namespaces request, and works out what
// they would request with the Deployment's pods at a gpu-fraction of
// newGPUs (times the pod's gpu-fraction-num-devices). No pods
// are read: a Deployment's spec (replicas × request) is what the queue
// will have to hold once it has rolled, and needs no RBAC on pods.
func (c *Client) CheckQueue(ctx context.Context, namespace, name string, newGPUs float64, namespaces []string) (QueueCheck, error) {
	dep, err := c.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Not in the cluster (yet): no queue to charge, nothing to warn of.
		return QueueCheck{}, nil
	case err != nil:
		return QueueCheck{}, apiError("get", "deployments", namespace, err)
	}
	q := QueueCheck{Queue: queueOf(dep), Namespaces: namespaces}
	if q.Queue == "" {
		return QueueCheck{}, nil
	}
	obj, err := c.dyn.Resource(QueueResource()).Get(ctx, q.Queue, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		q.Note = fmt.Sprintf("KAI queue %s could not be read (%s): its quota was not checked", q.Queue, serverMessage(err))
		return q, nil
	case err != nil:
		return q, apiError("get", "queues.scheduling.run.ai", "", err)
	}
	if q.Quota, err = quota(obj); err != nil {
		q.Note = fmt.Sprintf("KAI queue %s: %v: its quota was not checked", q.Queue, err)
		return q, nil
	}
	for _, ns := range namespaces {
		list, err := c.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return q, apiError("list", "deployments", ns, err)
		}
		for i := range list.Items {
			d := &list.Items[i]
			if queueOf(d) != q.Queue {
				continue
			}
			per := podGPUs(&d.Spec.Template)
			n := float64(replicas(d))
			q.Requested += n * per
			if d.Namespace == namespace && d.Name == name {
				// newGPUs is the fraction of each device: KAI charges it
				// once per device, as it does the current one.
				per = newGPUs * float64(devices(&d.Spec.Template))
			}
			q.After += n * per
		}
	}
	return q, nil
}

// quota is spec.resources.gpu.quota; KAI reads -1 (or no quota) as
// unlimited.
func quota(obj *unstructured.Unstructured) (float64, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "resources", "gpu", "quota")
	if err != nil || !found {
		return -1, nil //nolint:nilerr // no quota: unlimited
	}
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("spec.resources.gpu.quota is %T, not a number", v)
}

// queueOf is the queue KAI charges a Deployment's pods to: its own label
// first, then its pod template's.
func queueOf(d *appsv1.Deployment) string {
	if q := d.Labels[kai.QueueLabel]; q != "" {
		return q
	}
	return d.Spec.Template.Labels[kai.QueueLabel]
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// podGPUs is one pod's GPU request as KAI counts it: the fraction times
// its devices, or the whole GPUs of its containers' limits.
func podGPUs(t *corev1.PodTemplateSpec) float64 {
	if f, err := kai.ParseFraction(t.Annotations[kai.FractionAnnotation]); err == nil {
		return f * float64(devices(t))
	}
	var whole int64
	for _, c := range t.Spec.Containers {
		q := c.Resources.Limits[corev1.ResourceName(kai.GPUResource)]
		whole += q.Value()
	}
	return float64(whole)
}

// devices is how many devices a fractional pod takes the fraction of:
// gpu-fraction-num-devices, 1 when unset or not a positive number.
func devices(t *corev1.PodTemplateSpec) int {
	if v, err := strconv.Atoi(t.Annotations[kai.NumDevicesAnnotation]); err == nil && v > 0 {
		return v
	}
	return 1
}
