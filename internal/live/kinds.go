package live

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// kindInfo is a kind the fast path changes live: where it is served and
// where its pod templates are.
type kindInfo struct {
	kind       string
	apiVersion string
	gvr        schema.GroupVersionResource
	// leader is the path of a pod template sized only when it asks for
	// GPUs (a LeaderWorkerSet's leader): nil when the kind has none.
	leader []string
	// template is the pod template always sized.
	template []string
	// component is a KServe component (an InferenceService's predictor):
	// it inlines the pods' annotations and pod spec where a pod template
	// has metadata and spec. nil when the kind has none.
	component []string
	// services: the kind is a graph of workloads, one per entry of
	// spec.services (a DynamoGraphDeployment), each changed on its own
	// (dynamo.go).
	services bool
}

// kindOf is the fast path's table of kinds; ok is false for a kind it
// never changes live. A function rather than a map keeps the table
// immutable.
func kindOf(kind string) (kindInfo, bool) {
	switch kind {
	case "Deployment":
		return kindInfo{kind: kind, apiVersion: "apps/v1", gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			template: []string{"spec", "template"}}, true
	case "StatefulSet":
		return kindInfo{kind: kind, apiVersion: "apps/v1", gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
			template: []string{"spec", "template"}}, true
	case "Rollout":
		return kindInfo{kind: kind, apiVersion: "argoproj.io/v1alpha1", gvr: schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts"},
			template: []string{"spec", "template"}}, true
	case "LeaderWorkerSet":
		return kindInfo{kind: kind, apiVersion: "leaderworkerset.x-k8s.io/v1", gvr: schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"},
			leader: []string{"spec", "leaderWorkerTemplate", "leaderTemplate"}, template: []string{"spec", "leaderWorkerTemplate", "workerTemplate"}}, true
	case "InferenceService":
		return kindInfo{kind: kind, apiVersion: "serving.kserve.io/v1beta1", gvr: schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"},
			component: []string{"spec", "predictor"}}, true
	case "DynamoGraphDeployment":
		return kindInfo{kind: kind, apiVersion: "nvidia.com/v1alpha1", gvr: schema.GroupVersionResource{Group: "nvidia.com", Version: "v1alpha1", Resource: "dynamographdeployments"},
			services: true}, true
	}
	return kindInfo{}, false
}

// liveKinds names the kinds of kindOf, for messages.
const liveKinds = "Deployments, StatefulSets, Argo Rollouts, LeaderWorkerSets, KServe InferenceServices and NVIDIA Dynamo graphs' services only"

// servingKeys are the fields of a KServe predictor of which the first
// present is its serving container, as internal/patcher/workload reads
// them; KServe names it servingContainerName unless it has a name. A
// function keeps the list immutable.
func servingKeys() []string {
	return []string{"model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml", "lightgbm", "paddle"}
}

// KServe's annotations on an InferenceService (pkg/constants): stop
// takes its pods away, deploymentMode picks who runs them.
const (
	kserveStop = "serving.kserve.io/stop"
	kserveMode = "serving.kserve.io/deploymentMode"
)

// servingContainerName is KServe's constants.InferenceServiceContainerName.
const servingContainerName = "kserve-container"

// podTemplate is one pod template of a live object and where it sits.
type podTemplate struct {
	path []string
	// meta and pod are where, from the object, the pods' annotations and
	// pod spec are: path.metadata and path.spec in a pod template, path
	// itself in a KServe component.
	meta, pod []string
	// serving is the field of the pod spec that is one more container (a
	// KServe predictor's model), named servingName in spec: "" when none.
	serving, servingName string
	// atomic: the containers list has no list-map keys, so server-side
	// apply owns it whole and one container's args cannot be taken alone
	// (a KServe component's containers, per its CRD).
	atomic bool
	spec   corev1.PodTemplateSpec
}

// templateAt is the pod template spec at path.
func templateAt(path []string, spec corev1.PodTemplateSpec) podTemplate {
	return podTemplate{path: path, meta: join(path, "metadata"), pod: join(path, "spec"), spec: spec}
}

