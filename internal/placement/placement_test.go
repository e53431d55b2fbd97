package placement_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/placement"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// readerRBAC is exactly what reading a placement uses, as the chart's
// <release>-fleet ClusterRole grants it: list nodes and pods, get the
// pods' owners and rollout settings; nothing that writes.
const readerRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: placement-reader}
rules:
- apiGroups: [""]
  resources: [nodes, pods]
  verbs: [get, list]
- apiGroups: [apps]
  resources: [replicasets, deployments, statefulsets]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: placement-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: placement-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reader}
`

// client is a clientset that reaches s as user.
func client(t *testing.T, s *kubeenv.APIServer, user string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig(t, user))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// pool is a hand-made pool: what a kubelet, GPU feature discovery and
// the controllers would have made, written as an admin. It returns the
// pods by name to the test cases.
type pool struct {
	t    *testing.T
	kube kubernetes.Interface
}

func (p pool) node(name string, gpus int64, labels map[string]string) {
	p.t.Helper()
	n, err := p.kube.CoreV1().Nodes().Create(p.t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	if gpus == 0 {
		return
	}
	// Capacity is the kubelet's to report, through the status subresource.
	n.Status.Capacity = corev1.ResourceList{placement.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	if _, err := p.kube.CoreV1().Nodes().UpdateStatus(p.t.Context(), n, metav1.UpdateOptions{}); err != nil {
		p.t.Fatal(err)
	}
}

func (p pool) replicaSet(ns, name string, owner *metav1.OwnerReference) metav1.OwnerReference {
	p.t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	rs, err := p.kube.AppsV1().ReplicaSets(ns).Create(p.t.Context(), rs, metav1.CreateOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	return controller("apps/v1", "ReplicaSet", name, rs.UID)
}

func controller(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes}
}

type podSpec struct {
	ns, name, node string
	annotations    map[string]string
	labels         map[string]string
	gpus           []int64 // each container's nvidia.com/gpu limit
	owner          *metav1.OwnerReference
	phase          corev1.PodPhase
}

func (p pool) pod(s podSpec) {
	p.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name, Annotations: s.annotations, Labels: s.labels},
		Spec: corev1.PodSpec{NodeName: s.node}}
	if s.owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*s.owner}
	}
	for i, g := range append([]int64{0}, s.gpus...) {
		c := corev1.Container{Name: "c" + string(rune('0'+i)), Image: "x"}
		if g > 0 {
			q := *resource.NewQuantity(g, resource.DecimalSI)
			c.Resources.Limits = corev1.ResourceList{placement.GPUResource: q}
		}
		pod.Spec.Containers = append(pod.Spec.Containers, c)
	}
	created, err := p.kube.CoreV1().Pods(s.ns).Create(p.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	if s.phase != "" {
		created.Status.Phase = s.phase
		if _, err := p.kube.CoreV1().Pods(s.ns).UpdateStatus(p.t.Context(), created, metav1.UpdateOptions{}); err != nil {
			p.t.Fatal(err)
		}
	}
}

// fill makes the pool every test of the package reads: two A100 nodes
// of pool a, a node of pool b without GPU capacity, and pods of a
// Deployment, a StatefulSet, an ownerless ReplicaSet and no owner at all.
func fill(t *testing.T, s *kubeenv.APIServer) {
	t.Helper()
	s.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n---\n"+readerRBAC))
	p := pool{t: t, kube: client(t, s, kubeenv.Admin)}
	a100 := map[string]string{"nodePool": "a", placement.ProductLabel: "NVIDIA-A100-SXM4-80GB"}
	p.node("gpu-1", 4, a100)
	p.node("gpu-2", 2, a100)
	p.node("cpu-1", 0, map[string]string{"nodePool": "b"})

	dep, err := p.kube.AppsV1().Deployments("ml").Create(t.Context(), &appsv1.Deployment{
		// KAI reads the Deployment's own queue label before its pods'.
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "llm", Labels: map[string]string{"kai.scheduler/queue": "serving"}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "llm"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "llm"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	depOwner := controller("apps/v1", "Deployment", "llm", dep.UID)
	llm := p.replicaSet("ml", "llm-6d4f", &depOwner)
	orphan := p.replicaSet("ml", "batch-7c9b", nil)
	sts := controller("apps/v1", "StatefulSet", "db", "00000000-0000-0000-0000-000000000001")
	inference := map[string]string{"kai.scheduler/queue": "inference"}

	for _, s := range []podSpec{
		{ns: "ml", name: "llm-6d4f-a", node: "gpu-1", owner: &llm, annotations: map[string]string{"gpu-fraction": "0.5"}, labels: inference},
		{ns: "ml", name: "llm-6d4f-b", node: "gpu-2", owner: &llm, annotations: map[string]string{"gpu-fraction": "0.3", "gpu-fraction-num-devices": "2"}, labels: inference},
		{ns: "ml", name: "db-0", node: "gpu-1", owner: &sts, gpus: []int64{1, 1}},
		{ns: "ml", name: "batch-7c9b-x", node: "gpu-2", owner: &orphan, annotations: map[string]string{"gpu-fraction": "0.25"}},
		{ns: "default", name: "solo", node: "gpu-2", annotations: map[string]string{"gpu-fraction": "0.1"}},
		{ns: "ml", name: "pending", annotations: map[string]string{"gpu-fraction": "0.5"}},
		{ns: "ml", name: "cpu-only", node: "gpu-1"},
		{ns: "ml", name: "done", node: "gpu-1", gpus: []int64{1}, phase: corev1.PodSucceeded},
		{ns: "ml", name: "bad", node: "gpu-1", annotations: map[string]string{"gpu-fraction": "1.5"}},
		{ns: "ml", name: "mem", node: "gpu-1", annotations: map[string]string{"gpu-memory": "4096"}},
	} {
		p.pod(s)
	}
}

func TestRead(t *testing.T) {
	s := kubeenv.StartAPIServer(t, kubeenv.User{Name: "reader"})
	if s == nil {
		return
	}
	fill(t, s)
	reader := client(t, s, "reader")
	got, notes, err := placement.Read(context.WithoutCancel(t.Context()), reader)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("nodes", func(t *testing.T) {
		a100 := map[string]string{"nodePool": "a", placement.ProductLabel: "NVIDIA-A100-SXM4-80GB"}
		want := []consolidate.Node{
			{Name: "gpu-1", Labels: a100, GPUs: 4, Model: "NVIDIA-A100-SXM4-80GB"},
			{Name: "gpu-2", Labels: a100, GPUs: 2, Model: "NVIDIA-A100-SXM4-80GB"},
		}
		if !reflect.DeepEqual(got.Nodes, want) {
			t.Errorf("nodes\n got %+v\nwant %+v", got.Nodes, want)
		}
	})

	pods := map[string]consolidate.Pod{}
	for _, p := range got.Pods {
		pods[p.Key()] = p
	}
	ref := func(kind, name string) usage.Ref { return usage.Ref{Namespace: "ml", Kind: kind, Name: name} }
	for _, tc := range []struct {
		pod  string
		want *consolidate.Pod // nil: left out
	}{
		{"ml/llm-6d4f-a", &consolidate.Pod{Workload: ref("Deployment", "llm"), Node: "gpu-1", Share: consolidate.Fraction(0.5, 1), Queue: "serving"}},
		{"ml/llm-6d4f-b", &consolidate.Pod{Workload: ref("Deployment", "llm"), Node: "gpu-2", Share: consolidate.Fraction(0.3, 2), Queue: "serving"}},
		{"ml/db-0", &consolidate.Pod{Workload: ref("StatefulSet", "db"), Node: "gpu-1", Share: consolidate.Whole(2)}},
		{"ml/batch-7c9b-x", &consolidate.Pod{Workload: ref("ReplicaSet", "batch-7c9b"), Node: "gpu-2", Share: consolidate.Fraction(0.25, 1)}},
		{"default/solo", &consolidate.Pod{Workload: usage.Ref{Namespace: "default", Kind: "Pod", Name: "solo"}, Node: "gpu-2", Share: consolidate.Fraction(0.1, 1)}},
		{"ml/pending", nil},
		{"ml/cpu-only", nil},
		{"ml/done", nil},
		{"ml/bad", nil},
		{"ml/mem", nil},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			p, ok := pods[tc.pod]
			if tc.want == nil {
				if ok {
					t.Fatalf("read %+v, want it left out", p)
				}
				return
			}
			tc.want.Namespace, tc.want.Name, _ = strings.Cut(tc.pod, "/")
			if !reflect.DeepEqual(p, *tc.want) {
				t.Errorf("\n got %+v\nwant %+v", p, *tc.want)
			}
		})
	}
	if len(got.Pods) != 5 {
		t.Errorf("read %d pods, want 5", len(got.Pods))
	}

	t.Run("notes", func(t *testing.T) {
		for _, want := range []string{"pod ml/bad left out: invalid gpu-fraction", "pod ml/mem left out: it asks for gpu-memory"} {
			if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
				t.Errorf("no note %q in %q", want, notes)
			}
		}
	})

	t.Run("rollouts", func(t *testing.T) {
		// llm names no strategy: the API server defaults it to 25% and
		// 25% of 1 replica, maxSurge rounded up to 1, maxUnavailable down
		// to 0. The StatefulSet db does not exist: noted.
		want := []consolidate.Rollout{{Workload: ref("Deployment", "llm"), Replicas: 1,
			MaxSurge: consolidate.Count(1), MaxUnavailable: consolidate.Count(0)}}
		if !reflect.DeepEqual(got.Rollouts, want) {
			t.Errorf("rollouts\n got %+v\nwant %+v", got.Rollouts, want)
		}
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, "StatefulSet ml/db could not be read") }) {
			t.Errorf("no note of the missing StatefulSet in %q", notes)
		}
	})

	t.Run("reads only", func(t *testing.T) {
		err := reader.CoreV1().Pods("ml").Delete(t.Context(), "llm-6d4f-a", metav1.DeleteOptions{})
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("the reader deleted a pod (err %v): it must hold get and list only", err)
		}
	})
}
