package patcher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

const applyDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
      annotations:
        gpu-fraction: "0.5"
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.8.5
        args: ["--model", "m", "--gpu-memory-utilization=0.45"]
`

// applyOne writes files into a fresh root, discovers it and applies ops to
// the Deployment named app.
func applyOne(t *testing.T, files map[string]string, ops ...workload.Op) (string, *patcher.Result) {
	t.Helper()
	root := t.TempDir()
	writeFiles(t, root, files)
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	res, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{{Workload: dep("", "app"), Reason: "test", Ops: ops}})
	require.NoError(t, err)
	return root, res
}

// writeResult writes the files res changes under root, each as
// changes.WriteFiles writes it.
func writeResult(root string, res *patcher.Result) error {
	return errors.Join(changes.WriteFiles(root, res.Files)...)
}

func TestApplyRefusals(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		ops      []workload.Op
		wantErr  error
		wantMsg  string
	}{
		{
			name: "fraction of one", ops: []workload.Op{patcher.SetGPUFraction("1")}, wantErr: workload.ErrInvalidValue,
			wantMsg: `d.yaml:10: spec.template.metadata.annotations.gpu-fraction: invalid value: gpu-fraction "1" must be a decimal from 0.01 to 0.99 with at most two places`,
		},
		{name: "fraction with three places", ops: []workload.Op{patcher.SetGPUFraction("0.125")}, wantErr: workload.ErrInvalidValue},
		{name: "fraction below 0.01", ops: []workload.Op{patcher.SetGPUFraction("0.005")}, wantErr: workload.ErrInvalidValue},
		{name: "fraction 0.00", ops: []workload.Op{patcher.SetGPUFraction("0.00")}, wantErr: workload.ErrInvalidValue},
		{name: "fraction in scientific notation", ops: []workload.Op{patcher.SetGPUFraction("5e-1")}, wantErr: workload.ErrInvalidValue},
		{
			name:     "fraction next to gpu-memory",
			manifest: strings.Replace(applyDeployment, `gpu-fraction: "0.5"`, `gpu-memory: "2000"`, 1),
			ops:      []workload.Op{patcher.SetGPUFraction("0.3")},
			wantErr:  workload.ErrInvalidValue,
			wantMsg:  `d.yaml:14: spec.template.metadata.annotations.gpu-fraction: invalid value: the pod asks for gpu-memory, which KAI does not take together with gpu-fraction (remove it first)`,
		},
		{
			name:     "fraction next to a whole GPU",
			manifest: applyDeployment + "        resources:\n          limits: {cpu: 1}\n          requests: {nvidia.com/gpu: 1}\n",
			ops:      []workload.Op{patcher.SetGPUFraction("0.3")},
			wantErr:  workload.ErrInvalidValue,
			wantMsg:  `d.yaml:22: spec.template.spec.containers[vllm].resources.requests.nvidia.com/gpu: invalid value: next to the pod's gpu-fraction, which KAI refuses (RemoveWholeGPUs removes it)`,
		},
		{
			name:     "fraction next to an init container's whole GPU",
			manifest: applyDeployment + "      initContainers:\n      - name: warmup\n        image: x\n        resources: {limits: {nvidia.com/gpu: 1}}\n",
			ops:      []workload.Op{patcher.SetVLLMMemoryUtilization("0.3")},
			wantErr:  workload.ErrInvalidValue,
			wantMsg:  `d.yaml:23: spec.template.spec.initContainers[warmup].resources.limits.nvidia.com/gpu: invalid value: next to the pod's gpu-fraction, which KAI refuses (RemoveWholeGPUs removes it)`,
		},
		{
			name:     "whole GPUs next to gpu-memory",
			manifest: strings.Replace(applyDeployment, `gpu-fraction: "0.5"`, `gpu-memory: "2000"`, 1),
			ops:      []workload.Op{patcher.SetWholeGPUs(1)},
			wantErr:  workload.ErrInvalidValue,
		},
		{name: "fraction not a number", ops: []workload.Op{patcher.SetGPUFraction("half")}, wantErr: workload.ErrInvalidValue},
		{name: "fraction NaN", ops: []workload.Op{patcher.SetGPUFraction("NaN")}, wantErr: workload.ErrInvalidValue},
		{name: "fraction zero", ops: []workload.Op{patcher.SetGPUFraction("0.0")}, wantErr: workload.ErrInvalidValue},
		{name: "fraction negative", ops: []workload.Op{patcher.SetGPUFraction("-0.5")}, wantErr: workload.ErrInvalidValue},
		{name: "utilization above one", ops: []workload.Op{patcher.SetVLLMMemoryUtilization("1.5")}, wantErr: workload.ErrInvalidValue},
		{name: "scheduler name", ops: []workload.Op{patcher.SetSchedulerName("KAI Scheduler")}, wantErr: workload.ErrInvalidValue},
		{name: "whole GPUs zero", ops: []workload.Op{patcher.SetWholeGPUs(0)}, wantErr: workload.ErrInvalidValue},
		{
			name: "label the selector matches on", ops: []workload.Op{patcher.SetPodLabel("app", "other")}, wantErr: workload.ErrInvalidValue,
			wantMsg: "d.yaml:8: spec.template.metadata.labels.app: invalid value: the selector matches on app=app; changing it would orphan the pods",
		},
		{
			name:     "label a selector expression uses",
			manifest: strings.Replace(applyDeployment, "    matchLabels:\n      app: app\n", "    matchExpressions:\n    - {key: tier, operator: In, values: [gpu]}\n", 1),
			ops:      []workload.Op{patcher.SetPodLabel("tier", "cpu")},
			wantErr:  workload.ErrInvalidValue,
			wantMsg:  "d.yaml:8: spec.template.metadata.labels.tier: invalid value: the selector's matchExpressions use the label tier; changing it could orphan the pods",
		},
		{name: "workload label value", ops: []workload.Op{patcher.SetWorkloadLabel("kai.scheduler/queue", "no spaces please")}, wantErr: workload.ErrInvalidValue},
		{name: "workload label key", ops: []workload.Op{patcher.SetWorkloadLabel("", "q")}, wantErr: workload.ErrInvalidValue},
		{
			name:     "atomic: a bad op undoes the good ones",
			ops:      []workload.Op{patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.2"), patcher.SetGPUFraction("7")},
			wantErr:  workload.ErrInvalidValue,
			manifest: applyDeployment,
		},
		{
			name:     "anchor on the path names its line",
			manifest: strings.Replace(applyDeployment, "      annotations:\n", "      annotations: &a\n", 1),
			ops:      []workload.Op{patcher.SetGPUFraction("0.3")},
			wantErr:  splice.ErrAlias,
			wantMsg:  "d.yaml:13: spec.template.metadata.annotations.gpu-fraction: anchor, alias or merge key on the edit path: anchor &a",
		},
		{
			name:     "anchor on a container",
			manifest: strings.Replace(applyDeployment, "      - name: vllm\n", "      - &c\n        name: vllm\n", 1),
			ops:      []workload.Op{patcher.SetVLLMMemoryUtilization("0.3")},
			wantErr:  splice.ErrAlias,
		},
		{
			name:     "duplicate key",
			manifest: strings.Replace(applyDeployment, "        app: app\n      annotations", "        app: app\n        app: app\n      annotations", 1),
			ops:      []workload.Op{patcher.SetGPUFraction("0.3")},
			wantErr:  splice.ErrDuplicateKey,
			wantMsg:  "d.yaml:13: app: duplicate mapping key",
		},
		{
			name:     "helm template",
			manifest: strings.Replace(applyDeployment, `gpu-fraction: "0.5"`, `gpu-fraction: "{{ .Values.fraction }}"`, 1),
			ops:      []workload.Op{patcher.SetGPUFraction("0.3")},
			wantErr:  splice.ErrTemplate,
			wantMsg:  `d.yaml:14: spec.template.metadata.annotations.gpu-fraction: value is a template expression: "{{ .Values.fraction }}"`,
		},
		{
			name:     "GPU container named but missing",
			manifest: strings.Replace(applyDeployment, `gpu-fraction: "0.5"`, `gpu-fraction-container-name: model`, 1),
			ops:      []workload.Op{patcher.SetWholeGPUs(1)},
			wantErr:  workload.ErrNotFound,
		},
		{
			name:     "pod template is not a mapping",
			manifest: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template: []\n",
			ops:      []workload.Op{patcher.SetGPUFraction("0.3")},
			wantErr:  splice.ErrUnsupported,
			wantMsg:  "d.yaml:6: spec.template: unsupported source layout: no pod template mapping",
		},
		{
			name:     "lone CR line breaks",
			manifest: strings.ReplaceAll(applyDeployment, "\n", "\r"),
			ops:      []workload.Op{patcher.SetGPUFraction("0.3")},
			wantErr:  splice.ErrUnsupported,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.manifest
			if m == "" {
				m = strings.Replace(applyDeployment, `gpu-fraction: "0.5"`, `team: ml`, 1)
			}
			_, res := applyOne(t, map[string]string{"d.yaml": m}, tc.ops...)
			require.Empty(t, res.Files)
			require.Len(t, res.Refused, 1)
			require.ErrorIs(t, res.Refused[0].Err, tc.wantErr)
			if tc.wantMsg != "" {
				require.Equal(t, tc.wantMsg, res.Refused[0].Err.Error())
			}
		})
	}
}