// join is a, then b, in a new slice.
func join(a []string, b ...string) []string {
	return append(append(make([]string, 0, len(a)+len(b)), a...), b...)
}

// object is a live workload as the fast path reads it, whatever its
// kind: its metadata, the pod templates it sizes, and the object itself
// (typed for a Deployment, whose requests stay those of the typed
// client; unstructured for the others). A graph's service is the graph
// (meta, u) with the service's one template.
type object struct {
	k         kindInfo
	meta      metav1.ObjectMeta
	templates []podTemplate
	dep       *appsv1.Deployment
	u         *unstructured.Unstructured
	// service is the key in spec.services of a graph's service, "" for
	// any other object.
	service string
}

// workload is the name of the workload o is: its own, or a graph
// service's.
func (o *object) workload() string {
	if o.service != "" {
		return serviceWorkload(o.meta.Name, o.service)
	}
	return o.meta.Name
}

// marker reads o's marker: the object's, or the entry of a graph's
// service; ok is false when there is none.
func (o *object) marker() (Marker, bool, error) {
	if o.k.services {
		return serviceMarker(o)
	}
	return markerOf(o.meta.Annotations)
}

func deploymentObject(dep *appsv1.Deployment) *object {
	k, _ := kindOf("Deployment")
	return &object{k: k, meta: dep.ObjectMeta, dep: dep, templates: []podTemplate{templateAt(k.template, dep.Spec.Template)}}
}

// unstructuredObject reads the metadata and pod templates of u, a k.
func unstructuredObject(k kindInfo, u *unstructured.Unstructured) (*object, error) {
	o := &object{k: k, u: u}
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &o.meta); err != nil {
			return nil, fmt.Errorf("%s %s/%s: metadata: %w", k.kind, u.GetNamespace(), u.GetName(), err)
		}
	}
	for _, path := range [][]string{k.leader, k.template} {
		if path == nil {
			continue
		}
		m, ok, err := unstructured.NestedMap(u.Object, path...)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %s: %w", k.kind, u.GetNamespace(), u.GetName(), strings.Join(path, "."), err)
		}
		if !ok {
			continue
		}
		var t corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %s: %w", k.kind, u.GetNamespace(), u.GetName(), strings.Join(path, "."), err)
		}
		// A leader that asks for no GPU runs on the CPU: the editor leaves
		// it alone, and so does the live change.
		if path[len(path)-1] == "leaderTemplate" && !asksGPUs(&t) {
			continue
		}
		o.templates = append(o.templates, templateAt(path, t))
	}
	if k.component != nil {
		m, ok, err := unstructured.NestedMap(u.Object, k.component...)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %s: %w", k.kind, u.GetNamespace(), u.GetName(), strings.Join(k.component, "."), err)
		}
		if ok {
			t, err := componentPod(k.component, m)
			if err != nil {
				return nil, fmt.Errorf("%s %s/%s: %s: %w", k.kind, u.GetNamespace(), u.GetName(), strings.Join(k.component, "."), err)
			}
			o.templates = append(o.templates, t)
		}
	}
	return o, nil
}

