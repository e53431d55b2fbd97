package kustomize

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Discovery builds each root once, from a copy whose kustomizations ask
// for origin annotations, and removes them as krusty would have: what it
// keeps as the output must be, byte for byte, what a build of the files
// as they are gives, since the proof compares the overlays' outputs after
// an edit with it. Build metadata a kustomization asks for itself stays.
func TestBuildTracedIsTheBuild(t *testing.T) {
	repos := map[string]map[string][]byte{
		"metadata": {
			"base/kustomization.yaml": []byte("buildMetadata: [managedByLabel, transformerAnnotations]\nresources:\n  - d.yaml\n"),
			"base/d.yaml":             []byte(discoverDeploymentForTrace),
			"own/kustomization.yaml":  []byte("buildMetadata: [originAnnotations]\nnamePrefix: own-\nresources:\n  - ../base\n"),
			"lbl/kustomization.yaml":  []byte("commonLabels: {team: ml}\nbuildMetadata: [managedByLabel]\nresources:\n  - ../base\n"),
		},
	}
	root := filepath.Join("..", "testdata", "kustomize")
	cases, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, c := range cases {
		files := map[string][]byte{}
		orig := filepath.Join(root, c.Name(), "original")
		require.NoError(t, filepath.WalkDir(orig, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(orig, p)
			files[filepath.ToSlash(rel)] = b
			return err
		}))
		repos[c.Name()] = files
	}
	for name, files := range repos {
		t.Run(name, func(t *testing.T) {
			ix := NewIndex(files, nil)
			fs, err := memFS(files)
			require.NoError(t, err)
			built := 0
			for _, k := range ix.kusts {
				if k.err != nil || !k.root || k.component() {
					continue
				}
				want, err := build(fs, k.dir, k.loose)
				require.NoError(t, err)
				out, err := k.output()
				require.NoError(t, err)
				require.Equal(t, string(want), string(out), k.dir)
				built++
			}
			require.Positive(t, built)
		})
	}
}

const discoverDeploymentForTrace = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    metadata:
      annotations:
        gpu-fraction: "0.5"
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai
`

// TestKustomizeBuildLimits: a root that reads more than the bound through
// its includes is not built, and once the roots built read the run's
// bound, the ones after are not either; each error says which bound.
func TestKustomizeBuildLimits(t *testing.T) {
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {blob: \"" + strings.Repeat("x", 4000) + "\"}\n"
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources:\n  - big.yaml\n"),
		"base/big.yaml":           []byte(big),
	}
	for i := range 5 {
		files[fmt.Sprintf("o%d/kustomization.yaml", i)] = []byte(fmt.Sprintf("namePrefix: o%d-\nresources:\n  - ../base\n", i))
	}
	files["huge/kustomization.yaml"] = []byte("resources:\n  - ../base\n  - more.yaml\n")
	files["huge/more.yaml"] = []byte(strings.Replace(big, "name: big", "name: more", 1))
	ix := indexKustomizeWithin(files, nil, buildLimits{Bytes: 6000, Includes: 100, RunBytes: 3 * 4200})
	var built, refused []string
	for _, k := range ix.kusts {
		switch {
		case !k.root:
		case k.err == nil:
			built = append(built, k.file)
		default:
			refused = append(refused, k.err.Error())
		}
	}
	require.Equal(t, []string{"o0/kustomization.yaml", "o1/kustomization.yaml", "o2/kustomization.yaml"}, built, "three roots fit the run's bound")
	require.Len(t, refused, 3)
	require.Contains(t, refused[0], "huge/kustomization.yaml reads 8")
	require.Contains(t, refused[0], "bytes through its includes")
	require.Contains(t, refused[1], "o3/kustomization.yaml not built: with the kustomizations built before it")
	require.Contains(t, refused[2], "o4/kustomization.yaml not built")
}
