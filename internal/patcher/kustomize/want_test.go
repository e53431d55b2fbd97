package kustomize

import (
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// The proof applies the ops of identical edits once per distinct output:
// what it expects of an overlay whose output differs from one seen only
// in its objects' names and namespaces must be, for every op, what
// applying the ops to that overlay's own output gives; any other
// difference applies them again.
func TestWantsOfRenamedOutputs(t *testing.T) {
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources:\n  - deployment.yaml\n  - service.yaml\n"),
		"base/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
  labels: {app: chat}
spec:
  selector:
    matchLabels: {app: chat}
  template:
    metadata:
      labels: {app: chat}
      annotations:
        gpu-fraction: "0.5"
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai
          args: ["--gpu-memory-utilization", "0.45"]
`),
		"base/service.yaml":       []byte("apiVersion: v1\nkind: Service\nmetadata: {name: chat}\nspec:\n  ports: [{port: 80}]\n"),
		"a/kustomization.yaml":    []byte("namespace: team-a\nresources:\n  - ../base\n"),
		"b/kustomization.yaml":    []byte("namespace: team-b\nnamePrefix: b-\nresources:\n  - ../base\n"),
		"n/kustomization.yaml":    []byte("namespace: \"123\"\nresources:\n  - ../base\n"),
		"r/kustomization.yaml":    []byte("namespace: team-r\nresources:\n  - ../base\npatches:\n  - path: replicas.yaml\n"),
		"r/replicas.yaml":         []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: chat}\nspec: {replicas: 3}\n"),
		"s/kustomization.yaml":    []byte("namespace: team-s\nresources:\n  - ../base\npatches:\n  - path: port.yaml\n"),
		"s/port.yaml":             []byte("apiVersion: v1\nkind: Service\nmetadata: {name: chat}\nspec:\n  ports: [{port: 8080}]\n"),
		"none/kustomization.yaml": []byte("resources:\n  - ../base\n"),
	}
	ix := NewIndex(files, nil)
	root := func(dir string) *kust {
		k := ix.kust(dir + "/kustomization.yaml")
		require.NotNil(t, k, dir)
		require.NoError(t, k.err, dir)
		return k
	}
	edits := func(k *kust, ops []workload.Op) []kedit {
		for _, o := range k.objs {
			if o.w.Ref.Kind == "Deployment" {
				return []kedit{{e: workload.Edit{Workload: o.w.Ref, Ops: ops}, k: k, o: o}}
			}
		}
		t.Fatalf("%s builds no Deployment", k.dir)
		return nil
	}
	opSets := []struct {
		name string
		ops  []workload.Op
	}{
		{"fraction and vLLM", []workload.Op{workload.SetGPUFraction("0.72"), workload.SetVLLMMemoryUtilization("0.64")}},
		{"memory", []workload.Op{workload.RemovePodAnnotation("gpu-fraction"), workload.SetGPUMemory(20480)}},
		{"scheduler and queue", []workload.Op{workload.SetSchedulerName("kai-scheduler"), workload.SetPodLabel("kai.scheduler/queue", "q"), workload.SetWorkloadLabel("kai.scheduler/queue", "q")}},
		{"whole GPUs", []workload.Op{workload.RemovePodAnnotation("gpu-fraction"), workload.SetWholeGPUs(1)}},
	}
	tests := []struct {
		name    string
		dir     string
		renamed bool
	}{
		{name: "another namespace", dir: "b", renamed: true},
		{name: "no namespace", dir: "none", renamed: false},
		// written quoted: still a string
		{name: "a namespace spelled as a number", dir: "n", renamed: true},
		{name: "the edited object differs", dir: "r", renamed: false},
		{name: "another object differs", dir: "s", renamed: false},
	}
	for _, ops := range opSets {
		for _, tt := range tests {
			t.Run(ops.name+"/"+tt.name, func(t *testing.T) {
				ws := wants{}
				_, err := ws.of(root("a"), edits(root("a"), ops.ops))
				require.NoError(t, err)
				require.Len(t, ws, 1)
				k := root(tt.dir)
				own, err := wants{}.of(k, edits(k, ops.ops))
				require.NoError(t, err)

				var seen wanted
				for _, w := range ws {
					seen = w
				}
				out, err := k.output()
				require.NoError(t, err)
				fe, err := workload.NewFileEdit(k.dir, out, true)
				require.NoError(t, err)
				_, ok := seen.renamed(fe.Expected)
				require.Equal(t, tt.renamed, ok)

				got, err := ws.of(k, edits(k, ops.ops))
				require.NoError(t, err)
				require.Len(t, got, len(own))
				for i := range own {
					require.Nil(t, splice.Compare(own[i], got[i], ""), "object %d", i+1)
					require.Equal(t, render(t, own[i]), render(t, got[i]), "object %d", i+1)
				}
				require.Len(t, ws, 1, "the first output stays the one compared with")
				if tt.renamed {
					// a name of another type is not a rename
					for _, d := range fe.Expected {
						if ids := identity(d); ids[1] != nil {
							ids[1].Tag, ids[1].Value, ids[1].Style = "!!int", "123", 0
						}
					}
					_, ok := seen.renamed(fe.Expected)
					require.False(t, ok)
				}
			})
		}
	}
}

func render(t *testing.T, doc *yaml.Node) string {
	t.Helper()
	s, err := yaml.NewRNode(doc.Content[0]).String()
	require.NoError(t, err)
	return s
}