// componentPod reads a KServe component m at path as the pod template
// KServe builds from it: its annotations, and its serving container first
// then its containers, as KServe orders them in the pod.
func componentPod(path []string, m map[string]any) (podTemplate, error) {
	var c struct {
		Annotations map[string]string  `json:"annotations"`
		Labels      map[string]string  `json:"labels"`
		Containers  []corev1.Container `json:"containers"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
		return podTemplate{}, fmt.Errorf("reading the component: %w", err)
	}
	t := podTemplate{path: path, meta: path, pod: path, atomic: true}
	t.spec.Annotations, t.spec.Labels = c.Annotations, c.Labels
	for _, key := range servingKeys() {
		s, ok := m[key].(map[string]any)
		if !ok {
			continue
		}
		var sc corev1.Container
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(s, &sc); err != nil {
			return podTemplate{}, fmt.Errorf("reading its %s: %w", key, err)
		}
		if sc.Name == "" {
			sc.Name = servingContainerName
		}
		t.serving, t.servingName = key, sc.Name
		t.spec.Spec.Containers = append(t.spec.Spec.Containers, sc)
		break
	}
	t.spec.Spec.Containers = append(t.spec.Spec.Containers, c.Containers...)
	return t, nil
}

// ownsArgs reports whether a server-side apply may own container's args
// alone in t: the serving container's args are a field of a map, a
// listed container's an item's field only when the list has keys.
func (t *podTemplate) ownsArgs(container string) bool {
	return !t.atomic || t.servingArgs(container)
}

// servingArgs reports whether container is t's serving container, whose
// args sit in a map (t.pod.serving.args) rather than a list's item.
func (t *podTemplate) servingArgs(container string) bool {
	return t.serving != "" && t.servingName == container
}

// asksGPUs reports whether a pod template asks KAI or the device plugin
// for a GPU.
func asksGPUs(t *corev1.PodTemplateSpec) bool {
	if _, ok := t.Annotations[kai.FractionAnnotation]; ok {
		return true
	}
	return podGPUs(t) > 0
}

// liveFraction is the gpu-fraction of the object's pod templates; err
// when they have none, or differ.
func (o *object) liveFraction() (string, error) {
	if len(o.templates) == 0 {
		return "", fmt.Errorf("the live %s has no pod template", o.k.kind)
	}
	first := o.templates[0].spec.Annotations[kai.FractionAnnotation]
	for _, t := range o.templates[1:] {
		if v := t.spec.Annotations[kai.FractionAnnotation]; v != first {
			return "", fmt.Errorf("the live %s's pod templates ask for different gpu-fractions (%s at %s, %s at %s): left to the pull request",
				o.k.kind, first, strings.Join(o.templates[0].path, "."), v, strings.Join(t.path, "."))
		}
	}
	return first, nil
}

// refuseKind says why the controller of o would not roll its pods from a
// template change, so that a live change would not reach them: "" when it
// would (docs/live.md, "Kinds", with the sources). It reads nothing but o.
func refuseKind(o *object) string {
	if o.u == nil {
		return ""
	}
	if o.k.services {
		return refuseService(o)
	}
	name := o.k.kind + " " + o.meta.Namespace + "/" + o.meta.Name
	str := func(path ...string) string { s, _, _ := unstructured.NestedString(o.u.Object, path...); return s }
	num := func(path ...string) int64 { n, _, _ := unstructured.NestedInt64(o.u.Object, path...); return n }
	switch o.k.kind {
	case "StatefulSet":
		if str("spec", "updateStrategy", "type") == string(appsv1.OnDeleteStatefulSetStrategyType) {
			return fmt.Sprintf("%s has updateStrategy OnDelete: its pods keep the old request until each is deleted by hand, so the live fast path refuses it; it waits for its pull request", name)
		}
		if p := num("spec", "updateStrategy", "rollingUpdate", "partition"); p > 0 {
			return fmt.Sprintf("%s has a rolling update partition of %d: pods below that ordinal keep the old request, so the live fast path refuses it; it waits for its pull request", name, p)
		}
	case "Rollout":
		if _, ok, _ := unstructured.NestedMap(o.u.Object, "spec", "workloadRef"); ok {
			return fmt.Sprintf("%s runs the pod template of another workload (spec.workloadRef), not its own: the live fast path refuses it; it waits for its pull request", name)
		}
		if paused, _, _ := unstructured.NestedBool(o.u.Object, "spec", "paused"); paused {
			return fmt.Sprintf("%s is paused (spec.paused): the Argo Rollouts controller does not progress it, so the live fast path refuses it; it waits for its pull request", name)
		}
	case "LeaderWorkerSet":
		if p := num("spec", "rolloutStrategy", "rollingUpdateConfiguration", "partition"); p > 0 {
			return fmt.Sprintf("%s has a rolling update partition of %d: groups below that index keep the old request, so the live fast path refuses it; it waits for its pull request", name, p)
		}
	case "InferenceService":
		// KServe's utils.GetForceStopRuntime reads the value case-blind.
		if strings.EqualFold(o.meta.Annotations[kserveStop], "true") {
			return fmt.Sprintf("%s is stopped (%s): KServe runs none of its pods, so the live fast path refuses it; it waits for its pull request", name, kserveStop)
		}
		// The mode KServe recorded wins over the annotation, as in its
		// GetDeploymentMode.
		mode := str("status", "deploymentMode")
		if mode == "" {
			mode = o.meta.Annotations[kserveMode]
		}
		if mode == "ModelMesh" {
			return fmt.Sprintf("%s is served by ModelMesh: its models load into shared runtime pods that the predictor's annotations do not reach, so the live fast path refuses it; it waits for its pull request", name)
		}
		if p, ok, _ := unstructured.NestedInt64(o.u.Object, "spec", "predictor", "canaryTrafficPercent"); ok && p < 100 {
			return fmt.Sprintf("%s sends %d%% of its traffic to a canary (spec.predictor.canaryTrafficPercent): the previous revision keeps serving at the old request, so the live fast path refuses it; it waits for its pull request", name, p)
		}
	}
	return ""
}

// get reads the live k namespace/name; of a graph, the service whose
// workload is name.
func (c *Client) get(ctx context.Context, k kindInfo, namespace, name string) (*object, error) {
	if k.services {
		return c.findService(ctx, k, namespace, name)
	}
	if k.kind == "Deployment" {
		dep, err := c.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, apiError("get", k.gvr.Resource, namespace, err)
		}
		return deploymentObject(dep), nil
	}
	u, err := c.dyn.Resource(k.gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, apiError("get", k.gvr.Resource, namespace, err)
	}
	return unstructuredObject(k, u)
}

// reread reads o again: the object, or the same service of the graph.
func (c *Client) reread(ctx context.Context, o *object) (*object, error) {
	if o.k.services {
		return c.getService(ctx, o.k, o.meta.Namespace, o.meta.Name, o.service)
	}
	return c.get(ctx, o.k, o.meta.Namespace, o.meta.Name)
}

// list reads the live objects of kind k in namespace; of graphs, the
// services their markers name.
func (c *Client) list(ctx context.Context, k kindInfo, namespace string) ([]*object, error) {
	var out []*object
	if k.kind == "Deployment" {
		list, err := c.kube.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, apiError("list", k.gvr.Resource, namespace, err)
		}
		for i := range list.Items {
			out = append(out, deploymentObject(&list.Items[i]))
		}
		return out, nil
	}
	list, err := c.dyn.Resource(k.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError("list", k.gvr.Resource, namespace, err)
	}
	for i := range list.Items {
		if k.services {
			svcs, err := markedServices(k, &list.Items[i])
			if err != nil {
				return nil, err
			}
			out = append(out, svcs...)
			continue
		}
		o, err := unstructuredObject(k, &list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// patch server-side applies body to o as manager, and returns the object
// the server answers with. apiError wraps the server's error, so that
// conflicts still reads a conflict's managers from it.
func (c *Client) patch(ctx context.Context, o *object, body []byte, manager string, force *bool) (*object, error) {
	// Strict: a field the served schema does not know is an error, not a
	// warning and a field the server drops, so that a change reported
	// applied is applied.
	opts := metav1.PatchOptions{FieldManager: manager, Force: force, FieldValidation: "Strict"}
	if o.k.kind == "Deployment" {
		out, err := c.kube.AppsV1().Deployments(o.meta.Namespace).Patch(ctx, o.meta.Name, types.ApplyPatchType, body, opts)
		if err != nil {
			return nil, apiError("patch", o.k.gvr.Resource, o.meta.Namespace, err)
		}
		return deploymentObject(out), nil
	}
	out, err := c.dyn.Resource(o.k.gvr).Namespace(o.meta.Namespace).Patch(ctx, o.meta.Name, types.ApplyPatchType, body, opts)
	if err != nil {
		return nil, apiError("patch", o.k.gvr.Resource, o.meta.Namespace, err)
	}
	if o.k.services {
		return serviceObject(o.k, out, o.service)
	}
	return unstructuredObject(o.k, out)
}