// Keys written in the explicit `? key` form are not at the start of their
// line, so a key inserted after them gets the wrong indentation. The splice
// is wrong, and verification refuses it instead of writing it.
func TestApplyVerificationRefusesWhatTheSplicerGotWrong(t *testing.T) {
	m := strings.Replace(applyDeployment, "        gpu-fraction: \"0.5\"\n", "        ? team\n        : ml\n", 1)
	_, res := applyOne(t, map[string]string{"d.yaml": m}, patcher.SetGPUFraction("0.3"))
	require.Empty(t, res.Files)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, splice.ErrVerify)
	require.Contains(t, res.Refused[0].Err.Error(), "d.yaml:16: edit verification failed: the result does not parse")
}

// A `|+` block keeps its trailing blank lines, and a `|` block on the last
// line of a file without a final newline would gain one: a line inserted
// after either would change it, so the new key goes before the last one.
func TestApplyBlockScalarAtTheEnd(t *testing.T) {
	keep := strings.Replace(applyDeployment, "        gpu-fraction: \"0.5\"\n", "        note: |+\n          kept\n\n", 1)
	_, res := applyOne(t, map[string]string{"d.yaml": keep}, patcher.SetGPUFraction("0.3"))
	require.Empty(t, res.Refused)
	require.Contains(t, string(res.Files[0].New), "      annotations:\n        gpu-fraction: \"0.3\"\n        note: |+\n          kept\n\n    spec:")

	eof := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: x\n        args:\n        - |\n          run"
	_, res = applyOne(t, map[string]string{"d.yaml": eof}, patcher.SetSchedulerName("kai-scheduler"))
	require.Empty(t, res.Refused)
	require.Contains(t, string(res.Files[0].New), "    spec:\n      schedulerName: kai-scheduler\n      containers:\n")
}

