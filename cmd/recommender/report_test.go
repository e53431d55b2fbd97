package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// fleetPolicy is examples/fleet's GpuConsolidationPolicy: the quickstart's
// pool, as a platform team would declare it.
const fleetPolicy = "../../examples/fleet/consolidation.yaml"

// withPool is a copy of the quickstart with the fleet's consolidation
// policy among its policies.
func withPool(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	b, err := os.ReadFile(fleetPolicy)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "policies", "consolidation.yaml"), b, 0o644))
	return repo
}

// reportReader may do what the chart's <release>-fleet ClusterRole grants
// (charts/recommender/templates/rbac.yaml), the verbs a report uses and no
// more: list nodes and pods, get the pods' owners and rollout settings.
const reportReader = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: report-reader}
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
metadata: {name: report-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: report-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: reader}
---
apiVersion: v1
kind: Namespace
metadata: {name: inference}
`

// quickstartPool puts the quickstart's Deployments, one pod each, on
// three nodes of the pool "inference": what the controllers, the
// kubelets and GPU feature discovery would have made.
func quickstartPool(t *testing.T, s *kubeenv.APIServer) {
	t.Helper()
	s.Apply(t, []byte(reportReader))
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig(t, kubeenv.Admin))
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	for name, gpus := range map[string]int64{"gpu-a": 2, "gpu-b": 2, "gpu-c": 1} {
		n, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"pool": "inference", "nvidia.com/gpu.product": "NVIDIA-L4"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		n.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
		_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	yes := true
	owned := func(kind, name string, uid metav1.Object) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid.GetUID(), Controller: &yes}}
	}
	for _, w := range []struct {
		name, node, fraction string
		whole                int64
	}{
		{name: "asr-whisper", node: "gpu-a", whole: 1},
		{name: "chat", node: "gpu-a", fraction: "0.5"},
		{name: "embed", node: "gpu-b", fraction: "0.4"},
		{name: "rerank", node: "gpu-b", fraction: "0.3"},
		{name: "translate", node: "gpu-b", fraction: "0.25"},
		{name: "summarize", node: "gpu-b", fraction: "0.6"},
		{name: "ocr", node: "gpu-c", fraction: "0.2"},
	} {
		labels := map[string]string{"app": w.name}
		tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		sel := &metav1.LabelSelector{MatchLabels: labels}
		dep, err := kube.AppsV1().Deployments("inference").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: w.name},
			Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		require.NoError(t, err)
		rs, err := kube.AppsV1().ReplicaSets("inference").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: w.name + "-5f7d",
			OwnerReferences: owned("Deployment", w.name, dep)}, Spec: appsv1.ReplicaSetSpec{Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		require.NoError(t, err)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: w.name + "-5f7d-x", Labels: labels, OwnerReferences: owned("ReplicaSet", rs.Name, rs)},
			Spec: corev1.PodSpec{NodeName: w.node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if w.fraction != "" {
			pod.Annotations = map[string]string{"gpu-fraction": w.fraction}
		} else {
			pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(w.whole, resource.DecimalSI)}
		}
		_, err = kube.CoreV1().Pods("inference").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// TestReport is `recommender report` on the quickstart with a
// consolidation policy, against a cluster the reader may only read.
func TestReport(t *testing.T) {
	s := kubeenv.StartAPIServer(t, kubeenv.User{Name: "reader"})
	if s == nil {
		return
	}
	quickstartPool(t, s)
	repo := withPool(t)
	before := treeHash(t, repo)
	kubeconfig := s.Kubeconfig(t, "reader")

	for _, tc := range []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "table", golden: "quickstart-report.txt"},
		{name: "json", args: []string{"-o", "json"}, golden: "quickstart-report.json"},
		{name: "markdown", args: []string{"-o", "markdown"}, golden: "quickstart-report.md"},
		// Only chat's pull request merges: every other pod is packed at
		// the share it holds now.
		{name: "one workload", args: []string{"--workload", "inference/chat"}, golden: "quickstart-report-chat.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"report", "--repo", repo, "--metrics-file", quickstartMetrics, "--kubeconfig", kubeconfig}, tc.args...)
			out, errOut, code := cli(t, args...)
			require.Equal(t, exitOK, code, errOut)
			golden(t, tc.golden, []byte(out))
		})
	}
	require.Equal(t, before, treeHash(t, repo), "report must write nothing")
}

// TestReportHelpNamesItsRBAC: `report --help` names every resource the
// rules of docs/fleet.md grant, so a reader sizing its RBAC from the help
// gets the same answer as from the docs (issue 35: the help named three).
func TestReportHelpNamesItsRBAC(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fleet.md")
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)```yaml\n(rules:\n.*?)```").FindSubmatch(doc)
	require.NotNil(t, block, "docs/fleet.md holds the report's rules")
	var rules struct {
		Rules []struct{ APIGroups, Resources, Verbs []string }
	}
	require.NoError(t, sigsyaml.UnmarshalStrict(block[1], &rules))
	// Only the sentence that states the RBAC counts: "nodes" and "pods"
	// stand elsewhere in the help too.
	help := strings.Join(strings.Fields(newCmdReport(streams{}, nil).Long), " ")
	start := strings.Index(help, "it writes nothing")
	require.GreaterOrEqual(t, start, 0, "the help states what report reads")
	help = help[start:]
	end := strings.Index(help, "(the RBAC in docs/fleet.md)")
	require.Positive(t, end, "the sentence points at docs/fleet.md")
	help = help[:end]
	n := 0
	for _, r := range rules.Rules {
		for _, res := range r.Resources {
			if res == "queues" {
				res = "KAI queues"
			}
			require.Contains(t, help, res)
			n++
		}
	}
	require.Equal(t, 6, n, "the rules docs/fleet.md grants")
}
