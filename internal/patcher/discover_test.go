package patcher_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// writeFiles creates files under root; a value starting with "->" makes a
// symlink to the rest.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if target, ok := strings.CutPrefix(body, "->"); ok {
			require.NoError(t, os.Symlink(target, p))
			continue
		}
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
}

// hang bounds what must return at once and would otherwise hang or run
// for hours: a minute, which a loaded 2-core machine under -race does
// not take for work of milliseconds, and which tells it from a hang.
const hang = time.Minute

const discoverDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
  namespace: ml
  labels:
    app: chat
    kai.scheduler/queue: team-a
spec:
  selector:
    matchLabels:
      app: chat
  template:
    metadata:
      labels:
        app: chat
        kai.scheduler/queue: team-b
      annotations:
        gpu-fraction: "0.5"
        gpu-memory: "4096"
        gpu-fraction-num-devices: "2"
    spec:
      schedulerName: kai-scheduler
      initContainers:
      - name: fetch
        image: busybox
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.8.5
        args: ["--model", "m", "--gpu_memory_utilization", "0.9"]
        resources:
          limits:
            nvidia.com/gpu: 2
          requests:
            nvidia.com/gpu: "1"
      - name: sidecar
        image: envoyproxy/envoy:v1.31
`

func TestDiscover(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: outside\n"})
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"apps/chat.yaml": discoverDeployment,
		"apps/multi.yml": `apiVersion: v1
