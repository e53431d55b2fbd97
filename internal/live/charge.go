package live

import (
	"context"
	"errors"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// charge is what one workload charges its KAI queue: its pods, by pod
// template, each with its request. A DynamoGraphDeployment makes one per
// service, named as the editor names the service's workload.
type charge struct {
	kind, namespace, name string
	queue                 string
	pods                  []podCount
}

// podCount is count pods of one template, each asking for gpus (the
// fraction times devices, or whole GPUs); sized says an upsize of the
// workload sets their fraction (a LeaderWorkerSet's leader that asks for
// no GPU is left alone by the editor, and by the live change).
type podCount struct {
	count   float64
	gpus    float64
	devices int
	sized   bool
}

// dynamoGVR is NVIDIA Dynamo's DynamoGraphDeployment, the version the
// editor reads; its services are counted in a queue's sum one by one.
func dynamoGVR() schema.GroupVersionResource {
	k, _ := kindOf("DynamoGraphDeployment")
	return k.gvr
}

// charges reads what every sized workload in namespace charges its
// queue: Deployments, StatefulSets, Rollouts, LeaderWorkerSets,
// InferenceServices and DynamoGraphDeployments' services. A custom kind
// the cluster does not serve has nothing to count; one the tool may not
// list is named in skipped.
func (c *Client) charges(ctx context.Context, namespace string) (out []charge, skipped []string, err error) {
	deployments := map[string]*object{}
	for _, kind := range []string{"Deployment", "StatefulSet", "Rollout", "LeaderWorkerSet", "InferenceService"} {
		k, _ := kindOf(kind)
		objs, err := c.list(ctx, k, namespace)
		if err != nil {
			if kind != "Deployment" && apierrors.IsNotFound(err) {
				continue
			}
			if kind != "Deployment" && errors.Is(err, ErrForbidden) { // as apiError wraps a refusal
				skipped = append(skipped, k.gvr.GroupResource().String())
				continue
			}
			return nil, nil, err
		}
		for _, o := range objs {
			ch := chargeOf(o)
			if kind == "Deployment" {
				deployments[o.meta.Name] = o
			} else if dep := deployments[workloadRefDeployment(o)]; dep != nil && len(ch.pods) == 0 {
				ch = refCharge(o, dep)
			}
			out = append(out, ch)
		}
	}
	list, err := c.dyn.Resource(dynamoGVR()).Namespace(namespace).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return out, skipped, nil
	case apierrors.IsForbidden(err):
		return out, append(skipped, dynamoGVR().GroupResource().String()), nil
	case err != nil:
		return nil, nil, apiError("list", dynamoGVR().Resource, namespace, err)
	}
	for i := range list.Items {
		out = append(out, dynamoCharges(&list.Items[i])...)
	}
	return out, skipped, nil
}

// chargeOf is what o charges its queue: each pod template's pods as the
// kind's controller runs them. The queue is o's own label, else its
// (first) pod template's, as KAI reads it.
func chargeOf(o *object) charge {
	ch := charge{kind: o.k.kind, namespace: o.meta.Namespace, name: o.meta.Name, queue: o.meta.Labels[kai.QueueLabel]}
	for _, t := range o.templates {
		if ch.queue == "" {
			ch.queue = t.spec.Labels[kai.QueueLabel]
		}
		ch.pods = append(ch.pods, podCount{count: podsOf(o, t), gpus: podGPUs(&t.spec), devices: devices(&t.spec), sized: true})
	}
	return ch
}

// workloadRefDeployment names the Deployment whose pod template a
// Rollout runs (spec.workloadRef), "" for any other object.
func workloadRefDeployment(o *object) string {
	if o.k.kind != "Rollout" || o.u == nil {
		return ""
	}
	ref, _, _ := unstructured.NestedStringMap(o.u.Object, "spec", "workloadRef")
	if ref["kind"] != "Deployment" || !strings.HasPrefix(ref["apiVersion"], "apps/") {
		return ""
	}
	return ref["name"]
}

