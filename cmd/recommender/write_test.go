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

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

func TestNewCmdPlanWrite(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want planOptions
	}{
		{name: "without", args: []string{"--repo", "r", "--metrics-file", "m.om"},
			want: planOptions{Repo: "r", Usage: usageFlags{MetricsFile: "m.om"}, Output: "table", DefaultNamespace: "default"}},
		{name: "with", args: []string{"--repo", "r", "--metrics-file", "m.om", "--write"},
			want: planOptions{Repo: "r", Usage: usageFlags{MetricsFile: "m.om"}, Output: "table", DefaultNamespace: "default", Write: true}},
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
			got.IO, got.Now, got.Logger = streams{}, nil, nil
			tc.want.Usage.Preset = metrics.PresetKubex
			tc.want.Usage.Prometheus.Timeout = metrics.DefaultPrometheusTimeout
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
// plan read it is not written (exit 3, named on stderr); the other files
// are.
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
	require.Contains(t, stderr.String(), "3 of 4 files written\n")

	after := files(t, repo)
	require.Equal(t, before[victim]+"# edited by hand\n", after[victim], "the changed file is left as it was changed")
	for _, e := range edits {
		if e.File != victim {
			require.NotEqual(t, before[e.File], after[e.File], "%s is written", e.File)
		}
	}
	require.False(t, strings.Contains(stderr.String(), "error:"), stderr.String())
}
