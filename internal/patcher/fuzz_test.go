package patcher_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/kai"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
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
			edits = append(edits, patcher.Edit{Workload: w.Ref, File: w.File, Ops: []workload.Op{
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

// FuzzKustomizeEdit feeds an overlay's kustomization, the base
// Deployment it builds on and the overlay's patch through Discover and
// Apply, with a second overlay of the same base beside it. It must never
// panic, and whatever it writes, `kustomize build` of the written files
// (krusty, from disk) must give, for the edited overlay, its old output
// with exactly the intended gpu-fraction set on the edited workloads,
// and for the other overlay its old output, byte for byte.
//
//	go test ./internal/patcher -run '^$' -fuzz FuzzKustomizeEdit -fuzztime 2m
func FuzzKustomizeEdit(f *testing.F) {
	const smp = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: \"0.7\"\n"
	f.Add([]byte("namespace: a\nresources:\n  - ../../base\n"), []byte(applyDeployment), []byte(smp), "0.3")
	f.Add([]byte("namespace: a\nresources:\n- ../../base\npatches:\n- path: patch.yaml\n"), []byte(applyDeployment), []byte(smp), "0.25")
	f.Add([]byte("namePrefix: x-\nresources:\n- ../../base\npatches:\n- path: patch.yaml\n  target:\n    name: a.*\n"), []byte(applyDeployment), []byte(smp), "0.6")
	f.Add([]byte("resources: [../../base]\npatches:\n- path: patch.yaml\n  target: {kind: Deployment}\n"), []byte(applyDeployment), []byte("- op: replace\n  path: /spec/replicas\n  value: 3\n"), "0.5")
	f.Add([]byte("resources:\n- ../../base\npatches:\n- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: app\n    spec:\n      template:\n        metadata:\n          annotations:\n            gpu-fraction: \"0.2\"\n"), []byte(applyDeployment), []byte{}, "0.4")
	f.Add([]byte("commonAnnotations:\n  gpu-fraction: \"0.1\"\nresources:\n- ../../base\n"), []byte(applyDeployment), []byte{}, "0.4")
	f.Fuzz(func(t *testing.T, overlay, base, patch []byte, frac string) {
		if len(overlay)+len(base)+len(patch) > 1<<14 {
			t.Skip()
		}
		files := map[string]string{
			"base/kustomization.yaml":       "resources:\n  - deployment.yaml\n",
			"base/deployment.yaml":          string(base),
			"overlays/a/kustomization.yaml": string(overlay),
			"overlays/a/patch.yaml":         string(patch),
			"overlays/b/kustomization.yaml": "namespace: b\nresources:\n  - ../../base\n",
		}
		ctx := context.Background()
		root := t.TempDir()
		writeFiles(t, root, files)
		before := map[string][]byte{}
		for _, o := range []string{"a", "b"} {
			before[o] = fuzzBuild(t, root, o)
		}
		inv, err := patcher.Discover(ctx, root)
		require.NoError(t, err)
		var edits []patcher.Edit
		for _, w := range inv.Workloads {
			if w.File == "overlays/a/kustomization.yaml" {
				edits = append(edits, patcher.Edit{Workload: w.Ref, File: w.File, Reason: "fuzz", Ops: []workload.Op{patcher.SetGPUFraction(frac)}})
			}
		}
		res, err := patcher.Apply(ctx, root, inv, edits)
		require.NoError(t, err)
		if !res.Changed() {
			return
		}
		require.NotNil(t, before["a"], "an overlay that did not build was edited")
		refused := map[usage.Ref]bool{}
		for _, r := range res.Refused {
			refused[r.Workload] = true
		}
		for _, file := range res.Files {
			require.NoError(t, splicesCoverDiff(file))
		}
		require.NoError(t, writeResult(root, res))
		require.Equal(t, string(before["b"]), string(fuzzBuild(t, root, "b")), "the other overlay's output changed")

		// what the edits intend: the old output with the fraction set
		want, err := kio.FromBytes(before["a"])
		require.NoError(t, err)
		for _, rn := range want {
			ref := usage.Ref{Kind: rn.GetKind(), Namespace: rn.GetNamespace(), Name: rn.GetName()}
			if !slices.ContainsFunc(edits, func(e patcher.Edit) bool { return e.Workload == ref }) || refused[ref] {
				continue
			}
			_, err := rn.Pipe(yaml.LookupCreate(yaml.MappingNode, "spec", "template", "metadata", "annotations"), yaml.SetField(kai.FractionAnnotation, yaml.NewStringRNode(frac)))
			require.NoError(t, err)
		}
		got, err := kio.FromBytes(fuzzBuild(t, root, "a"))
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i := range want {
			w, err := want[i].Map()
			require.NoError(t, err)
			g, err := got[i].Map()
			require.NoError(t, err)
			require.Equal(t, w, g, "object %d of overlay a", i+1)
		}
	})
}

// fuzzBuild runs kustomize on overlays/<o> under root, from disk; nil when
// it does not build.
func fuzzBuild(t *testing.T, root, o string) []byte {
	t.Helper()
	// as loose as the tool builds a kustomization that names files
	// outside its directory; the same output for one that does not
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	rm, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "overlays", o))
	if err != nil {
		return nil
	}
	b, err := rm.AsYaml()
	require.NoError(t, err)
	return b
}
