package kubeenv_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

const (
	statefulSets     = "/apis/apps/v1/namespaces/inference/statefulsets"
	rollouts         = "/apis/argoproj.io/v1alpha1/namespaces/inference/rollouts"
	leaderWorkerSets = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/inference/leaderworkersets"
	dynamoGraphs     = "/apis/nvidia.com/v1alpha1/namespaces/inference/dynamographdeployments"
)

// kindFixture is one of the workload fixtures in testdata/kinds, where it
// is stored and where its pod templates are.
type kindFixture struct {
	file       string
	collection string
	name       string
	// templates are the paths to the object's pod templates: KAI reads
	// the GPU request from every one of them.
	templates [][]string
	// meta and spec are where a template's pod metadata and pod spec
	// are, below it: metadata and spec, but a Dynamo service's
	// extraPodMetadata and extraPodSpec, with the serving container
	// its mainContainer, not containers[0].
	meta, spec, serving []string
	check               func(t *testing.T, obj map[string]any)
}

// at walks obj by keys, a list's index written as a number, and fails the
// test where the path ends early.
func at(t *testing.T, obj any, path ...string) any {
	t.Helper()
	v := obj
	for i, k := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				t.Fatalf("%s: no such field", strings.Join(path[:i+1], "."))
			}
		case []any:
			var n int
			if err := json.Unmarshal([]byte(k), &n); err != nil || n < 0 || n >= len(x) {
				t.Fatalf("%s: no such item", strings.Join(path[:i+1], "."))
			}
			v = x[n]
		default:
			t.Fatalf("%s: %T holds no fields", strings.Join(path[:i], "."), v)
		}
	}
	return v
}

func readFixture(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kinds", file))
	require.NoError(t, err)
	return string(b)
}