// Columns count runes; offsets are bytes. Multibyte text before a value on
// its line must not shift the splice.
func TestApplyMultibyteBeforeTheValue(t *testing.T) {
	m := strings.Replace(applyDeployment, "      annotations:\n        gpu-fraction: \"0.5\"\n",
		"      annotations: {équipe: \"données\", 模型: 千问, gpu-fraction: \"0.5\"}\n", 1)
	m = strings.Replace(m, `args: ["--model", "m",`, `args: ["--model", "模型/千问-7B", "--served-model-name", "ünïcødé",`, 1)
	_, res := applyOne(t, map[string]string{"d.yaml": m}, patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27"))
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	want := strings.Replace(strings.Replace(m, `gpu-fraction: "0.5"}`, `gpu-fraction: "0.3"}`, 1), "--gpu-memory-utilization=0.45", "--gpu-memory-utilization=0.27", 1)
	require.Equal(t, want, string(res.Files[0].New))
}

// Invariant 4: the same inputs twice, and the second run writes nothing.
func TestApplyIdempotent(t *testing.T) {
	ops := []workload.Op{
		patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27"), patcher.SetSchedulerName("kai-scheduler"),
		patcher.SetPodLabel("kai.scheduler/queue", "q"), patcher.RemoveWholeGPUs(),
	}
	root, res := applyOne(t, map[string]string{"d.yaml": applyDeployment}, ops...)
	require.Len(t, res.Files, 1)
	require.NoError(t, writeResult(root, res))

	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	again, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{{Workload: dep("", "app"), Ops: ops}})
	require.NoError(t, err)
	require.False(t, again.Changed())
	require.Empty(t, again.Refused)
}

