package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// testCluster is a real API server with a client of the tool on it.
type testCluster struct {
	s *kubeenv.APIServer
	c *live.Client
}

// startCluster starts a real kube-apiserver with the KAI Queue CRD and
// the namespaces the tests use; the tool's client is user as named (admin
// unless said otherwise).
func startCluster(t *testing.T, user string, users ...kubeenv.User) testCluster {
	t.Helper()
	return startClusterTB(t, user, users...)
}

func startClusterB(b *testing.B) testCluster {
	b.Helper()
	return startClusterTB(b, kubeenv.Admin)
}

func startClusterTB(t testing.TB, user string, users ...kubeenv.User) testCluster {
	t.Helper()
	s := kubeenv.StartAPIServer(t, users...)
	s.InstallKAIQueueCRD(t)
	s.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: staging}\n"))
	return testCluster{s: s, c: client(t, s, user)}
}

func client(t testing.TB, s *kubeenv.APIServer, user string) *live.Client {
	t.Helper()
	cfg, err := cluster.Config(cluster.Options{Kubeconfig: s.Kubeconfig(t, user)})
	require.NoError(t, err)
	c, err := live.NewClient(cfg)
	require.NoError(t, err)
	return c
}

// workload is a GPU Deployment as the tests create it.
type workload struct {
	ns, name string
	fraction string
	// args are the vLLM container's args; none when nil.
	args     []string
	queue    string
	replicas int
	// devices is gpu-fraction-num-devices; unset when 0.
	devices int
}

func (w workload) manifest() []byte {
	d := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": w.name, "namespace": w.ns},
		"spec": map[string]any{
			"replicas": max(w.replicas, 1),
			"selector": map[string]any{"matchLabels": map[string]string{"app": w.name}},
			"template": map[string]any{
				"metadata": map[string]any{
					"labels":      map[string]string{"app": w.name},
					"annotations": map[string]string{"gpu-fraction": w.fraction},
				},
				"spec": map[string]any{
					"schedulerName": "kai-scheduler",
					"containers":    []map[string]any{{"name": "vllm", "image": "vllm/vllm-openai:v0.10.0", "args": w.args}},
				},
			},
		},
	}
	if w.devices > 0 {
		tmpl := d["spec"].(map[string]any)["template"].(map[string]any)
		tmpl["metadata"].(map[string]any)["annotations"] = map[string]string{"gpu-fraction": w.fraction, "gpu-fraction-num-devices": fmt.Sprint(w.devices)}
	}
	if w.queue != "" {
		d["metadata"].(map[string]any)["labels"] = map[string]string{"kai.scheduler/queue": w.queue}
	}
	b, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}

// create creates w by server-side apply under manager, as a GitOps
// controller would.
func (c testCluster) create(t *testing.T, w workload, manager string) {
	t.Helper()
	c.applyAs(t, w, manager, false)
}

func (c testCluster) applyAs(t *testing.T, w workload, manager string, force bool) {
	t.Helper()
	c.applyAsTB(t, w, manager, force)
}

func (c testCluster) applyAsB(b *testing.B, w workload) {
	b.Helper()
	c.applyAsTB(b, w, "argocd-controller", false)
}

func (c testCluster) applyAsTB(t testing.TB, w workload, manager string, force bool) {
	t.Helper()
	path := fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/%s?fieldManager=%s&force=%t", w.ns, w.name, manager, force)
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodPatch, path, w.manifest(), "application/apply-patch+yaml")
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "%s", body)
}

// get reads a Deployment as the admin.
func (c testCluster) get(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodGet, fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/%s", ns, name), nil, "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var d appsv1.Deployment
	require.NoError(t, json.Unmarshal(body, &d))
	return &d
}

// owners are the managers whose managedFields hold the field at path
// (FieldsV1 keys, e.g. "f:metadata", "f:annotations", "f:gpu-fraction").
func owners(t *testing.T, d *appsv1.Deployment, path ...string) []string {
	t.Helper()
	var out []string
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var node map[string]any
		require.NoError(t, json.Unmarshal(mf.FieldsV1.GetRawBytes(), &node))
		found := true
		for _, k := range path {
			next, ok := node[k].(map[string]any)
			if !ok {
				found = false
				break
			}
			node = next
		}
		if found {
			out = append(out, mf.Manager)
		}
	}
	return out
}

// Paths of the fields a live change owns.
var (
	fractionPath = []string{"f:spec", "f:template", "f:metadata", "f:annotations", "f:gpu-fraction"}
	argsPath     = []string{"f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"vllm"}`, "f:args"}
	markerPath   = []string{"f:metadata", "f:annotations", "f:" + live.MarkerAnnotation}
)

func testenvUser(name string) kubeenv.User { return kubeenv.User{Name: name} }

func ctx(t *testing.T) context.Context { return t.Context() }