// TestWorkloadKinds holds the fixtures of the workload kinds beyond
// Deployment to the real schemas, upstream's CRDs for a Rollout, a
// LeaderWorkerSet and a DynamoGraphDeployment, with strict field validation: what others edit in
// tests is what a cluster takes.
func TestWorkloadKinds(t *testing.T) {
	kube := kubeenv.StartAPIServer(t)
	kube.InstallArgoRolloutCRD(t)
	kube.InstallLeaderWorkerSetCRD(t)
	kube.InstallDynamoGraphDeploymentCRD(t)
	kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n"))
	fixtures := []kindFixture{
		{
			file: "statefulset.yaml", collection: statefulSets, name: "embed",
			templates: [][]string{{"spec", "template"}},
			check: func(t *testing.T, obj map[string]any) {
				require.EqualValues(t, 2, at(t, obj, "spec", "replicas"))
				require.Equal(t, "embed", at(t, obj, "spec", "serviceName"))
				require.Equal(t, "RollingUpdate", at(t, obj, "spec", "updateStrategy", "type"))
				require.EqualValues(t, 0, at(t, obj, "spec", "updateStrategy", "rollingUpdate", "partition"))
				require.Equal(t, "cache", at(t, obj, "spec", "volumeClaimTemplates", "0", "metadata", "name"))
			},
		},
		{
			file: "rollout.yaml", collection: rollouts, name: "chat",
			templates: [][]string{{"spec", "template"}},
			check: func(t *testing.T, obj map[string]any) {
				require.EqualValues(t, 4, at(t, obj, "spec", "replicas"))
				require.EqualValues(t, 1, at(t, obj, "spec", "strategy", "canary", "maxSurge"))
				require.EqualValues(t, 0, at(t, obj, "spec", "strategy", "canary", "maxUnavailable"))
				require.Equal(t, []any{
					map[string]any{"setWeight": 25.0},
					map[string]any{"pause": map[string]any{"duration": "10m"}},
					map[string]any{"setWeight": 50.0},
					map[string]any{"pause": map[string]any{}},
				}, at(t, obj, "spec", "strategy", "canary", "steps"))
			},
		},
		{
			file: "leaderworkerset.yaml", collection: leaderWorkerSets, name: "llama",
			templates: [][]string{{"spec", "leaderWorkerTemplate", "leaderTemplate"}, {"spec", "leaderWorkerTemplate", "workerTemplate"}},
			check: func(t *testing.T, obj map[string]any) {
				require.EqualValues(t, 2, at(t, obj, "spec", "replicas"))
				require.EqualValues(t, 2, at(t, obj, "spec", "leaderWorkerTemplate", "size"))
				require.Equal(t, "RecreateGroupOnPodRestart", at(t, obj, "spec", "leaderWorkerTemplate", "restartPolicy"))
				require.Equal(t, "RollingUpdate", at(t, obj, "spec", "rolloutStrategy", "type"))
				require.EqualValues(t, 1, at(t, obj, "spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxUnavailable"))
				require.Equal(t, "vllm-leader", at(t, obj, "spec", "leaderWorkerTemplate", "leaderTemplate", "spec", "containers", "0", "name"))
				require.Equal(t, "vllm-worker", at(t, obj, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", "0", "name"))
			},
		},
		{
			file: "dynamographdeployment.yaml", collection: dynamoGraphs, name: "llama",
			templates: [][]string{{"spec", "services", "VllmDecodeWorker"}},
			meta:      []string{"extraPodMetadata"}, spec: []string{"extraPodSpec"}, serving: []string{"mainContainer"},
			check: func(t *testing.T, obj map[string]any) {
				require.Equal(t, "vllm", at(t, obj, "spec", "backendFramework"))
				require.EqualValues(t, 2, at(t, obj, "spec", "services", "VllmDecodeWorker", "replicas"))
				require.Equal(t, "16Gi", at(t, obj, "spec", "services", "VllmDecodeWorker", "resources", "requests", "memory"))
				require.Equal(t, "frontend", at(t, obj, "spec", "services", "Frontend", "componentType"))
				require.Equal(t, []any{"python3", "-m", "dynamo.vllm"},
					at(t, obj, "spec", "services", "VllmDecodeWorker", "extraPodSpec", "mainContainer", "command"))
			},
		},
	}

	// A misspelt field in a pod template is refused, not dropped: the CRDs
	// carry the pod's schema, so a fixture's typo cannot pass unseen.
	t.Run("strict validation reaches the pod templates", func(t *testing.T) {
		tests := []struct {
			file, collection, from, to, field string
		}{
			{"statefulset.yaml", statefulSets, "      schedulerName:", "      schedulerNme:", "spec.template.spec.schedulerNme"},
			{"rollout.yaml", rollouts, "      schedulerName:", "      schedulerNme:", "spec.template.spec.schedulerNme"},
			{"rollout.yaml", rollouts, "- setWeight: 50", "- setWeigth: 50", "spec.strategy.canary.steps[2].setWeigth"},
			{"leaderworkerset.yaml", leaderWorkerSets, "command: [ray", "commnd: [ray", "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].commnd"},
			{"dynamographdeployment.yaml", dynamoGraphs, "        schedulerName:", "        schedulerNme:", "spec.services.VllmDecodeWorker.extraPodSpec.schedulerNme"},
			{"dynamographdeployment.yaml", dynamoGraphs, "command: [python3", "commnd: [python3", "spec.services.VllmDecodeWorker.extraPodSpec.mainContainer.commnd"},
			{"dynamographdeployment.yaml", dynamoGraphs, "      extraPodMetadata:", "      extraPodMetdata:", "spec.services.VllmDecodeWorker.extraPodMetdata"},
		}
		for _, tt := range tests {
			t.Run(tt.file+" "+tt.field, func(t *testing.T) {
				fixture := readFixture(t, tt.file)
				require.Equal(t, 1, strings.Count(fixture, tt.from), "the fixture has changed")
				status, body := kube.Do(t, kubeenv.Admin, http.MethodPost, tt.collection+"?fieldValidation=Strict",
					[]byte(strings.Replace(fixture, tt.from, tt.to, 1)), "application/yaml")
				require.Equal(t, http.StatusBadRequest, status, string(body))
				require.Contains(t, string(body), `strict decoding error: unknown field \"`+tt.field+`\"`)
			})
		}
	})

	t.Run("created and read back", func(t *testing.T) {
		for _, k := range fixtures {
			t.Run(k.file, func(t *testing.T) {
				kube.Apply(t, []byte(readFixture(t, k.file)))
				status, body := kube.Do(t, kubeenv.Admin, http.MethodGet, k.collection+"/"+k.name, nil, "")
				require.Equal(t, http.StatusOK, status, string(body))
				var obj map[string]any
				require.NoError(t, json.Unmarshal(body, &obj))
				require.Equal(t, "inference", at(t, obj, "metadata", "labels", "kai.scheduler/queue"))
				meta, spec, serving := k.meta, k.spec, k.serving
				if meta == nil {
					meta, spec, serving = []string{"metadata"}, []string{"spec"}, []string{"containers", "0"}
				}
				for _, tmpl := range k.templates {
					get := func(path ...[]string) any {
						return at(t, obj, slices.Concat(append([][]string{tmpl}, path...)...)...)
					}
					require.Equal(t, "0.5", get(meta, []string{"annotations", "gpu-fraction"}), "%v", tmpl)
					require.Equal(t, "inference", get(meta, []string{"labels", "kai.scheduler/queue"}), "%v", tmpl)
					require.Equal(t, "kai-scheduler", get(spec, []string{"schedulerName"}), "%v", tmpl)
					require.Contains(t, get(spec, serving, []string{"image"}), "vllm", "%v", tmpl)
				}
				k.check(t, obj)
			})
		}
	})
}
