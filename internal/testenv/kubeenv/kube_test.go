package kubeenv_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

const kubeManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm
  namespace: serving
spec:
  replicas: 1
  selector:
    matchLabels: {app: llm}
  template:
    metadata:
      labels: {app: llm}
      annotations:
        gpu-fraction: "0.5"
    spec:
      schedulerName: kai-scheduler
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.6.0
---
# The namespace comes second: Apply creates namespaces first.
apiVersion: v1
kind: Namespace
metadata:
  name: serving
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: read-deployments
  namespace: serving
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: reader
  namespace: serving
subjects:
- kind: User
  name: reader
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: Role
  name: read-deployments
  apiGroup: rbac.authorization.k8s.io
`

// One server for every subtest: starting one takes seconds.
func TestKubeAPIServer(t *testing.T) {
	kube := kubeenv.StartAPIServer(t,
		kubeenv.User{Name: "reader", Groups: []string{"team-a"}},
		kubeenv.User{Name: "stranger"},
	)
	kube.Apply(t, []byte(kubeManifests))

	getDeployment := func(t *testing.T, user string) (int, map[string]any) {
		t.Helper()
		status, body := kube.Do(t, user, http.MethodGet, "/apis/apps/v1/namespaces/serving/deployments/llm", nil, "")
		var obj map[string]any
		if status == http.StatusOK {
			require.NoError(t, json.Unmarshal(body, &obj))
		}
		return status, obj
	}

	t.Run("applied deployment reads back", func(t *testing.T) {
		status, obj := getDeployment(t, kubeenv.Admin)
		require.Equal(t, http.StatusOK, status)
		template := obj["spec"].(map[string]any)["template"].(map[string]any)
		require.Equal(t, "0.5", template["metadata"].(map[string]any)["annotations"].(map[string]any)["gpu-fraction"])
		require.Equal(t, "kai-scheduler", template["spec"].(map[string]any)["schedulerName"])
		require.EqualValues(t, 1, obj["metadata"].(map[string]any)["generation"])
	})

	t.Run("a pod template change counts a generation", func(t *testing.T) {
		patch := `{"spec":{"template":{"metadata":{"annotations":{"gpu-fraction":"0.6"}}}}}`
		status, body := kube.Do(t, kubeenv.Admin, http.MethodPatch, "/apis/apps/v1/namespaces/serving/deployments/llm",
			[]byte(patch), "application/merge-patch+json")
		require.Equal(t, http.StatusOK, status, string(body))
		_, obj := getDeployment(t, kubeenv.Admin)
		require.EqualValues(t, 2, obj["metadata"].(map[string]any)["generation"])
	})

	t.Run("RBAC decides", func(t *testing.T) {
		tests := []struct {
			name   string
			user   string
			method string
			path   string
			want   int
		}{
			{"bound role allows get", "reader", http.MethodGet, "/apis/apps/v1/namespaces/serving/deployments/llm", http.StatusOK},
			{"bound role does not allow patch", "reader", http.MethodPatch, "/apis/apps/v1/namespaces/serving/deployments/llm", http.StatusForbidden},
			{"bound role is namespaced", "reader", http.MethodGet, "/apis/apps/v1/namespaces/default/deployments", http.StatusForbidden},
			{"user without roles is forbidden", "stranger", http.MethodGet, "/apis/apps/v1/namespaces/serving/deployments/llm", http.StatusForbidden},
			{"anonymous is forbidden", "", http.MethodGet, "/apis/apps/v1/namespaces/serving/deployments/llm", http.StatusForbidden},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var body []byte
				var ct string
				if tt.method == http.MethodPatch {
					body, ct = []byte(`{"metadata":{"labels":{"x":"y"}}}`), "application/merge-patch+json"
				}
				status, resp := kube.Do(t, tt.user, tt.method, tt.path, body, ct)
				require.Equal(t, tt.want, status, string(resp))
			})
		}
	})

	t.Run("tokens", func(t *testing.T) {
		require.NotEmpty(t, kube.Token(kubeenv.Admin))
		require.NotEmpty(t, kube.Token("reader"))
		require.NotEqual(t, kube.Token(kubeenv.Admin), kube.Token("reader"))
		require.Empty(t, kube.Token("nobody"))
	})

	t.Run("kubeconfig reaches the server as its user", func(t *testing.T) {
		path := kube.Kubeconfig(t, "reader")
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		var cfg struct {
			Clusters []struct {
				Cluster struct {
					Server string `yaml:"server"`
					CA     string `yaml:"certificate-authority-data"`
				} `yaml:"cluster"`
			} `yaml:"clusters"`
			Users []struct {
				Name string `yaml:"name"`
				User struct {
					Token string `yaml:"token"`
				} `yaml:"user"`
			} `yaml:"users"`
			CurrentContext string `yaml:"current-context"`
		}
		require.NoError(t, yaml.Unmarshal(raw, &cfg))
		require.Len(t, cfg.Clusters, 1)
		require.Len(t, cfg.Users, 1)
		require.Equal(t, kube.URL, cfg.Clusters[0].Cluster.Server)
		require.NotEmpty(t, cfg.CurrentContext)

		// A client that knows only what the file says is let in as reader.
		ca, err := base64.StdEncoding.DecodeString(cfg.Clusters[0].Cluster.CA)
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(ca))
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		defer client.CloseIdleConnections()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
			cfg.Clusters[0].Cluster.Server+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
			strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+cfg.Users[0].User.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		var review struct {
			Status struct {
				UserInfo struct {
					Username string   `json:"username"`
					Groups   []string `json:"groups"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&review))
		require.Equal(t, "reader", review.Status.UserInfo.Username)
		require.Contains(t, review.Status.UserInfo.Groups, "team-a")
	})

	t.Run("KAI queues", func(t *testing.T) {
		kube.InstallKAIQueueCRD(t)
		kube.Apply(t, []byte(`apiVersion: scheduling.run.ai/v2
kind: Queue
metadata:
  name: team-a
spec:
  parentQueue: default
  priority: 100
  resources:
    gpu: {quota: 2, limit: 4, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
`))
		status, body := kube.Do(t, kubeenv.Admin, http.MethodGet, "/apis/scheduling.run.ai/v2/queues/team-a", nil, "")
		require.Equal(t, http.StatusOK, status, string(body))
		var q struct {
			Spec struct {
				ParentQueue string `json:"parentQueue"`
				Resources   struct {
					GPU struct {
						Quota float64 `json:"quota"`
						Limit float64 `json:"limit"`
					} `json:"gpu"`
				} `json:"resources"`
			} `json:"spec"`
		}
		require.NoError(t, json.Unmarshal(body, &q))
		require.Equal(t, "default", q.Spec.ParentQueue)
		require.InDelta(t, 2.0, q.Spec.Resources.GPU.Quota, 0)
		require.InDelta(t, 4.0, q.Spec.Resources.GPU.Limit, 0)

		// The schema is enforced: a quota must be a number.
		bad := `{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"bad"},"spec":{"resources":{"gpu":{"quota":"two"}}}}`
		status, body = kube.Do(t, kubeenv.Admin, http.MethodPost, "/apis/scheduling.run.ai/v2/queues", []byte(bad), "")
		require.Equal(t, http.StatusUnprocessableEntity, status, string(body))
		require.Contains(t, string(body), "spec.resources.gpu.quota")
	})
}