kind: Service
metadata:
  name: a
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
spec:
  template:
    metadata:
      annotations:
        gpu-fraction: "1.0"
    spec:
      containers:
      - name: c
        image: nginx
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
`,
		"apps/sts.yaml":         "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n",
		"apps/crd.yaml":         "apiVersion: example.com/v1\nkind: Deployment\nmetadata:\n  name: not-apps\n",
		"apps/noname.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {}\n",
		"apps/bad.yaml":         "a: b\n c: d\n",
		"apps/README.md":        "not yaml",
		".git/config.yaml":      discoverDeployment,
		".github/workflow.yaml": discoverDeployment,
		"links/same.yaml":       "->../apps/chat.yaml",
		"links/outside.yaml":    "->" + filepath.Join(outside, "secret.yaml"),
		"links/dir.yaml":        "->../apps",
	})

	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)

	var problems []string
	for _, p := range inv.Problems {
		problems = append(problems, p.Error())
	}
	require.Len(t, problems, 3, problems)
	require.Contains(t, problems[0], "apps/bad.yaml:2: invalid YAML")
	require.Equal(t, "apps/noname.yaml:1: Deployment without metadata.name", problems[1])
	require.Equal(t, "links/outside.yaml: symlink leads outside the checkout", problems[2])
	require.ErrorIs(t, inv.Problems[2], checkout.ErrOutsideRoot)

	want := []patcher.Workload{
		{
			Ref: dep("ml", "chat"), File: "apps/chat.yaml", Line: 1,
			Labels:         map[string]string{"app": "chat", "kai.scheduler/queue": "team-a"},
			PodLabels:      map[string]string{"app": "chat", "kai.scheduler/queue": "team-b"},
			PodAnnotations: map[string]string{"gpu-fraction": "0.5", "gpu-memory": "4096", "gpu-fraction-num-devices": "2"},
			SchedulerName:  "kai-scheduler",
			Queue:          "team-a",
			GPU: patcher.GPU{Fraction: 0.5, FractionText: "0.5", Whole: 2, MemoryMiB: 4096, NumDevices: 2,
				WholeContainers: []string{"vllm"}, Container: "vllm"},
			Containers: []patcher.Container{
				{Name: "vllm", Image: "vllm/vllm-openai:v0.8.5", VLLM: true, GPUMemoryUtilization: "0.9"},
				{Name: "sidecar", Image: "envoyproxy/envoy:v1.31"},
			},
		},
		{
			Ref: dep("", "b"), File: "apps/multi.yml", Line: 5,
			PodAnnotations: map[string]string{"gpu-fraction": "1.0"},
			GPU:            patcher.GPU{FractionText: "1.0", NumDevices: 1, Container: "c"},
			Containers:     []patcher.Container{{Name: "c", Image: "nginx"}},
		},
		{Ref: dep("", "a"), File: "apps/multi.yml", Line: 19, GPU: patcher.GPU{NumDevices: 1}},
		// A StatefulSet is sized too, even one without a pod template yet.
		{Ref: usage.Ref{Kind: "StatefulSet", Name: "db"}, File: "apps/sts.yaml", Line: 1, GPU: patcher.GPU{NumDevices: 1}},
	}
	require.Len(t, inv.Workloads, len(want))
	require.EqualError(t, inv.Workloads[1].GPU.FractionErr, `line 14: invalid gpu-fraction "1.0": KAI wants a fraction strictly between 0 and 1`)
	inv.Workloads[1].GPU.FractionErr = nil
	require.Equal(t, want, inv.Workloads)
}

func TestDiscoverRootIsASymlink(t *testing.T) {
	real := t.TempDir()
	writeFiles(t, real, map[string]string{"a/d.yaml": discoverDeployment})
	link := filepath.Join(t.TempDir(), "checkout")
	require.NoError(t, os.Symlink(real, link))
	inv, err := patcher.Discover(context.Background(), link)
	require.NoError(t, err)
	require.Empty(t, inv.Problems)
	require.Len(t, inv.Workloads, 1)
	require.Equal(t, "a/d.yaml", inv.Workloads[0].File)
}

func TestDiscoverCancelled(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.yaml": discoverDeployment})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := patcher.Discover(ctx, root)
	require.ErrorIs(t, err, context.Canceled)
}

func TestDiscoverContainers(t *testing.T) {
	tests := []struct {
		name      string
		container string
		want      patcher.Container
	}{
		{
			name:      "image only",
			container: "image: vllm/vllm-openai:v0.8.5",
			want:      patcher.Container{VLLM: true},
		},
		{
			name:      "vllm serve as arguments, separate value",
			container: "image: registry/llm:1\ncommand: [vllm, serve, m]\nargs: [--gpu-memory-utilization, \"0.8\"]",
			want:      patcher.Container{VLLM: true, GPUMemoryUtilization: "0.8"},
		},
		{
			name:      "module entrypoint, equals form",
			container: "image: registry/llm:1\ncommand: [python3, -m, vllm.entrypoints.openai.api_server]\nargs: [--gpu-memory-utilization=0.7]",
			want:      patcher.Container{VLLM: true, GPUMemoryUtilization: "0.7"},
		},
		{
			name:      "underscore in a shell string",
			container: "image: registry/llm:1\ncommand: [sh, -c, \"exec vllm serve m --gpu_memory_utilization 0.6\"]",
			want:      patcher.Container{VLLM: true, GPUMemoryUtilization: "0.6"},
		},
		{
			name:      "block scalar with quoted value",
			container: "image: registry/llm:1\nargs:\n- |\n  vllm serve m \\\n    --gpu-memory-utilization='0.5'",
			want:      patcher.Container{VLLM: true, GPUMemoryUtilization: "0.5"},
		},
		{
			name:      "kv cache bytes",
			container: "image: vllm/vllm-openai\nargs: [--kv-cache-memory-bytes, \"1000\", --gpu-memory-utilization=0.9]",
			want:      patcher.Container{VLLM: true, GPUMemoryUtilization: "0.9", KVCacheMemoryBytes: true},
		},
		{
			name:      "the last of several wins, as in vLLM's argument parser",
			container: "image: vllm/vllm-openai\nargs: [--gpu-memory-utilization=0.9, --model, m, --gpu_memory_utilization, \"0.7\"]",
			want:      patcher.Container{VLLM: true, GPUMemoryUtilization: "0.7"},
		},
		{
			name:      "not vllm",
			container: "image: ghcr.io/huggingface/text-generation-inference:2.4\nargs: [--model-id, m]",
			want:      patcher.Container{},
		},
		{
			name:      "longer flag name is not the flag",
			container: "image: registry/x:1\nargs: [--gpu-memory-utilization-max=0.9]",
			want:      patcher.Container{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			body := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n" +
				indent(tc.container, "        ") + "\n"
			writeFiles(t, root, map[string]string{"d.yaml": body})
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			require.Empty(t, inv.Problems)
			require.Len(t, inv.Workloads, 1)
			got := inv.Workloads[0].Containers[0]
			got.Name, got.Image = "", ""
			require.Equal(t, tc.want, got)
		})
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// TestDiscoverSkipsHelmTemplates: a chart's templates are not YAML until
// rendered, and must not flood the run with parse problems; its other
// files, and a templates directory outside a chart, are read.
func TestDiscoverSkipsHelmTemplates(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"charts/chat/Chart.yaml":                "apiVersion: v2\nname: chat\nversion: 0.1.0\n",
		"charts/chat/values.yaml":               "replicas: 1\n",
		"charts/chat/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.gpu }}\n",
		"apps/templates/deployment.yaml":        discoverDeployment,
		"apps/templates/broken.yaml":            "key: [unclosed\n",
	})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	require.Equal(t, "apps/templates/deployment.yaml", inv.Workloads[0].File)
	require.Len(t, inv.Problems, 1)
	require.Equal(t, "apps/templates/broken.yaml", inv.Problems[0].File)
}

// TestDiscoverGPU: Whole counts GPUs as Kubernetes does (containers add up,
// init containers run alone), and Container is where KAI puts the GPU.
func TestDiscoverGPU(t *testing.T) {
	gpu := func(name, n string) string {
		return "      - name: " + name + "\n        image: x\n        resources: {limits: {nvidia.com/gpu: " + n + "}}\n"
	}
	plain := func(name string) string { return "      - name: " + name + "\n        image: x\n" }
	tests := []struct {
		name             string
		annotations      string
		containers, init string
		want             patcher.GPU
	}{
		{
			name:       "containers add up",
			containers: gpu("a", "1") + gpu("b", "2"),
			want:       patcher.GPU{Whole: 3, WholeContainers: []string{"a", "b"}},
		},
		{
			name:       "an init container runs alone",
			containers: gpu("a", "1") + gpu("b", "1"),
			init:       gpu("i", "4"),
			want:       patcher.GPU{Whole: 4, WholeContainers: []string{"a", "b", "i"}},
		},
		{
			name:       "init container smaller than the sum",
			containers: gpu("a", "2") + gpu("b", "1"),
			init:       gpu("i", "2"),
			want:       patcher.GPU{Whole: 3, WholeContainers: []string{"a", "b", "i"}},
		},
		{
			name:       "the GPU is the second container's",
			containers: plain("envoy") + gpu("vllm", "1"),
			want:       patcher.GPU{Whole: 1, WholeContainers: []string{"vllm"}, Container: "vllm"},
		},
		{
			name:       "zero is no GPU",
			containers: gpu("envoy", "0") + gpu("vllm", `"1"`),
			want:       patcher.GPU{Whole: 1, WholeContainers: []string{"vllm"}, Container: "vllm"},
		},
		{
			name:       "only an init container",
			containers: plain("app"),
			init:       gpu("warmup", "1"),
			want:       patcher.GPU{Whole: 1, WholeContainers: []string{"warmup"}, Container: "warmup"},
		},
		{
			name:        "a fraction goes to the first container",
			annotations: `{gpu-fraction: "0.5"}`,
			containers:  plain("envoy") + plain("vllm"),
			want:        patcher.GPU{Fraction: 0.5, FractionText: "0.5", Container: "envoy"},
		},
		{
			name:        "unless the pod names another",
			annotations: `{gpu-fraction: "0.5", gpu-fraction-container-name: vllm}`,
			containers:  plain("envoy") + plain("vllm"),
			want:        patcher.GPU{Fraction: 0.5, FractionText: "0.5", Container: "vllm"},
		},
		{
			name:        "the named container is missing",
			annotations: `{gpu-fraction: "0.5", gpu-fraction-container-name: model}`,
			containers:  plain("envoy"),
			want:        patcher.GPU{Fraction: 0.5, FractionText: "0.5"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n"
			if tc.annotations != "" {
				body += "    metadata:\n      annotations: " + tc.annotations + "\n"
			}
			body += "    spec:\n      containers:\n" + tc.containers
			if tc.init != "" {
				body += "      initContainers:\n" + tc.init
			}
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"d.yaml": body})
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			require.Empty(t, inv.Problems)
			require.Len(t, inv.Workloads, 1)
			tc.want.NumDevices = 1
			require.Equal(t, tc.want, inv.Workloads[0].GPU, body)
		})
	}
}

// A GPU request written through an alias is read through it, and marked:
// the editor will not change it.
func TestDiscoverGPUThroughAnAlias(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"d.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
x-gpu: &gpu
  limits:
    nvidia.com/gpu: 2
spec:
  template:
    spec:
      containers:
      - name: envoy
        image: envoyproxy/envoy:v1.31
      - name: vllm
        image: vllm/vllm-openai
        resources: *gpu
`})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	g := inv.Workloads[0].GPU
	require.Equal(t, int64(2), g.Whole)
	require.Equal(t, "vllm", g.Container)
	require.ErrorIs(t, g.Err, splice.ErrAlias)
	require.EqualError(t, g.Err, "anchor, alias or merge key on the edit path: line 16: the nvidia.com/gpu of spec.template.spec.containers[vllm] is written through it, so it is read but not edited")
}

