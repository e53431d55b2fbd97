package patcher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// corpusDir is the corpus of real public manifests in testdata/corpus
// (testdata/corpus/README.md), or $RECOMMENDER_CORPUS.
func corpusDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RECOMMENDER_CORPUS")
	if dir == "" {
		dir = filepath.Join("testdata", "corpus", "manifests")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("corpus %s: %v", dir, err)
	}
	return dir
}

// TestCorpus edits every Deployment of the real-world corpus: a gpu-fraction
// for all, --gpu-memory-utilization where vLLM runs. Every accepted edit
// must re-parse to the intended values and touch only the lines that carry
// them (or lines it inserts).
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	ctx := context.Background()
	inv, err := patcher.Discover(ctx, dir)
	require.NoError(t, err)

	// The three upstream-invalid files are problems, nothing else.
	var bad []string
	for _, p := range inv.Problems {
		bad = append(bad, p.File)
		t.Logf("problem: %v", p)
	}
	require.Len(t, bad, 3)
	for i, want := range []string{"gke-model-armor", "infw-gw", "k8s-sglang-distributed-sts"} {
		require.Contains(t, bad[i], want)
	}
	require.ErrorIs(t, inv.Problems[0].Err, splice.ErrInvalidYAML)
	require.ErrorIs(t, inv.Problems[1].Err, splice.ErrInvalidYAML)
	require.ErrorIs(t, inv.Problems[2].Err, splice.ErrConflictMarkers)

	var edits []patcher.Edit
	withWorkload := map[string]bool{}
	vllm := map[string]bool{} // workload key → has vLLM
	for _, w := range inv.Workloads {
		withWorkload[w.File] = true
		ops := []workload.Op{patcher.SetGPUFraction("0.37")}
		if len(w.GPU.WholeContainers) > 0 {
			// KAI refuses a fraction next to nvidia.com/gpu
			ops = append(ops, patcher.RemoveWholeGPUs())
		}
		for _, c := range w.Containers {
			if c.VLLM {
				ops = append(ops, patcher.SetVLLMMemoryUtilization("0.33"))
				vllm[w.File+" "+w.Ref.String()] = true
				break
			}
		}
		edits = append(edits, patcher.Edit{Workload: w.Ref, File: w.File, Reason: "corpus", Ops: ops})
	}
	res, err := patcher.Apply(ctx, dir, inv, edits)
	require.NoError(t, err)

	// In a group (a LeaderWorkerSet), the flag goes where vLLM serves;
	// the template whose containers join it (ray workers) gets a note.
	grouped := map[string]bool{}
	for _, n := range res.Notes {
		if errors.Is(n.Err, workload.ErrNoVLLMCommand) {
			grouped[n.File+" "+n.Workload.String()] = true
		}
	}
	for _, f := range res.Files {
		require.NoError(t, onlyIntendedLines(f.Old, f.New, "0.37", "0.33", removedGPU), f.Path)
		require.NoError(t, splicesCoverDiff(f), f.Path)

		// Re-parse the result and check the values landed.
		tmp := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(tmp, "f.yaml"), f.New, 0o644))
		after, err := patcher.Discover(ctx, tmp)
		require.NoError(t, err)
		require.Empty(t, after.Problems, f.Path)
		for _, w := range after.Workloads {
			require.Equal(t, "0.37", w.GPU.FractionText, "%s %s", f.Path, w.Ref)
			if !vllm[f.Path+" "+w.Ref.String()] {
				continue
			}
			if grouped[f.Path+" "+w.Ref.String()] {
				require.Contains(t, string(f.New), "--gpu-memory-utilization=0.33", "%s %s", f.Path, w.Ref)
				continue
			}
			// The GPU container carries the flag (when it is vLLM).
			found := false
			for _, c := range w.Containers {
				if c.Name == w.GPU.Container && c.VLLM {
					require.Equal(t, "0.33", c.GPUMemoryUtilization, "%s %s %s", f.Path, w.Ref, c.Name)
					found = true
				}
			}
			require.True(t, found, "%s %s: no vLLM GPU container carries the flag", f.Path, w.Ref)
		}
	}

	reasons := map[string]int{}
	for _, r := range res.Refused {
		for _, s := range []error{workload.ErrAmbiguous, splice.ErrAlias, splice.ErrTemplate, splice.ErrUnsupported, workload.ErrNoVLLMCommand, splice.ErrVerify, splice.ErrDuplicateKey} {
			if errors.Is(r.Err, s) {
				reasons[s.Error()]++
			}
		}
		t.Logf("refused: %v", r)
	}
	for _, n := range res.Notes {
		t.Logf("note: %v", n)
	}
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	t.Logf("corpus: %d files, %d with a workload (%d workloads), %d problems; edited %d files, refused %d edits %v, %d notes",
		countYAML(t, dir), len(withWorkload), len(inv.Workloads), len(inv.Problems), len(res.Files), len(res.Refused), reasons, len(res.Notes))
	t.Logf("edited: %s", strings.Join(paths, ", "))
	// Every file with a workload is edited: none of the corpus is refused.
	require.Len(t, res.Files, len(withWorkload))
	require.Empty(t, res.Refused)
}

func countYAML(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	n := 0
	for _, e := range es {
		if strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") {
			n++
		}
	}
	return n
}
