package live

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// A DynamoGraphDeployment holds several workloads in one object: each
// entry of spec.services is run by a Deployment of its own (the editor's
// internal/patcher/workload/dynamo.go). The live change is made per
// service on the graph: the service's extraPodMetadata gpu-fraction and
// its main container's args, one marker entry per service, a release of
// one service handing back that service's fields only. Since every
// service's fields are applied under the one FieldManager, and an apply
// gives up whatever the manager owned and left out, each apply to a graph
// sends everything the manager owns on it now, at its live values, and
// changes only the service at hand (servicePatch).

// dynamoMain is the key of a service's extraPodSpec that the operator
// lays over the container it runs the service in, and dynamoMainName the
// name the editor gives it when it has none (the operator's "main").
const (
	dynamoMain     = "mainContainer"
	dynamoMainName = "main"
)

// servicePath is where service key sits in a graph.
func servicePath(key string) []string { return []string{"spec", "services", key} }

// serviceWorkload is the workload name of service key of graph: the
// operator's GetDynamoComponentName, as the editor names it.
func serviceWorkload(graph, key string) string { return graph + "-" + strings.ToLower(key) }

// serviceObject is service key of the graph u as a live object: the
// graph's metadata, and one pod template, the service's, whose
// annotations and labels are its extraPodMetadata's and whose containers
// are its main container (first, as the operator runs it) and
// extraPodSpec's containers. A service the graph does not have has no
// template.
func serviceObject(k kindInfo, u *unstructured.Unstructured, key string) (*object, error) {
	o := &object{k: k, u: u, service: key}
	if m, ok := u.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &o.meta); err != nil {
			return nil, fmt.Errorf("%s %s/%s: metadata: %w", k.kind, u.GetNamespace(), u.GetName(), err)
		}
	}
	svc, ok, err := unstructured.NestedMap(u.Object, servicePath(key)...)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %s: %w", k.kind, u.GetNamespace(), u.GetName(), strings.Join(servicePath(key), "."), err)
	}
	if !ok {
		return o, nil
	}
	path := servicePath(key)
	t := podTemplate{path: path, meta: join(path, "extraPodMetadata"), pod: join(path, "extraPodSpec")}
	var s struct {
		Meta metav1.ObjectMeta `json:"extraPodMetadata"`
		Pod  struct {
			Main       *corev1.Container  `json:"mainContainer"`
			Containers []corev1.Container `json:"containers"`
		} `json:"extraPodSpec"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(svc, &s); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %s: %w", k.kind, u.GetNamespace(), u.GetName(), strings.Join(path, "."), err)
	}
	t.spec.Annotations, t.spec.Labels = s.Meta.Annotations, s.Meta.Labels
	if s.Pod.Main != nil {
		if s.Pod.Main.Name == "" {
			s.Pod.Main.Name = dynamoMainName
		}
		t.serving, t.servingName = dynamoMain, s.Pod.Main.Name
		t.spec.Spec.Containers = append(t.spec.Spec.Containers, *s.Pod.Main)
	}
	t.spec.Spec.Containers = append(t.spec.Spec.Containers, s.Pod.Containers...)
	o.templates = []podTemplate{t}
	return o, nil
}

// serviceKeys are the keys of a graph's spec.services, in order.
func serviceKeys(u *unstructured.Unstructured) []string {
	services, _, _ := unstructured.NestedMap(u.Object, "spec", "services")
	return slices.Sorted(maps.Keys(services))
}

// notOneService is why a workload names no service of the graphs, or
// several: the live change is refused, not failed.
type notOneService struct{ why string }

func (e *notOneService) Error() string { return e.why }

// findService reads the service of a graph in namespace whose workload is
// named workload, from a list of the graphs: a workload names its graph
// and service only together ("<graph>-<service, lowercased>").
func (c *Client) findService(ctx context.Context, k kindInfo, namespace, workload string) (*object, error) {
	list, err := c.dyn.Resource(k.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, apiError("list", k.gvr.Resource, namespace, err)
	}
	var found []string
	var graph *unstructured.Unstructured
	var key string
	for i := range list.Items {
		for _, s := range serviceKeys(&list.Items[i]) {
			if serviceWorkload(list.Items[i].GetName(), s) == workload {
				found = append(found, "service "+s+" of "+list.Items[i].GetName())
				graph, key = &list.Items[i], s
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, &notOneService{fmt.Sprintf("no %s in namespace %s has a service whose workload is %s (<graph>-<service, lowercased>)", k.kind, namespace, workload)}
	case 1:
		return serviceObject(k, graph, key)
	}
	return nil, &notOneService{fmt.Sprintf("%s in namespace %s are the same workload %s, which names no one service", strings.Join(found, " and "), namespace, workload)}
}

// getService reads service key of graph namespace/graph again.
func (c *Client) getService(ctx context.Context, k kindInfo, namespace, graph, key string) (*object, error) {
	u, err := c.dyn.Resource(k.gvr).Namespace(namespace).Get(ctx, graph, metav1.GetOptions{})
	if err != nil {
		return nil, apiError("get", k.gvr.Resource, namespace, err)
	}
	return serviceObject(k, u, key)
}

// markedServices are the services of graph u that its marker has an entry
// for, each as a live object, the services no longer in the graph
// included (without a template); a marker that does not read gives the
// graph itself, so that the reconcile reports it.
func markedServices(k kindInfo, u *unstructured.Unstructured) ([]*object, error) {
	entries, ok, err := graphMarkers(u.GetAnnotations())
	if !ok {
		return nil, nil
	}
	if err != nil {
		o, rerr := serviceObject(k, u, "")
		if rerr != nil {
			return nil, rerr
		}
		return []*object{o}, nil
	}
	var out []*object
	for _, key := range slices.Sorted(maps.Keys(entries)) {
		o, err := serviceObject(k, u, key)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// graphMarker is MarkerAnnotation on a DynamoGraphDeployment: one entry
// per service changed live, by its key in spec.services.
type graphMarker struct {
	Services map[string]Marker `json:"services"`
}

// graphMarkers reads a graph's marker entries; ok is false when it has no
// marker.
func graphMarkers(annotations map[string]string) (map[string]Marker, bool, error) {
	s, ok := annotations[MarkerAnnotation]
	if !ok {
		return nil, false, nil
	}
	var g graphMarker
	if err := json.Unmarshal([]byte(s), &g); err != nil {
		return nil, true, fmt.Errorf("annotation %s: %w", MarkerAnnotation, err)
	}
	if len(g.Services) == 0 {
		// The tool removes the marker with its last entry: one without
		// any is not the tool's.
		return nil, true, fmt.Errorf("annotation %s: no services", MarkerAnnotation)
	}
	for key, m := range g.Services {
		if m.Fraction.New == "" || m.Branch == "" {
			return nil, true, fmt.Errorf("annotation %s: service %s: no gpuFraction.new or branch", MarkerAnnotation, key)
		}
	}
	return g.Services, true, nil
}

// serviceMarker is the marker entry of o's service; ok is false when the
// graph has none for it.
func serviceMarker(o *object) (Marker, bool, error) {
	entries, ok, err := graphMarkers(o.meta.Annotations)
	if !ok || err != nil {
		return Marker{}, ok, err
	}
	m, ok := entries[o.service]
	return m, ok, nil
}

// servicePatch is applyPatch for a graph's service o: what FieldManager
// owns on the graph now, at its live values, with o's service's fields
// set to fraction and args (none when fraction is ""), and the marker's
// entry of the service set to m (removed when m is nil; the marker goes
// with its last entry). The graph's resourceVersion is sent: the other
// services' fields are sent as they were read, and a change made since
// must fail the apply rather than be undone.
func servicePatch(o *object, fraction string, vllm *VLLMValues, args []string, m *Marker) ([]byte, error) {
	obj, err := extractApplied(o, FieldManager)
	if err != nil {
		return nil, err
	}
	entries, _, err := graphMarkers(o.meta.Annotations)
	if err != nil {
		// Another service's entry that does not read cannot be kept: the
		// reconcile reports it and leaves the graph alone.
		return nil, err
	}
	if entries == nil {
		entries = map[string]Marker{}
	}
	if m != nil {
		entries[o.service] = *m
	} else {
		delete(entries, o.service)
	}
	unstructured.RemoveNestedField(obj, servicePath(o.service)...)
	unstructured.RemoveNestedField(obj, "metadata", "annotations", MarkerAnnotation)
	if len(entries) > 0 {
		enc, err := json.Marshal(graphMarker{Services: entries})
		if err != nil {
			return nil, fmt.Errorf("marker: %w", err)
		}
		setPath(obj, []string{"metadata", "annotations", MarkerAnnotation}, string(enc))
	}
	if fraction != "" {
		t := &o.templates[0]
		setPath(obj, join(t.meta, "annotations", kai.FractionAnnotation), fraction)
		if h := holdingOf(o, vllm); h != nil && args != nil {
			if err := setArgs(obj, h, vllm.Container, args); err != nil {
				return nil, fmt.Errorf("%s %s/%s: %w", o.k.kind, o.meta.Namespace, o.meta.Name, err)
			}
		}
	}
	prune(obj)
	obj["apiVersion"], obj["kind"] = o.k.apiVersion, o.k.kind
	setPath(obj, []string{"metadata", "name"}, o.meta.Name)
	setPath(obj, []string{"metadata", "namespace"}, o.meta.Namespace)
	setPath(obj, []string{"metadata", "resourceVersion"}, o.meta.ResourceVersion)
	return json.Marshal(obj)
}

// prune removes the empty maps of m: an apply that sends an empty map
// would own it.
func prune(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			prune(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

// refuseService says why the live change of a graph's service would not
// reach its pods, or is not made: "" when it would.
func refuseService(o *object) string {
	name := fmt.Sprintf("%s %s/%s", o.k.kind, o.meta.Namespace, o.meta.Name)
	if len(o.templates) == 0 {
		return fmt.Sprintf("%s has no service %s: the live fast path refuses it; it waits for its pull request", name, o.service)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(o.u.Object, join(servicePath(o.service), "multinode")...); ok {
		return fmt.Sprintf("%s: service %s runs on several nodes as a group (multinode), which the editor leaves alone, so the live fast path refuses it; it waits for its pull request", name, o.service)
	}
	return ""
}