func TestApplyNeverWrites(t *testing.T) {
	root, res := applyOne(t, map[string]string{"d.yaml": applyDeployment}, patcher.SetGPUFraction("0.3"))
	require.Len(t, res.Files, 1)
	b, err := os.ReadFile(filepath.Join(root, "d.yaml"))
	require.NoError(t, err)
	require.Equal(t, applyDeployment, string(b))
}

// A file discovery held is edited from the bytes discovery read, which the
// plan's decisions came from; one changed on disk since is then not
// written over.
func TestApplyFileChangedSinceDiscover(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"d.yaml": applyDeployment})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	renamed := strings.Replace(applyDeployment, "name: app", "name: renamed", 1)
	writeFiles(t, root, map[string]string{"d.yaml": renamed})
	res, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{{Workload: dep("", "app"), Ops: []workload.Op{patcher.SetGPUFraction("0.3")}}})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	require.Equal(t, applyDeployment, string(res.Files[0].Old), "edited from what discovery read")
	require.ErrorIs(t, writeResult(root, res), changes.ErrChangedOnDisk)
	b, err := os.ReadFile(filepath.Join(root, "d.yaml"))
	require.NoError(t, err)
	require.Equal(t, renamed, string(b), "left as it is")

	// A second Apply has nothing held: it reads the file as it is.
	res, err = patcher.Apply(context.Background(), root, inv, []patcher.Edit{{Workload: dep("", "app"), Ops: []workload.Op{patcher.SetGPUFraction("0.3")}}})
	require.NoError(t, err)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, workload.ErrNotFound)
}

// Discover leaves Namespace empty when metadata.namespace is absent and
// the caller fills in its default; Apply must still find the document.
func TestApplyDefaultedNamespace(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"d.yaml": applyDeployment + "---\n" + strings.Replace(applyDeployment, "  name: app\n", "  name: app\n  namespace: other\n", 1)})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 2)
	inv.Workloads[0].Ref.Namespace = "default"
	res, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{
		{Workload: dep("default", "app"), Ops: []workload.Op{patcher.SetGPUFraction("0.3")}},
		{Workload: dep("other", "app"), Ops: []workload.Op{patcher.SetGPUFraction("0.2")}},
	})
	require.NoError(t, err)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	require.Equal(t, 1, strings.Count(string(res.Files[0].New), `gpu-fraction: "0.3"`))
	require.Equal(t, 1, strings.Count(string(res.Files[0].New), `gpu-fraction: "0.2"`))
	require.Less(t, strings.Index(string(res.Files[0].New), `"0.3"`), strings.Index(string(res.Files[0].New), `"0.2"`))
}

// Refusals and notes name lines of the file as it is, even after an
// earlier edit of the same file added lines above them.
func TestApplyLinesOfTheOriginalFile(t *testing.T) {
	doc := func(name, podMeta string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + name +
			"\nspec:\n  template:\n" + podMeta + "    spec:\n      containers: [{name: c, image: x}]\n"
	}
	src := doc("a", "") + "---\n" + doc("b", "") + "---\n" + doc("c", "    metadata:\n      annotations: &shared {team: ml}\n")
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"d.yaml": src})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	res, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{
		{Workload: dep("", "a"), Ops: []workload.Op{patcher.SetGPUFraction("0.5")}},
		{Workload: dep("", "c"), Ops: []workload.Op{patcher.SetGPUFraction("0.5")}},
	})
	require.NoError(t, err)
	require.Len(t, res.Files, 1)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, splice.ErrAlias)
	require.Contains(t, res.Refused[0].Err.Error(), "d.yaml:26: ")
}

func TestApplySameRefInTwoFiles(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"base/d.yaml": applyDeployment, "overlay/d.yaml": applyDeployment})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	ops := []workload.Op{patcher.SetGPUFraction("0.3")}
	res, err := patcher.Apply(context.Background(), root, inv, []patcher.Edit{
		{Workload: dep("", "app"), Ops: ops},
		{Workload: dep("", "app"), File: "overlay/d.yaml", Ops: ops},
	})
	require.NoError(t, err)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, workload.ErrAmbiguous)
	require.Contains(t, res.Refused[0].Err.Error(), "base/d.yaml:1, overlay/d.yaml:1")
	require.Len(t, res.Files, 1)
	require.Equal(t, "overlay/d.yaml", res.Files[0].Path)
}