// refCharge is what Rollout o charges its queue when it runs the pod
// template of Deployment dep: its own replicas of dep's pods. Its queue
// is its own label, else the template's. The Deployment is charged
// apart, for the pods it still runs itself (Argo scales it down only as
// workloadRef.scaleDown says).
func refCharge(o, dep *object) charge {
	ch := charge{kind: o.k.kind, namespace: o.meta.Namespace, name: o.meta.Name, queue: o.meta.Labels[kai.QueueLabel]}
	replicas := float64(1)
	if n, ok, _ := unstructured.NestedInt64(o.u.Object, "spec", "replicas"); ok {
		replicas = float64(n)
	}
	for _, t := range dep.templates {
		if ch.queue == "" {
			ch.queue = t.spec.Labels[kai.QueueLabel]
		}
		ch.pods = append(ch.pods, podCount{count: replicas, gpus: podGPUs(&t.spec), devices: devices(&t.spec), sized: true})
	}
	return ch
}

// podsOf is how many pods of template t object o runs: its replicas
// (1 when unset); a LeaderWorkerSet's replicas are groups of size pods, a
// leader and size-1 workers, the leader from the workers' template when
// it has none of its own; an InferenceService's predictor runs at least
// its minReplicas (KServe's default 1).
func podsOf(o *object, t podTemplate) float64 {
	if o.dep != nil {
		if o.dep.Spec.Replicas == nil {
			return 1
		}
		return float64(*o.dep.Spec.Replicas)
	}
	num := func(def int64, path ...string) float64 {
		if n, ok, _ := unstructured.NestedInt64(o.u.Object, path...); ok {
			return float64(n)
		}
		return float64(def)
	}
	switch o.k.kind {
	case "LeaderWorkerSet":
		groups, size := num(1, "spec", "replicas"), num(1, "spec", "leaderWorkerTemplate", "size")
		if t.path[len(t.path)-1] == "leaderTemplate" {
			return groups
		}
		if _, ok, _ := unstructured.NestedMap(o.u.Object, o.k.leader...); ok {
			return groups * (size - 1)
		}
		return groups * size
	case "InferenceService":
		return num(1, join(o.k.component, "minReplicas")...)
	}
	return num(1, "spec", "replicas")
}

// dynamoCharges are what a DynamoGraphDeployment's services charge their
// queues, one charge each, named <graph>-<service, lowercased> (the
// operator's GetDynamoComponentName). A service's pods carry its
// extraPodMetadata (annotations and labels); its whole GPUs are its
// resources' gpu count (limits, else requests), which the operator gives
// its main container, or the main container's own nvidia.com/gpu; a
// multinode service runs nodeCount pods per replica, each with that
// count (the CRD's description). The queue is the graph's label, else
// the service's pod label.
func dynamoCharges(u *unstructured.Unstructured) []charge {
	services, _, _ := unstructured.NestedMap(u.Object, "spec", "services")
	var out []charge
	for key, v := range services {
		svc, ok := v.(map[string]any)
		if !ok {
			continue
		}
		var t corev1.PodTemplateSpec
		if m, ok, _ := unstructured.NestedMap(svc, "extraPodMetadata"); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t.ObjectMeta)
		}
		if m, ok, _ := unstructured.NestedMap(svc, "extraPodSpec", "mainContainer"); ok {
			var c corev1.Container
			if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
				t.Spec.Containers = append(t.Spec.Containers, c)
			}
		}
		per := podGPUs(&t)
		if _, fractional := t.Annotations[kai.FractionAnnotation]; !fractional {
			if n := serviceGPUs(svc); n > 0 {
				per = n
			}
		}
		count := 1.0
		if n, ok, _ := unstructured.NestedInt64(svc, "replicas"); ok {
			count = float64(n)
		}
		if n, ok, _ := unstructured.NestedInt64(svc, "multinode", "nodeCount"); ok {
			count *= float64(n)
		}
		queue := u.GetLabels()[kai.QueueLabel]
		if queue == "" {
			queue = t.Labels[kai.QueueLabel]
		}
		out = append(out, charge{kind: "DynamoGraphDeployment", namespace: u.GetNamespace(), name: u.GetName() + "-" + strings.ToLower(key),
			queue: queue, pods: []podCount{{count: count, gpus: per, devices: devices(&t), sized: true}}})
	}
	return out
}

// serviceGPUs is a Dynamo service's resources gpu count: limits, else
// requests; 0 when it has none that reads as a whole number.
func serviceGPUs(svc map[string]any) float64 {
	for _, list := range []string{"limits", "requests"} {
		if s, ok, _ := unstructured.NestedString(svc, "resources", list, "gpu"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err == nil && n > 0 {
				return float64(n)
			}
			return 0
		}
	}
	return 0
}