// An annotation KAI would not read as written is reported with its line,
// never taken for "no GPU request" or read leniently.
func TestDiscoverGPUAnnotationsKAIRefuses(t *testing.T) {
	const head = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n"
	const tail = "    spec:\n      containers:\n      - name: c\n        image: x\n"
	tests := []struct {
		name string
		// body goes between head and tail: the spec and pod metadata.
		body    string
		wantErr error
		wantMsg string
	}{
		{
			name:    "empty",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: \"\"\n",
			wantErr: kai.ErrFraction,
			wantMsg: "line 9: invalid gpu-fraction: it is empty",
		},
		{
			name:    "null",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction:\n",
			wantErr: workload.ErrInvalidValue,
			wantMsg: "invalid value: line 9: gpu-fraction is null, not a string",
		},
		{
			name:    "a sequence",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: [\"0.5\"]\n",
			wantErr: workload.ErrInvalidValue,
			wantMsg: "invalid value: line 9: gpu-fraction is a sequence, not a string",
		},
		{
			name:    "a mapping",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: {v: \"0.5\"}\n",
			wantErr: workload.ErrInvalidValue,
			wantMsg: "invalid value: line 9: gpu-fraction is a mapping, not a string",
		},
		{
			name:    "an alias",
			body:    "x-f: &f \"0.5\"\nspec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: *f\n",
			wantErr: splice.ErrAlias,
			wantMsg: "anchor, alias or merge key on the edit path: line 10: gpu-fraction is written through an alias",
		},
		{
			name:    "annotations through an alias",
			body:    "x-a: &a {gpu-fraction: \"0.5\"}\nspec:\n  template:\n    metadata:\n      annotations: *a\n",
			wantErr: splice.ErrAlias,
			wantMsg: "anchor, alias or merge key on the edit path: line 9: gpu-fraction is written through an alias",
		},
		{
			name:    "a merge key",
			body:    "x-a: &a {gpu-fraction: \"0.5\"}\nspec:\n  template:\n    metadata:\n      annotations:\n        <<: *a\n",
			wantErr: splice.ErrAlias,
			wantMsg: "anchor, alias or merge key on the edit path: line 10: gpu-fraction is written through a << merge key",
		},
		{
			name:    "a leading blank",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: \" 0.5\"\n",
			wantErr: kai.ErrFraction,
			wantMsg: `line 9: invalid gpu-fraction " 0.5": KAI reads a decimal number, or one in scientific notation, without blanks`,
		},
		{
			name:    "a hex float",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: \"0x1p-1\"\n",
			wantErr: kai.ErrFraction,
			wantMsg: `line 9: invalid gpu-fraction "0x1p-1": KAI reads a decimal number, or one in scientific notation, without blanks`,
		},
		{
			name:    "gpu-memory with a blank",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-memory: \"2000 \"\n",
			wantErr: workload.ErrInvalidValue,
			wantMsg: `invalid value: line 9: gpu-memory "2000 " is not a whole number of MiB above 0`,
		},
		{
			name:    "gpu-memory a sequence",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-memory: [2000]\n",
			wantErr: workload.ErrInvalidValue,
			wantMsg: "invalid value: line 9: gpu-memory is a sequence, not a string",
		},
		{
			name:    "num-devices with a sign",
			body:    "spec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: \"0.5\"\n        gpu-fraction-num-devices: \"+2\"\n",
			wantErr: workload.ErrInvalidValue,
			wantMsg: `invalid value: line 10: gpu-fraction-num-devices "+2" is not a whole number above 0`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"d.yaml": head + tc.body + tail})
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			require.Len(t, inv.Workloads, 1)
			g := inv.Workloads[0].GPU
			require.ErrorIs(t, g.FractionErr, tc.wantErr)
			require.EqualError(t, g.FractionErr, tc.wantMsg)
		})
	}
}

