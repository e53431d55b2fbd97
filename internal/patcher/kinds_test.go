package patcher_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// TestInferenceServiceSchema: every field the editor reads or edits in an
// InferenceService is one of KServe's CRD (testdata/kinds holds it, as of
// the release followed), so that a field name that is wrong, or that
// KServe renames, fails here rather than in a cluster.
func TestInferenceServiceSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "kinds", "serving.kserve.io_inferenceservices.yaml"))
	require.NoError(t, err)
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(b, &crd))
	var schema map[string]any
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1beta1" {
			schema = v.Schema.OpenAPIV3Schema
		}
	}
	require.NotNil(t, schema, "no v1beta1 in the CRD")

	spec, ok := workload.SpecFor("InferenceService")
	require.True(t, ok)
	require.Contains(t, patcher.Kinds(), "InferenceService")
	var paths [][]string
	for _, op := range []workload.Op{
		patcher.SetGPUFraction("0.5"), patcher.SetGPUMemory(1024), patcher.SetSchedulerName("kai-scheduler"),
		patcher.SetPodLabel("kai.scheduler/queue", "q"), patcher.SetWorkloadLabel("kai.scheduler/queue", "q"),
		patcher.RemovePodAnnotation("gpu-memory"), patcher.RemoveWholeGPUs(), patcher.SetWholeGPUs(1),
		patcher.SetVLLMMemoryUtilization("0.5"),
	} {
		paths = append(paths, op.Touches(spec.Template)...)
	}
	// What Read and the serving container's ops read besides.
	paths = append(paths, [][]string{
		{"spec", "predictor", "model", "args"}, {"spec", "predictor", "model", "command"}, {"spec", "predictor", "model", "image"},
		{"spec", "predictor", "model", "name"}, {"spec", "predictor", "model", "runtime"}, {"spec", "predictor", "model", "modelFormat", "name"},
		{"spec", "predictor", "model", "resources", "limits"}, {"spec", "predictor", "model", "resources", "requests"},
		{"spec", "predictor", "huggingface", "args"}, {"spec", "predictor", "containers", "resources", "limits"},
		{"spec", "predictor", "workerSpec", "containers"}, {"spec", "canary", "predictor"},
		{"metadata", "labels"}, {"metadata", "annotations"},
	}...)
	require.Greater(t, len(paths), 20)
	for _, p := range paths {
		require.NoError(t, inSchema(schema, p), "%v", p)
	}
	// The check itself tells a field from a misspelt one.
	for _, p := range [][]string{{"spec", "predictor", "annotation"}, {"spec", "predictor", "model", "arg"}, {"spec", "predictor", "template"}} {
		require.Error(t, inSchema(schema, p), "%v", p)
	}
}

// inSchema checks that path is a field of an OpenAPI v3 schema: through
// properties, a list's items, and into a map (additionalProperties) or an
// object the API server does not check, where any key is one.
func inSchema(s map[string]any, path []string) error {
	for i := 0; i < len(path); {
		if items, ok := s["items"].(map[string]any); ok && s["type"] == "array" {
			s = items
			continue
		}
		props, _ := s["properties"].(map[string]any)
		if next, ok := props[path[i]].(map[string]any); ok {
			s, i = next, i+1
			continue
		}
		// A map of objects (a DynamoGraphDeployment's services) is
		// walked on into its values' schema, the key taken as any.
		if ap, ok := s["additionalProperties"].(map[string]any); ok && ap["type"] == "object" {
			s, i = ap, i+1
			continue
		}
		if s["additionalProperties"] != nil || s["x-kubernetes-preserve-unknown-fields"] == true || s["type"] == "object" && props == nil && i > 0 {
			return nil
		}
		return &schemaError{path: path, at: i}
	}
	return nil
}

type schemaError struct {
	path []string
	at   int
}

func (e *schemaError) Error() string {
	return "no field " + e.path[e.at] + " in " + strings.Join(e.path[:e.at], ".")
}

// TestDynamoSchema: every field the editor reads or edits in a
// DynamoGraphDeployment's service is one of Dynamo's CRD (the copy
// kubeenv installs, as of the release followed): its pod metadata and
// spec overrides, the main container, its GPU count and multinode.
func TestDynamoSchema(t *testing.T) {
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(kubeenv.DynamoGraphDeploymentCRD(), &crd))
	var schema map[string]any
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" {
			schema = v.Schema.OpenAPIV3Schema
		}
	}
	require.NotNil(t, schema, "no v1alpha1 in the CRD")

	var doc kyaml.Node
	require.NoError(t, kyaml.Unmarshal([]byte("apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: g}\nspec: {services: {Worker: {}}}\n"), &doc))
	ids := workload.IdentifyAll(doc.Content[0])
	require.Len(t, ids, 1)
	require.Equal(t, "g-worker", ids[0].Ref.Name)
	require.Contains(t, patcher.Kinds(), workload.DynamoKind)
	pod := ids[0].Spec.Template
	var paths [][]string
	for _, op := range []workload.Op{
		patcher.SetGPUFraction("0.5"), patcher.SetGPUMemory(1024), patcher.SetSchedulerName("kai-scheduler"),
		patcher.SetPodLabel("kai.scheduler/queue", "q"), patcher.SetWorkloadLabel("kai.scheduler/queue", "q"),
		patcher.RemovePodAnnotation("gpu-memory"), patcher.RemoveWholeGPUs(), patcher.SetWholeGPUs(1),
		patcher.SetVLLMMemoryUtilization("0.5"),
	} {
		paths = append(paths, op.Touches(pod)...)
	}
	svc := []string{"spec", "services", "Worker"}
	for _, p := range [][]string{
		{"resources", "limits", "gpu"}, {"resources", "requests", "gpu"}, {"multinode", "nodeCount"}, {"annotations"},
		{"extraPodSpec", "mainContainer", "args"}, {"extraPodSpec", "mainContainer", "command"},
		{"extraPodSpec", "mainContainer", "image"}, {"extraPodSpec", "mainContainer", "resources", "limits"},
		{"extraPodSpec", "containers", "resources", "limits"}, {"extraPodSpec", "initContainers", "resources", "limits"},
		{"extraPodMetadata", "labels", "kai.scheduler/queue"},
	} {
		paths = append(paths, append(slices.Clone(svc), p...))
	}
	paths = append(paths, []string{"metadata", "labels"}, []string{"metadata", "annotations"})
	require.Greater(t, len(paths), 20)
	for _, p := range paths {
		require.NoError(t, inSchema(schema, p), "%v", p)
	}
	for _, p := range [][]string{
		append(slices.Clone(svc), "extraPodMetadata", "annotation"), append(slices.Clone(svc), "podTemplate"),
		append(slices.Clone(svc), "resources", "limits", "nvidia.com/gpu"), append(slices.Clone(svc), "extraPodSpec", "mainContainer", "arg"),
	} {
		require.Error(t, inSchema(schema, p), "%v", p)
	}
}