// One inventory serves change set after change set, each Apply finding
// its workloads as the first did; a copy with other workloads (the
// default namespace filled in, as plan does) finds its own, and the
// inventory it was copied from still finds its.
func TestApplyChangeSetsAfterEachOther(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"base/d.yaml": applyDeployment, "overlay/d.yaml": applyDeployment,
		"other/d.yaml": strings.Replace(applyDeployment, "name: app", "name: other", 1)})
	ctx := context.Background()
	inv, err := patcher.Discover(ctx, root)
	require.NoError(t, err)
	ops := []workload.Op{patcher.SetGPUFraction("0.3")}
	apply := func(inv *patcher.Inventory, e patcher.Edit) *patcher.Result {
		t.Helper()
		res, err := patcher.Apply(ctx, root, inv, []patcher.Edit{e})
		require.NoError(t, err)
		return res
	}
	for range 2 {
		res := apply(inv, patcher.Edit{Workload: dep("", "app"), File: "overlay/d.yaml", Ops: ops})
		require.Empty(t, res.Refused)
		require.Equal(t, "overlay/d.yaml", res.Files[0].Path)
		res = apply(inv, patcher.Edit{Workload: dep("", "app"), Ops: ops})
		require.ErrorIs(t, res.Refused[0].Err, workload.ErrAmbiguous)
		res = apply(inv, patcher.Edit{Workload: dep("", "other"), Ops: ops})
		require.Empty(t, res.Refused)
		require.Equal(t, "other/d.yaml", res.Files[0].Path)
	}

	withNS := *inv
	withNS.Workloads = slices.Clone(inv.Workloads)
	for i := range withNS.Workloads {
		withNS.Workloads[i].Ref.Namespace = "serving"
	}
	res := apply(&withNS, patcher.Edit{Workload: dep("serving", "other"), Ops: ops})
	require.Empty(t, res.Refused)
	require.Equal(t, "other/d.yaml", res.Files[0].Path)
	res = apply(&withNS, patcher.Edit{Workload: dep("", "other"), Ops: ops})
	require.ErrorIs(t, res.Refused[0].Err, workload.ErrNotFound)

	res = apply(inv, patcher.Edit{Workload: dep("", "other"), Ops: ops})
	require.Empty(t, res.Refused)
	res = apply(inv, patcher.Edit{Workload: dep("serving", "other"), Ops: ops})
	require.ErrorIs(t, res.Refused[0].Err, workload.ErrNotFound)
}

func TestApplyChanges(t *testing.T) {
	_, res := applyOne(t, map[string]string{"d.yaml": applyDeployment},
		patcher.SetGPUFraction("0.3"), patcher.SetVLLMMemoryUtilization("0.27"), patcher.SetSchedulerName("kai-scheduler"))
	require.Len(t, res.Files, 1)
	ref := dep("", "app")
	require.Equal(t, []changes.Change{
		{Workload: ref, Field: "spec.template.metadata.annotations.gpu-fraction", Old: "0.5", New: "0.3", Reason: "test"},
		{Workload: ref, Field: "spec.template.spec.containers[vllm].args", Old: "0.45", New: "0.27", Reason: "test"},
		{Workload: ref, Field: "spec.template.spec.schedulerName", Old: "", New: "kai-scheduler", Reason: "test"},
	}, res.Files[0].Changes)
}