// Sharing that does not reach the annotation is no reason to refuse it.
func TestDiscoverGPUAnnotationsBesideAnAlias(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"d.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
x-l: &l {app: x}
spec:
  template:
    metadata:
      labels: *l
      annotations:
        gpu-fraction: "0.5"
    spec:
      containers:
      - name: c
        image: x
`})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	g := inv.Workloads[0].GPU
	require.NoError(t, g.FractionErr)
	require.Equal(t, 0.5, g.Fraction)
}

// A name Kubernetes would refuse is a problem of its file, quoted so that
// nothing raw reaches a terminal: a line break and an escape sequence in
// a name would otherwise forge a plan row and colour the terminal.
func TestDiscoverRefusesInvalidNames(t *testing.T) {
	tests := []struct {
		name      string
		metadata  string
		want      string // the problem; "" when the workload is read
		wantNames int
	}{
		{
			name:     "a line break and an escape sequence",
			metadata: `  name: "chat\n\e[31minference/Deployment/x  0.50  0.99  upsize"`,
			want:     `d.yaml:1: metadata.name "chat\n\x1b[31minference/Deployment/x  0.50  0.99  upsize" is not a valid Kubernetes name: a name has lowercase letters, digits, '-' and '.', and starts and ends with a letter or digit`,
		},
		{
			name:     "upper case",
			metadata: "  name: Chat",
			want:     `d.yaml:1: metadata.name "Chat" is not a valid Kubernetes name: a name has lowercase letters, digits, '-' and '.', and starts and ends with a letter or digit`,
		},
		{
			name:     "ends with a dash",
			metadata: "  name: chat-",
			want:     `d.yaml:1: metadata.name "chat-" is not a valid Kubernetes name: a name has lowercase letters, digits, '-' and '.', and starts and ends with a letter or digit`,
		},
		{
			name:     "too long",
			metadata: "  name: " + strings.Repeat("a", 254),
			want:     `d.yaml:1: metadata.name "` + strings.Repeat("a", 254) + `" is not a valid Kubernetes name: it has 254 characters, a name at most 253`,
		},
		{
			name:     "a namespace with a dot",
			metadata: "  name: chat\n  namespace: ml.prod",
			want:     `d.yaml:1: metadata.namespace "ml.prod" is not a valid Kubernetes name: a namespace has lowercase letters, digits and '-', and starts and ends with a letter or digit`,
		},
		{
			name:     "a namespace too long",
			metadata: "  name: chat\n  namespace: " + strings.Repeat("n", 64),
			want:     `d.yaml:1: metadata.namespace "` + strings.Repeat("n", 64) + `" is not a valid Kubernetes name: it has 64 characters, a namespace at most 63`,
		},
		{name: "dots in a name", metadata: "  name: chat.v2\n  namespace: ml-prod", wantNames: 1},
		{name: "the longest name", metadata: "  name: " + strings.Repeat("a", 253), wantNames: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n" + tc.metadata + "\n"})
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			require.Len(t, inv.Workloads, tc.wantNames)
			if tc.want == "" {
				require.Empty(t, inv.Problems)
				return
			}
			require.Len(t, inv.Problems, 1)
			require.ErrorIs(t, inv.Problems[0], workload.ErrInvalidName)
			require.Equal(t, tc.want, inv.Problems[0].Error())
		})
	}
}

// TestDiscoverRefusesUnboundedInput: a file whose aliases expand without
// bound, or above the size cap, is a problem found fast, not a crash.
func TestDiscoverRefusesUnboundedInput(t *testing.T) {
	bomb := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bomb}\nspec:\n  a0: &a0 [x]\n"
	for i := 1; i <= 12; i++ {
		bomb += fmt.Sprintf("  a%d: &a%d [%s*a%d]\n", i, i, strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 8), i-1)
	}
	tests := []struct {
		name    string
		files   map[string]string
		problem string
		is      error
	}{
		{
			name: "an alias bomb", files: map[string]string{"bomb.yaml": bomb},
			problem: "bomb.yaml:11: invalid YAML: aliases expand beyond the limit: with alias *a5, aliases add more than 1000000 nodes",
			is:      splice.ErrInvalidYAML,
		},
		{
			name: "a file above the size cap", files: map[string]string{"huge.yaml": discoverDeployment + strings.Repeat("#", 8<<20)},
			problem: "huge.yaml: file too large: more than 8388608 bytes",
			is:      checkout.ErrTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			start := time.Now()
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			require.Less(t, time.Since(start), hang)
			require.Empty(t, inv.Workloads)
			require.Len(t, inv.Problems, 1)
			require.Equal(t, tt.problem, inv.Problems[0].Error())
			require.ErrorIs(t, inv.Problems[0], tt.is)
		})
	}
}

// TestDiscoverFiles: discovery consumes what the reader read, so policy
// loading can share it.
func TestDiscoverFiles(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"apps/chat.YAML": discoverDeployment, "out.yaml": "->/etc/hostname"})
	d, err := checkout.OpenDir(root)
	require.NoError(t, err)
	defer d.Close()
	files, err := checkout.Read(context.Background(), d, checkout.Options{})
	require.NoError(t, err)
	inv, err := patcher.DiscoverFiles(context.Background(), files)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	require.Equal(t, "apps/chat.YAML", inv.Workloads[0].File)
	require.Len(t, inv.Problems, 1)
	require.ErrorIs(t, inv.Problems[0], checkout.ErrOutsideRoot)
}

// TestDiscoverKinds: the kinds that are sized are read from their own pod
// templates; a LeaderWorkerSet whose leader and workers ask for different
// GPUs is read but left alone (GPU.Err), and a Rollout that runs the
// template of a Deployment the repository does not hold is reported as
// unsupported, saying why.
func TestDiscoverKinds(t *testing.T) {
	inv, err := patcher.Discover(context.Background(), filepath.Join("testdata", "golden", "kinds", "original"))
	require.NoError(t, err)
	require.Empty(t, inv.Problems)
	got := map[string]patcher.Workload{}
	for _, w := range inv.Workloads {
		got[w.Ref.Kind+"/"+w.Ref.Name] = w
	}
	require.Len(t, got, 4)
	for _, tc := range []struct {
		key, fraction, queue, utilization string
	}{
		{key: "StatefulSet/embed", fraction: "0.5", queue: "team-a", utilization: "0.45"},
		{key: "Rollout/chat", fraction: "0.25", queue: "team-b"},
		{key: "LeaderWorkerSet/llama", fraction: "0.8"},
	} {
		w, ok := got[tc.key]
		require.True(t, ok, tc.key)
		require.Equal(t, tc.fraction, w.GPU.FractionText, tc.key)
		require.Equal(t, tc.queue, w.Queue, tc.key)
		require.Equal(t, "kai-scheduler", w.SchedulerName, tc.key)
		require.NoError(t, w.GPU.Err, tc.key)
		require.Len(t, w.Containers, 1, tc.key)
		require.True(t, w.Containers[0].VLLM, tc.key)
		require.Equal(t, tc.utilization, w.Containers[0].GPUMemoryUtilization, tc.key)
	}
	mis := got["LeaderWorkerSet/mismatched"]
	require.ErrorIs(t, mis.GPU.Err, workload.ErrGroupMismatch)
	require.ErrorContains(t, mis.GPU.Err, "nvidia.com/gpu 1 against nvidia.com/gpu 2")
	require.Len(t, inv.Unsupported, 1)
	u := inv.Unsupported[0]
	require.Equal(t, usage.Ref{Kind: "Rollout", Namespace: "inference", Name: "by-ref"}, u.Ref)
	require.Equal(t, "spec.workloadRef names Deployment by-ref, which is not in the repository: its pod template cannot be edited here", u.Why)
}

// TestDiscoverInferenceService: an InferenceService is read from its
// predictor: the GPU request from spec.predictor.annotations and the
// containers (model first, as kserve-container), the queue from the
// object's labels or the predictor's, the scheduler from the inlined pod
// spec, vLLM from the image or from the Hugging Face runtime. KAI's
// annotation on the object, and workers that ask for GPUs, leave it
// alone; KFServing's older API is unsupported, saying so.
func TestDiscoverInferenceService(t *testing.T) {
	inv, err := patcher.Discover(context.Background(), filepath.Join("testdata", "golden", "inferenceservice", "original"))
	require.NoError(t, err)
	require.Empty(t, inv.Problems)
	require.Len(t, inv.Unsupported, 1)
	require.Equal(t, usage.Ref{Kind: "InferenceService", Namespace: "inference", Name: "legacy"}, inv.Unsupported[0].Ref)
	require.Equal(t, "in API group serving.kserve.io only, whose fields are the ones read", inv.Unsupported[0].Why)
	got := map[string]patcher.Workload{}
	for _, w := range inv.Workloads {
		require.Equal(t, "InferenceService", w.Ref.Kind)
		got[w.Ref.Name] = w
	}
	require.Len(t, got, 6)
	for _, tc := range []struct {
		name, fraction, queue, scheduler, container, utilization string
		whole                                                    int64
		vllm                                                     bool
		containers                                               []string
	}{
		{name: "llama", whole: 1, queue: "team-a", scheduler: "kai-scheduler", container: "kserve-container", vllm: true, utilization: "0.9",
			containers: []string{"kserve-container"}},
		{name: "chat", fraction: "0.5", queue: "team-b", scheduler: "kai-scheduler", container: "kserve-container", vllm: true, utilization: "0.45",
			containers: []string{"kserve-container"}},
		{name: "classifier", whole: 1, container: "kserve-container", containers: []string{"kserve-container"}},
		{name: "summarizer", whole: 1, container: "kserve-container", vllm: true, containers: []string{"kserve-container"}},
	} {
		w := got[tc.name]
		require.Equal(t, tc.fraction, w.GPU.FractionText, tc.name)
		require.Equal(t, tc.whole, w.GPU.Whole, tc.name)
		require.Equal(t, tc.queue, w.Queue, tc.name)
		require.Equal(t, tc.scheduler, w.SchedulerName, tc.name)
		require.Equal(t, tc.container, w.GPU.Container, tc.name)
		require.NoError(t, w.GPU.Err, tc.name)
		require.NoError(t, w.GPU.FractionErr, tc.name)
		var names []string
		for _, c := range w.Containers {
			names = append(names, c.Name)
		}
		require.Equal(t, tc.containers, names, tc.name)
		require.Equal(t, tc.vllm, w.Containers[0].VLLM, tc.name)
		require.Equal(t, tc.utilization, w.Containers[0].GPUMemoryUtilization, tc.name)
	}
	require.Equal(t, "true", got["chat"].PodAnnotations["prometheus.io/scrape"])
	require.ErrorIs(t, got["shared"].GPU.FractionErr, workload.ErrObjectAnnotation)
	require.ErrorContains(t, got["shared"].GPU.FractionErr, "spec.predictor.annotations")
	require.ErrorIs(t, got["multinode"].GPU.Err, workload.ErrUnsizedPods)
	require.ErrorContains(t, got["multinode"].GPU.Err, "spec.predictor.workerSpec")
	require.Equal(t, int64(2), got["multinode"].GPU.Whole)
}

// TestDiscoverDynamo: a DynamoGraphDeployment is one workload per
// service, named as the operator names the service's Deployment, read
// where the operator takes the pods' fields from; a multinode service is
// left alone. What Kustomize builds and charts render is read alike
// (TestKustomizeGolden, TestHelmGolden).
func TestDiscoverDynamo(t *testing.T) {
	inv, err := patcher.Discover(context.Background(), filepath.Join("testdata", "golden", "dynamo", "original"))
	require.NoError(t, err)
	require.Empty(t, inv.Problems)
	require.Empty(t, inv.Unsupported)
	var names []string
	got := map[string]patcher.Workload{}
	for _, w := range inv.Workloads {
		require.Equal(t, "DynamoGraphDeployment", w.Ref.Kind)
		require.Equal(t, "inference", w.Ref.Namespace)
		names = append(names, w.Ref.Name)
		got[w.Ref.Name] = w
	}
	require.Equal(t, []string{"llama-disagg-frontend", "llama-disagg-vllmprefillworker", "llama-disagg-vllmdecodeworker", "big-worker"}, names)

	front := got["llama-disagg-frontend"]
	require.Zero(t, front.GPU.Whole)
	require.Empty(t, front.GPU.FractionText)
	require.NoError(t, front.GPU.Err)
	require.Equal(t, "main", front.Containers[0].Name)

	prefill := got["llama-disagg-vllmprefillworker"]
	require.Equal(t, int64(1), prefill.GPU.Whole)
	require.Equal(t, []string{"main"}, prefill.GPU.WholeContainers)
	require.Equal(t, "main", prefill.GPU.Container)
	require.True(t, prefill.Containers[0].VLLM)
	require.Equal(t, "0.90", prefill.Containers[0].GPUMemoryUtilization)
	require.NoError(t, prefill.GPU.Err)

	decode := got["llama-disagg-vllmdecodeworker"]
	require.Equal(t, "0.5", decode.GPU.FractionText)
	require.Zero(t, decode.GPU.Whole)
	require.Equal(t, "kai-scheduler", decode.SchedulerName)
	require.Equal(t, "llm", decode.PodLabels["team"])
	require.Equal(t, "0.45", decode.Containers[0].GPUMemoryUtilization)

	big := got["big-worker"]
	require.Equal(t, int64(8), big.GPU.Whole)
	require.ErrorIs(t, big.GPU.Err, workload.ErrUnsizedPods)
	require.ErrorContains(t, big.GPU.Err, "spec.services.worker.multinode")
}

// TestDiscoverDynamoBadGPUCount: a gpu count that is not a whole number
// is an error, never "no GPU".
func TestDiscoverDynamoBadGPUCount(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dgd.yaml"), []byte(`apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: g
spec:
  services:
    Worker:
      resources:
        limits:
          gpu: half
`), 0o600))
	inv, err := patcher.Discover(context.Background(), dir)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	require.Equal(t, "g-worker", inv.Workloads[0].Ref.Name)
	require.ErrorIs(t, inv.Workloads[0].GPU.Err, workload.ErrInvalidValue)
}

// TestDiscoverDynamoServiceAnnotations: KAI's annotations in a service's
// own annotations reach its pods under Grove and not through a
// DynamoComponentDeployment (operator v0.5.1), so the service is read but
// left alone, the error naming the line and where to write them instead.
func TestDiscoverDynamoServiceAnnotations(t *testing.T) {
	tests := []struct {
		name, annotations string
		line              int
	}{
		{name: "gpu-fraction", annotations: "gpu-fraction: \"0.5\"", line: 9},
		{name: "gpu-memory", annotations: "gpu-memory: \"4096\"", line: 9},
		{name: "after another", annotations: "team: llm\n        gpu-fraction-num-devices: \"2\"", line: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "dgd.yaml"), []byte(`apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: g
spec:
  services:
    Worker:
      annotations:
        `+tt.annotations+`
      extraPodMetadata:
        annotations:
          gpu-fraction: "0.5"
`), 0o600))
			inv, err := patcher.Discover(context.Background(), dir)
			require.NoError(t, err)
			require.Len(t, inv.Workloads, 1)
			w := inv.Workloads[0]
			require.Equal(t, "0.5", w.GPU.FractionText)
			require.ErrorIs(t, w.GPU.Err, workload.ErrServiceAnnotation)
			require.ErrorContains(t, w.GPU.Err, fmt.Sprintf("line %d: ", tt.line))
			require.ErrorContains(t, w.GPU.Err, "is in spec.services.Worker.annotations; it is read but not edited: write it in spec.services.Worker.extraPodMetadata.annotations")
		})
	}
	// Other annotations of the service are the operator's own business.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dgd.yaml"), []byte("apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: g}\nspec: {services: {Worker: {annotations: {nvidia.com/enable-metrics: \"false\"}}}}\n"), 0o600))
	inv, err := patcher.Discover(context.Background(), dir)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	require.NoError(t, inv.Workloads[0].GPU.Err)
}

// TestDiscoverDynamoV1beta1: a graph of the version later operators
// store (nvidia.com/v1beta1, components with pod templates) is not read,
// and it is reported, never passed over.
func TestDiscoverDynamoV1beta1(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dgd.yaml"), []byte(`apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: g
  namespace: inference
spec:
  components:
    - name: Worker
      podTemplate:
        metadata:
          annotations:
            gpu-fraction: "0.5"
`), 0o600))
	inv, err := patcher.Discover(context.Background(), dir)
	require.NoError(t, err)
	require.Empty(t, inv.Workloads)
	require.Len(t, inv.Unsupported, 1)
	u := inv.Unsupported[0]
	require.Equal(t, usage.Ref{Kind: "DynamoGraphDeployment", Namespace: "inference", Name: "g"}, u.Ref)
	require.True(t, u.GPU)
	require.Equal(t, "nvidia.com/v1alpha1 only, whose spec.services are read; nvidia.com/v1beta1 is not", u.Why)
}

// TestDynamoServiceOfGPUsOnly: a service that says nothing but its whole
// GPUs (as a Kustomize patch may) cannot lose them by a byte splice
// without leaving no mapping: the edit is refused by name, nothing is
// written.
func TestDynamoServiceOfGPUsOnly(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dgd.yaml"), []byte(`apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: g
  namespace: inference
spec:
  services:
    Worker:
      resources:
        limits:
          gpu: "1"
`), 0o600))
	ctx := context.Background()
	inv, err := patcher.Discover(ctx, dir)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	res, err := patcher.Apply(ctx, dir, inv, []patcher.Edit{{Workload: inv.Workloads[0].Ref, File: "dgd.yaml", Reason: "test",
		Ops: []workload.Op{patcher.RemoveWholeGPUs(), patcher.SetGPUFraction("0.5")}}})
	require.NoError(t, err)
	require.Empty(t, res.Files)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, splice.ErrUnsupported)
	require.ErrorContains(t, res.Refused[0].Err, "dgd.yaml:9: spec.services.Worker.resources: ")
	require.ErrorContains(t, res.Refused[0].Err, "it is the only field of its mapping, and removing it would leave an empty mapping, which is not written; edit it by hand")
}
