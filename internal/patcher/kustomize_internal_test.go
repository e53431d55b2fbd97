package patcher

import (
	"io/fs"
	"os"
	"path/filepath"
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
	root := filepath.Join("testdata", "kustomize")
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
			ix := indexKustomize(files)
			fs, err := memFS(files)
			require.NoError(t, err)
			built := 0
			for _, k := range ix.kusts {
				if k.err != nil || !k.root || k.component() {
					continue
				}
				want, err := build(fs, k.dir, k.loose)
				require.NoError(t, err)
				require.Equal(t, string(want), string(k.out), k.dir)
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
