package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

func TestNewCmdPlanWrite(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want planOptions
	}{
		{name: "without", args: []string{"--repo", "r", "--metrics-file", "m.om"},
			want: planOptions{Repo: "r", Usage: source.Options{MetricsFile: "m.om"}, Output: "table", DefaultNamespace: "default"}},
		{name: "with", args: []string{"--repo", "r", "--metrics-file", "m.om", "--write"},
			want: planOptions{Repo: "r", Usage: source.Options{MetricsFile: "m.om"}, Output: "table", DefaultNamespace: "default", Write: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *planOptions
			root := newCmdRoot(streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *planOptions) error {
				got = o
				return nil
			})
			root.SetArgs(append([]string{"plan"}, tc.args...))
			require.NoError(t, root.Execute())
			got.IO, got.Now, got.Logger, got.effective = streams{}, nil, nil, nil
			tc.want.Usage.Preset = preset.Kubex
			tc.want.Usage.Prometheus.Timeout = prometheus.DefaultTimeout
			require.Equal(t, tc.want, *got)
		})
	}
}

// files returns every file under root by slash-separated relative path.
func files(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return out
}

// planJSON runs plan -o json on repo and returns its stdout, stderr, exit
// code and the edits it printed.
func planJSON(t *testing.T, stdout *bytes.Buffer, repo string, extra ...string) (string, exitCode, []struct{ File, Diff string }) {
	t.Helper()
	var errOut bytes.Buffer
	args := append([]string{"plan", "--repo", repo, "--metrics-file", quickstartMetrics, "-o", "json"}, extra...)
	code := Main(args, stdout, &errOut)
	var got struct {
		Edits []struct{ File, Diff string } `json:"edits"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), stdout.String())
	return errOut.String(), code, got.Edits
}

// TestPlanWrite: plan --write prints the same plan as plan, and leaves
// the working tree exactly as applying the printed diffs (with git apply,
// to another copy) does.
func TestPlanWrite(t *testing.T) {
	git := testenv.LookPath(t, "git")
	repo, twin := t.TempDir(), t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	require.NoError(t, os.CopyFS(twin, os.DirFS(quickstartRepo)))
	before := files(t, repo)

	var dry bytes.Buffer
	_, dryCode, edits := planJSON(t, &dry, repo)
	require.Equal(t, before, files(t, repo), "plan without --write writes nothing")
	require.NotEmpty(t, edits)

	var wet bytes.Buffer
	errOut, code, _ := planJSON(t, &wet, repo, "--write")
	require.Equal(t, dryCode, code, errOut)
	require.Equal(t, dry.String(), wet.String(), "--write prints the same plan")
	require.Contains(t, errOut, "4 of 4 files written\n")
	require.Len(t, edits, 4)

	for _, e := range edits {
		patch := filepath.Join(t.TempDir(), "edit.patch")
		require.NoError(t, os.WriteFile(patch, []byte(e.Diff), 0o600))
		cmd := exec.Command(git, "apply", "--whitespace=nowarn", patch)
		cmd.Dir = twin
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", e.File, out)
	}
	after := files(t, repo)
	require.Equal(t, files(t, twin), after, "the files are as the printed diffs say")
	for _, e := range edits {
		require.NotEqual(t, before[e.File], after[e.File], e.File)
	}
}

// changeOnFirstWrite is a stdout that, when the plan starts being printed
// (after it was made, before --write writes), changes a file of the
// repository as a person or a git checkout might.
type changeOnFirstWrite struct {
	bytes.Buffer
	path, text string
	done       bool
}

func (w *changeOnFirstWrite) Write(p []byte) (int, error) {
	if !w.done {
		w.done = true
		f, err := os.OpenFile(w.path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return 0, err
		}
		if _, err := f.WriteString(w.text); err != nil {
			return 0, err
		}
		if err := f.Close(); err != nil {
			return 0, err
		}
	}
	return w.Buffer.Write(p)
}

// TestPlanWriteRefusesAChangedFile: a file that changed on disk after the
// plan read it is named on stderr (exit 3), and nothing is written: an
// edit may span files, and half of one is never left on disk.
func TestPlanWriteRefusesAChangedFile(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	var dry bytes.Buffer
	_, _, edits := planJSON(t, &dry, repo)
	require.Len(t, edits, 4)
	victim := edits[1].File
	before := files(t, repo)

	out := &changeOnFirstWrite{path: filepath.Join(repo, filepath.FromSlash(victim)), text: "# edited by hand\n"}
	var stderr bytes.Buffer
	code := Main([]string{"plan", "--repo", repo, "--metrics-file", quickstartMetrics, "-o", "json", "--write"}, out, &stderr)
	require.Equal(t, exitProblems, code, stderr.String())
	require.Contains(t, stderr.String(), "not written: write "+victim+": the file changed since it was read\n")
	require.Contains(t, stderr.String(), "0 of 4 files written")

	after := files(t, repo)
	require.Equal(t, before[victim]+"# edited by hand\n", after[victim], "the changed file is left as it was changed")
	for _, e := range edits {
		if e.File != victim {
			require.Equal(t, before[e.File], after[e.File], "%s is not written either", e.File)
		}
	}
	require.False(t, strings.Contains(stderr.String(), "error:"), stderr.String())
}

// TestPlanWriteKustomize: the quickstart's chat service as a base with
// two overlays, inference (whose usage is recorded) and canary. plan
// --write puts inference's new fraction into a new patch of its overlay,
// leaving the shared base alone; kustomize builds each overlay as
// intended.
func TestPlanWriteKustomize(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	chat := filepath.Join(repo, "apps", "chat")
	require.NoError(t, os.MkdirAll(filepath.Join(chat, "base"), 0o755))
	require.NoError(t, os.Rename(filepath.Join(chat, "deployment.yaml"), filepath.Join(chat, "base", "deployment.yaml")))
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(chat, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(chat, p), []byte(s), 0o644))
	}
	write("base/kustomization.yaml", "resources:\n  - deployment.yaml\n")
	write("overlays/inference/kustomization.yaml", "namespace: inference\nresources:\n  - ../../base\n")
	write("overlays/canary/kustomization.yaml", "namespace: canary\nresources:\n  - ../../base\n")
	before := files(t, repo)

	var stdout, stderr bytes.Buffer
	code := Main([]string{"plan", "--repo", repo, "--metrics-file", quickstartMetrics, "--write"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String()+stdout.String())
	out := stdout.String()
	require.Contains(t, out, "--- /dev/null\n+++ b/apps/chat/overlays/inference/gpu-rightsizing-deployment-chat.yaml\n")
	require.Contains(t, out, "+        gpu-fraction: \"0.72\"\n")
	require.Contains(t, out, "--- a/apps/chat/overlays/inference/kustomization.yaml\n")

	after := files(t, repo)
	require.Equal(t, before["apps/chat/base/deployment.yaml"], after["apps/chat/base/deployment.yaml"], "the shared base is left alone")
	require.Equal(t, before["apps/chat/overlays/canary/kustomization.yaml"], after["apps/chat/overlays/canary/kustomization.yaml"])
	// The vLLM flag goes in a JSON 6902 patch of its own, which replaces
	// that one argument: the base's other arguments still reach the
	// overlay.
	require.Equal(t, "namespace: inference\nresources:\n  - ../../base\npatches:\n  - path: gpu-rightsizing-deployment-chat.yaml\n"+
		"  - path: gpu-rightsizing-args-deployment-chat.yaml\n    target:\n      group: apps\n      kind: Deployment\n      name: chat\n      namespace: inference\n",
		after["apps/chat/overlays/inference/kustomization.yaml"])
	for overlay, want := range map[string]string{"inference": "0.72", "canary": "0.5"} {
		abs, err := filepath.Abs(filepath.Join(chat, "overlays", overlay))
		require.NoError(t, err)
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
		require.NoError(t, err)
		require.Len(t, rm.Resources(), 1)
		got, err := rm.Resources()[0].GetString("spec.template.metadata.annotations.gpu-fraction")
		require.NoError(t, err)
		require.Equal(t, want, got, overlay)
	}
}

// TestPlanWriteGPUMemory: the quickstart's chat service asking for GPU
// memory instead of a fraction. Without the GPU's memory it is left alone
// with the reason; with spec.kai.gpuMemoryMiB (a field of the project's
// API group) the recommendation is written in whole MiB, rounded up, and
// vLLM's flag follows the same rule as for a fraction.
func TestPlanWriteGPUMemory(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cardMiB  string
		contains []string
		file     string
	}{
		{name: "the GPU's memory unknown",
			contains: []string{"requests GPU memory (gpu-memory) but the GPU's memory is unknown: set spec.kai.gpuMemoryMiB in its strategy"}},
		{name: "an 80 GiB GPU", cardMiB: "81920",
			contains: []string{`+        gpu-memory: "58983"`, "+            - \"0.64\""},
			file:     `gpu-memory: "58983"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
			chat := filepath.Join(repo, "apps", "chat", "deployment.yaml")
			b, err := os.ReadFile(chat)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(chat, []byte(strings.Replace(string(b), `gpu-fraction: "0.5"`, `gpu-memory: "40960"`, 1)), 0o644))
			if tc.cardMiB != "" {
				pol := filepath.Join(repo, "policies", "kai-gpu-sharing.yaml")
				b, err := os.ReadFile(pol)
				require.NoError(t, err)
				s := strings.Replace(string(b), "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterAutomationStrategy",
					"apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ClusterAutomationStrategy", 1)
				s = strings.Replace(s, "  kai:\n", "  kai:\n    gpuMemoryMiB: "+tc.cardMiB+"\n", 1)
				require.NoError(t, os.WriteFile(pol, []byte(s), 0o644))
			}
			var stdout, stderr bytes.Buffer
			code := Main([]string{"plan", "--repo", repo, "--metrics-file", quickstartMetrics, "--write"}, &stdout, &stderr)
			require.Equal(t, exitOK, code, stderr.String()+stdout.String())
			for _, want := range tc.contains {
				require.Contains(t, stdout.String(), want)
			}
			after, err := os.ReadFile(chat)
			require.NoError(t, err)
			if tc.file != "" {
				require.Contains(t, string(after), tc.file)
			} else {
				require.Contains(t, string(after), `gpu-memory: "40960"`)
			}
		})
	}
}

