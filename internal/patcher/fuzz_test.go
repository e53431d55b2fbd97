package patcher_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// FuzzApply feeds arbitrary YAML and fractions through Discover and Apply.
// It must never panic, and whenever an edit is accepted the result must
// re-parse to the intended values and differ from the original only on the
// lines the splices touched, in the intended way.
//
//	go test ./internal/patcher -run '^$' -fuzz FuzzApply -fuzztime 2m
func FuzzApply(f *testing.F) {
	err := filepath.WalkDir(filepath.Join("testdata", "golden"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(p)) != "original" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.Add(b, "0.37")
		return nil
	})
	require.NoError(f, err)
	f.Add([]byte(applyDeployment), ".5")
	f.Add([]byte(discoverDeployment), "0.05")

	f.Add([]byte(flowGPUs), "0.5")

	f.Fuzz(func(t *testing.T, src []byte, frac string) {
		if len(src) > 1<<15 {
			t.Skip()
		}
		ctx := context.Background()
		root := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(root, "d.yaml"), src, 0o644))
		inv, err := patcher.Discover(ctx, root)
		require.NoError(t, err)
		var edits []patcher.Edit
		for _, w := range inv.Workloads {
			edits = append(edits, patcher.Edit{Workload: w.Ref, File: w.File, Ops: []patcher.Op{
				patcher.RemoveWholeGPUs(), patcher.SetGPUFraction(frac), patcher.SetVLLMMemoryUtilization(frac),
			}})
		}
		res, err := patcher.Apply(ctx, root, inv, edits)
		require.NoError(t, err)
		refused := map[usage.Ref]bool{}
		for _, r := range res.Refused {
			refused[r.Workload] = true
		}
		kept := map[usage.Ref]bool{} // workloads with a note: a container left alone
		for _, n := range res.Notes {
			kept[n.Workload] = true
		}
		for _, file := range res.Files {
			require.NoError(t, splicesCoverDiff(file))
			require.NoError(t, onlyIntendedLines(file.Old, file.New, frac, removedGPU, containerNameKey), "old:\n%s\nnew:\n%s", file.Old, file.New)

			after := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(after, "d.yaml"), file.New, 0o644))
			inv2, err := patcher.Discover(ctx, after)
			require.NoError(t, err)
			require.Equal(t, problemLines(inv.Problems), problemLines(inv2.Problems), "no new problems\nnew:\n%s", file.New)
			require.Len(t, inv2.Workloads, len(inv.Workloads))
			for _, w := range inv2.Workloads {
				if refused[w.Ref] {
					continue
				}
				require.Equal(t, frac, w.GPU.FractionText, "%s\nnew:\n%s", w.Ref, file.New)
				require.Empty(t, w.GPU.WholeContainers, "%s\nnew:\n%s", w.Ref, file.New)
				for _, c := range w.Containers {
					if c.VLLM && !c.KVCacheMemoryBytes && c.GPUMemoryUtilization != "" && !kept[w.Ref] {
						require.Equal(t, frac, c.GPUMemoryUtilization, "%s %s\nnew:\n%s", w.Ref, c.Name, file.New)
					}
				}
			}
		}
	})
}

// problemLines lists problems without their lines: inserted lines move
// the ones after them.
func problemLines(ps []patcher.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.File+": "+p.Err.Error())
	}
	return out
}

// flowGPUs has GPUs in flow mappings, next to comments, and in the second
// container.
const flowGPUs = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: flow
spec:
  template:
    metadata:
      annotations: {
        prometheus.io/scrape: "true",  # scrape me
      }
    spec:
      containers:
      - name: envoy
        image: envoyproxy/envoy:v1.31
      - name: vllm
        image: vllm/vllm-openai
        args: ["--model", "m", "--gpu-memory-utilization", "0.9"]
        resources:
          requests: {
            cpu: 4,   # four cores
            nvidia.com/gpu: 1
          }
          limits: {nvidia.com/gpu: 1, memory: 8Gi}
`