func TestWrite(t *testing.T) {
	// 0o664 is what a umask of 022 takes a bit from when the temporary
	// file is created: the replacement must still have it.
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{{"d.yaml", 0o600}, {"apps/team/d.yaml", 0o664}} {
		t.Run(tc.path, func(t *testing.T) {
			root, res := applyOne(t, map[string]string{tc.path: applyDeployment}, patcher.SetGPUFraction("0.3"))
			p := filepath.Join(root, tc.path)
			require.NoError(t, os.Chmod(p, tc.mode))
			require.NoError(t, writeResult(root, res))

			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.Equal(t, string(res.Files[0].New), string(b))
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.Equal(t, tc.mode, fi.Mode().Perm())
			es, err := os.ReadDir(filepath.Dir(p))
			require.NoError(t, err)
			require.Len(t, es, 1, "no temporary file left behind")

			// The file is now New, not Old: writing the same result again is refused.
			require.ErrorContains(t, writeResult(root, res), "changed since it was read")
		})
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{
			name: "no final newline",
			old:  "a: 1\nb: 2",
			new:  "a: 1\nb: 2\nc: 3",
			want: "--- a/f.yaml\n+++ b/f.yaml\n@@ -1,2 +1,3 @@\n a: 1\n-b: 2\n\\ No newline at end of file\n+b: 2\n+c: 3\n\\ No newline at end of file\n",
		},
		{
			name: "CRLF kept",
			old:  "a: 1\r\nb: 2\r\n",
			new:  "a: 1\r\nb: 3\r\n",
			want: "--- a/f.yaml\n+++ b/f.yaml\n@@ -1,2 +1,2 @@\n a: 1\r\n-b: 2\r\n+b: 3\r\n",
		},
		{
			name: "context of three lines",
			old:  "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			new:  "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			want: "--- a/f.yaml\n+++ b/f.yaml\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := patcher.File{Path: "f.yaml", Old: []byte(tc.old), New: []byte(tc.new)}
			require.Equal(t, tc.want, f.Diff())
		})
	}
}

// A file name that would break the diff's header lines or reach the
// terminal raw is quoted, as git does with core.quotePath.
func TestDiffQuotesFileNames(t *testing.T) {
	tests := []struct {
		name, path, header string
	}{
		{name: "plain", path: "apps/chat.yaml", header: "--- a/apps/chat.yaml\n+++ b/apps/chat.yaml\n"},
		{name: "not ASCII but printable", path: "apps/café.yaml", header: "--- a/apps/café.yaml\n+++ b/apps/café.yaml\n"},
		{
			name:   "a line break that would forge a header",
			path:   "x.yaml\n+++ b/evil.yaml",
			header: `--- "a/x.yaml\n+++ b/evil.yaml"` + "\n" + `+++ "b/x.yaml\n+++ b/evil.yaml"` + "\n",
		},
		{name: "an escape sequence", path: "\x1b[31mred.yaml", header: `--- "a/\x1b[31mred.yaml"` + "\n" + `+++ "b/\x1b[31mred.yaml"` + "\n"},
		{name: "a space", path: "my app.yaml", header: `--- "a/my app.yaml"` + "\n" + `+++ "b/my app.yaml"` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := patcher.File{Path: tc.path, Old: []byte("a: 1\n"), New: []byte("a: 2\n")}.Diff()
			require.True(t, strings.HasPrefix(d, tc.header+"@@ "), d)
			plus := 0
			for _, l := range strings.Split(d, "\n") {
				if strings.HasPrefix(l, "+++ ") {
					plus++
				}
			}
			require.Equal(t, 1, plus, "one +++ header: %q", d)
		})
	}
}

