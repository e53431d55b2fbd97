package patcher_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// helmEdit is an edit of a workload as the release defined in file
// renders it.
func helmEdit(file string, ref usage.Ref, ops ...patcher.Op) patcher.Edit {
	return patcher.Edit{Workload: ref, File: file, Reason: "golden", Ops: ops}
}

// TestHelmGolden: testdata/helm/<case>/original is a repository with
// charts and the releases that render them; expected/ holds the files
// after the edits are written. Run with -update to rewrite expected/.
// The written repository is then discovered again, which renders every
// release with the Helm SDK: each workload must ask for the fraction and
// vLLM utilization wanted.
func TestHelmGolden(t *testing.T) {
	tests := []struct {
		name      string
		workloads []string // as discovered: namespace/name in file
		problems  []string // discovery problems, by file
		edits     []patcher.Edit
		refused   []error
		// after is each workload's gpu-fraction and vLLM flag after the
		// edits, by namespace/name.
		after map[string][2]string
	}{
		{
			// Two Argo CD Applications render the chart with a values file
			// each. prod's fraction is set in its own file: edited there.
			// vLLM's utilization comes from the chart's values.yaml, which
			// dev renders too: prod's file gets the key.
			name:      "values-per-environment",
			workloads: []string{"dev/chat in argocd/chat-dev.yaml", "inference/chat in argocd/chat-prod.yaml"},
			edits: []patcher.Edit{helmEdit("argocd/chat-prod.yaml", dep("inference", "chat"),
				patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33"))},
			after: map[string][2]string{"dev/chat": {"0.3", "0.45"}, "inference/chat": {"0.37", "0.33"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join("testdata", "helm", tc.name)
			orig := filepath.Join(dir, "original")
			inv, err := patcher.Discover(ctx, orig)
			require.NoError(t, err)
			var problems []string
			for _, p := range inv.Problems {
				problems = append(problems, p.File)
				t.Logf("problem: %v", p)
			}
			require.Equal(t, tc.problems, problems)
			var got []string
			for _, w := range inv.Workloads {
				got = append(got, w.Ref.Namespace+"/"+w.Ref.Name+" in "+w.File)
			}
			require.Equal(t, tc.workloads, got)

			res, err := patcher.Apply(ctx, orig, inv, tc.edits)
			require.NoError(t, err)
			var refused []error
			for _, r := range res.Refused {
				refused = append(refused, r.Err)
				t.Logf("refused: %v", r)
			}
			requireErrors(t, tc.refused, refused, "refusals")
			for _, f := range res.Files {
				require.NotEmpty(t, f.Changes, f.Path)
				requireSplicesMake(t, f)
				for _, c := range f.Changes {
					t.Logf("%s: %s: %s -> %s", f.Path, c.Field, c.Old, c.New)
				}
			}

			out := t.TempDir()
			copyTree(t, orig, out)
			require.NoError(t, res.Write(out))
			expected := filepath.Join(dir, "expected")
			if *update {
				require.NoError(t, os.RemoveAll(expected))
				for _, f := range res.Files {
					p := filepath.Join(expected, filepath.FromSlash(f.Path))
					require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
					require.NoError(t, os.WriteFile(p, f.New, 0o644))
				}
			}
			compareTrees(t, orig, expected, out)

			again, err := patcher.Discover(ctx, out)
			require.NoError(t, err)
			require.Equal(t, len(inv.Problems), len(again.Problems), "%v", again.Problems)
			now := map[string][2]string{}
			for _, w := range again.Workloads {
				util := ""
				for _, c := range w.Containers {
					if c.VLLM {
						util = c.GPUMemoryUtilization
					}
				}
				now[w.Ref.Namespace+"/"+w.Ref.Name] = [2]string{w.GPU.FractionText, util}
			}
			require.Equal(t, tc.after, now)
		})
	}
}