// TestPlanWriteHelm: the quickstart's chat service as a chart in the
// repository with a values file per environment, rendered by two Argo CD
// Applications: prod (in inference, whose usage is recorded) and dev.
// plan --write edits prod's values file only, and the chart rendered for
// each release asks for what the plan says. testdata/helm-write/expected
// holds the changed files; -update rewrites it.
func TestPlanWriteHelm(t *testing.T) {
	const dir = "testdata/helm-write"
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	require.NoError(t, os.Remove(filepath.Join(repo, "apps", "chat", "deployment.yaml")))
	require.NoError(t, os.CopyFS(repo, os.DirFS(filepath.Join(dir, "original"))))
	before := files(t, repo)

	var stdout, stderr bytes.Buffer
	code := Main([]string{"plan", "--repo", repo, "--metrics-file", quickstartMetrics, "--write"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String()+stdout.String())
	require.Contains(t, stdout.String(), "--- a/apps/chat/chart/values-prod.yaml\n+++ b/apps/chat/chart/values-prod.yaml\n")

	after := files(t, repo)
	changed := map[string]string{}
	for p, s := range after {
		// the other services of the quickstart are plain manifests,
		// which other tests cover
		if before[p] != s && strings.HasPrefix(p, "apps/chat/") {
			changed[p] = s
		}
	}
	expected := filepath.Join(dir, "expected")
	if *update {
		require.NoError(t, os.RemoveAll(expected))
		for p, s := range changed {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(expected, p)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(expected, p), []byte(s), 0o644))
		}
	}
	require.Equal(t, files(t, expected), changed, "the files plan --write changed; go test ./cmd/recommender -run TestPlanWriteHelm -update rewrites them")

	inv, err := patcher.Discover(context.Background(), repo)
	require.NoError(t, err)
	got := map[string][2]string{}
	for _, w := range inv.Workloads {
		if w.Ref.Name == "chat" {
			got[w.Ref.Namespace] = [2]string{w.GPU.FractionText, w.Containers[0].GPUMemoryUtilization}
		}
	}
	require.Equal(t, map[string][2]string{"inference": {"0.72", "0.64"}, "dev": {"0.5", "0.45"}}, got, "what each release renders after --write")
}