// The GPU container is the one that requests nvidia.com/gpu when the pod
// names none: SetWholeGPUs and SetVLLMMemoryUtilization change it, not the
// first container.
func TestApplyGPUContainerIsTheOneWithTheGPU(t *testing.T) {
	m := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
      - name: proxy
        image: vllm/vllm-openai:v0.8.0
        args: ["--model", "router", "--gpu-memory-utilization", "0.1"]
      - name: vllm
        image: vllm/vllm-openai:v0.8.0
        args: ["--model", "m", "--gpu-memory-utilization", "0.9"]
        resources:
          limits:
            nvidia.com/gpu: 1
`
	_, res := applyOne(t, map[string]string{"d.yaml": m}, patcher.SetWholeGPUs(2), patcher.SetVLLMMemoryUtilization("0.8"))
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	want := strings.Replace(strings.Replace(m, "nvidia.com/gpu: 1", "nvidia.com/gpu: 2", 1), `"0.9"`, `"0.8"`, 1)
	require.Equal(t, want, string(res.Files[0].New))
	require.Len(t, res.Notes, 1)
	require.ErrorIs(t, res.Notes[0], workload.ErrNotGPUContainer)
	require.Equal(t, "spec.template.spec.containers[proxy]", res.Notes[0].Field)
}

// The fraction check is on the result of the whole Edit: setting the
// fraction before removing the whole GPUs is fine, and a valid fraction
// of two places is kept as written.
func TestApplyFractionThenRemoveWholeGPUs(t *testing.T) {
	m := applyDeployment + "        resources:\n          limits: {cpu: 1, nvidia.com/gpu: 1}\n"
	_, res := applyOne(t, map[string]string{"d.yaml": m}, patcher.SetGPUFraction(".05"), patcher.RemoveWholeGPUs())
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	want := strings.Replace(strings.Replace(m, `"0.5"`, `".05"`, 1), "{cpu: 1, nvidia.com/gpu: 1}", "{cpu: 1}", 1)
	require.Equal(t, want, string(res.Files[0].New))
}

// A key written without a value (or with ~) gets one after a blank, and a
// comment after it stays.
func TestApplyEmptyValues(t *testing.T) {
	head := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n"
	pod := "    spec:\n      containers: [{name: c, image: x}]\n"
	tests := []struct {
		name, src, want string
		ops             []workload.Op
	}{
		{
			name: "followed by a key",
			src:  head + "    metadata:\n      annotations:\n        gpu-fraction:\n        other: x\n" + pod,
			want: head + "    metadata:\n      annotations:\n        gpu-fraction: \"0.3\"\n        other: x\n" + pod,
			ops:  []workload.Op{patcher.SetGPUFraction("0.3")},
		},
		{
			name: "with a comment",
			src:  head + "    metadata:\n      annotations:\n        gpu-fraction:   # to be set\n" + pod,
			want: head + "    metadata:\n      annotations:\n        gpu-fraction: \"0.3\"   # to be set\n" + pod,
			ops:  []workload.Op{patcher.SetGPUFraction("0.3")},
		},
		{
			name: "scheduler name and label",
			src:  head + "    metadata:\n      labels:\n        kai.scheduler/queue:\n    spec:\n      schedulerName:\n      containers: [{name: c, image: x}]\n",
			want: head + "    metadata:\n      labels:\n        kai.scheduler/queue: q\n    spec:\n      schedulerName: kai-scheduler\n      containers: [{name: c, image: x}]\n",
			ops:  []workload.Op{patcher.SetSchedulerName("kai-scheduler"), patcher.SetPodLabel("kai.scheduler/queue", "q")},
		},
		{
			name: "tilde",
			src:  head + pod + "      schedulerName: ~ # unset\n",
			want: head + pod + "      schedulerName: kai-scheduler # unset\n",
			ops:  []workload.Op{patcher.SetSchedulerName("kai-scheduler")},
		},
		{
			name: "in a flow mapping",
			src:  head + "    metadata: {annotations: {gpu-fraction: , team: ml}}\n" + pod,
			want: head + "    metadata: {annotations: {gpu-fraction: \"0.3\", team: ml}}\n" + pod,
			ops:  []workload.Op{patcher.SetGPUFraction("0.3")},
		},
		{
			name: "last line without a line break",
			src:  head + pod + "    metadata:\n      annotations:\n        gpu-fraction:",
			want: head + pod + "    metadata:\n      annotations:\n        gpu-fraction: \"0.3\"",
			ops:  []workload.Op{patcher.SetGPUFraction("0.3")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, res := applyOne(t, map[string]string{"d.yaml": tc.src}, tc.ops...)
			require.Empty(t, res.Refused)
			require.Len(t, res.Files, 1)
			require.Equal(t, tc.want, string(res.Files[0].New))
			for _, c := range res.Files[0].Changes {
				require.Empty(t, c.Old, c.Field)
			}
		})
	}
}

const aliasedGPU = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
x-gpu: &gpu
  limits: &gpulimits
    nvidia.com/gpu: 1
x-small: &small {limits: {cpu: 1}}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai
        args: ["--model", "m"]
        resources: RESOURCES
      - name: envoy
        image: envoyproxy/envoy:v1.31
        resources: *small
`

// A GPU request written through an alias, an anchor or a merge key cannot
// be removed without changing the other places that share it: refused,
// never skipped. Sharing that holds no GPU is left alone.
func TestApplyRemoveWholeGPUsThroughAliases(t *testing.T) {
	tests := []struct {
		name, resources string
		wantErr         error
	}{
		{name: "alias", resources: "*gpu", wantErr: splice.ErrAlias},
		{name: "anchor", resources: "&mine {limits: {nvidia.com/gpu: 1}}", wantErr: splice.ErrAlias},
		{name: "merge key", resources: "{<<: *gpu, requests: {cpu: 1}}", wantErr: splice.ErrAlias},
		{name: "merged limits", resources: "{limits: {<<: {nvidia.com/gpu: 1}, cpu: 1}}", wantErr: splice.ErrAlias},
		{name: "aliased limits", resources: "{limits: *gpulimits}", wantErr: splice.ErrAlias},
		{name: "plain, next to an alias without GPUs", resources: "{limits: {nvidia.com/gpu: 1}}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := strings.Replace(aliasedGPU, "RESOURCES", tc.resources, 1)
			_, res := applyOne(t, map[string]string{"d.yaml": m}, patcher.RemoveWholeGPUs(), patcher.SetGPUFraction("0.5"))
			if tc.wantErr == nil {
				require.Empty(t, res.Refused)
				require.Len(t, res.Files, 1)
				require.NotContains(t, string(res.Files[0].New), "resources: {limits: {nvidia.com/gpu: 1}}")
				return
			}
			require.Empty(t, res.Files)
			require.Len(t, res.Refused, 1)
			require.ErrorIs(t, res.Refused[0].Err, tc.wantErr)
			t.Log(res.Refused[0].Err)
		})
	}

	// A container that is itself an alias.
	m := strings.Replace(aliasedGPU, "      - name: envoy\n        image: envoyproxy/envoy:v1.31\n        resources: *small\n", "      - *side\n", 1)
	m = strings.Replace(m, "RESOURCES", "{limits: {cpu: 1}}", 1)
	m = strings.Replace(m, "x-small: &small {limits: {cpu: 1}}\n", "x-side: &side {name: side, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n", 1)
	_, res := applyOne(t, map[string]string{"d.yaml": m}, patcher.RemoveWholeGPUs(), patcher.SetGPUFraction("0.5"))
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0].Err, splice.ErrAlias)
}

// SetWorkloadLabel sets the Deployment's own label, where KAI looks for the
// queue first; SetPodLabel may set a label the selector's expressions do
// not use, or one they use to the value it has.
func TestApplyLabels(t *testing.T) {
	withLabels := strings.Replace(applyDeployment, "  name: app\n", "  name: app\n  labels:\n    team: ml # owners\n", 1)
	exprs := strings.Replace(applyDeployment, "    matchLabels:\n      app: app\n", "    matchExpressions:\n    - {key: app, operator: In, values: [app]}\n", 1)
	tests := []struct {
		name, src, want string
		ops             []workload.Op
	}{
		{
			name: "workload label added",
			src:  withLabels,
			want: strings.Replace(withLabels, "    team: ml # owners\n", "    team: ml # owners\n    kai.scheduler/queue: research\n", 1),
			ops:  []workload.Op{patcher.SetWorkloadLabel("kai.scheduler/queue", "research")},
		},
		{
			name: "workload labels created",
			src:  applyDeployment,
			want: strings.Replace(applyDeployment, "  name: app\n", "  name: app\n  labels:\n    kai.scheduler/queue: research\n", 1),
			ops:  []workload.Op{patcher.SetWorkloadLabel("kai.scheduler/queue", "research")},
		},
		{
			name: "pod label the expressions do not use",
			src:  exprs,
			want: strings.Replace(exprs, "        app: app\n", "        app: app\n        kai.scheduler/queue: q\n", 1),
			ops:  []workload.Op{patcher.SetPodLabel("kai.scheduler/queue", "q"), patcher.SetPodLabel("app", "app")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, res := applyOne(t, map[string]string{"d.yaml": tc.src}, tc.ops...)
			require.Empty(t, res.Refused)
			require.Len(t, res.Files, 1)
			require.Equal(t, tc.want, string(res.Files[0].New))
			require.NoError(t, writeResult(root, res))
			inv, err := patcher.Discover(context.Background(), root)
			require.NoError(t, err)
			if strings.Contains(tc.name, "workload") {
				require.Equal(t, "research", inv.Workloads[0].Labels["kai.scheduler/queue"])
				require.Equal(t, "research", inv.Workloads[0].Queue)
			}
		})
	}
}
