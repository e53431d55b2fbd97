package kustomize

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/filesys"
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
	ix := indexKustomizeWithin(files, nil, buildLimits{Bytes: 6000, Includes: 100, RunBytes: 3 * 4200, Time: time.Minute, Total: time.Minute}, nil)
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

// TestKustomizeBuildTime: a build past its time is given up on, and
// while it still runs no other build starts; once it ends, builds go on.
// All builds of a run share a budget: past it, a build stops, and the
// ones after are not started. kustomize compares each object it adds
// with every one before it, so a few thousand objects take seconds.
func TestKustomizeBuildTime(t *testing.T) {
	var cms strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&cms, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata: {a: b}\n", i)
	}
	files := map[string][]byte{
		"a-slow/kustomization.yaml": []byte("resources: [cms.yaml]\n"),
		"a-slow/cms.yaml":           []byte(cms.String()),
		"b-fast/kustomization.yaml": []byte("resources: [cm.yaml]\n"),
		"b-fast/cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"),
	}
	errs := func(ix *Index) []string {
		var out []string
		for _, k := range ix.kusts {
			if k.err == nil {
				out = append(out, k.file+": built")
				continue
			}
			out = append(out, k.err.Error())
		}
		return out
	}
	lim := defaultBuildLimits()
	t.Run("a build", func(t *testing.T) {
		lim.Time, lim.Total = 50*time.Millisecond, time.Minute
		ix := indexKustomizeWithin(files, nil, lim, nil)
		require.Equal(t, []string{
			"kustomize: build a-slow: build stopped: not done within 50ms",
			"kustomize: build b-fast: build stopped: the build of a-slow, past its time, is still running",
		}, errs(ix))
		require.Eventually(t, func() bool {
			ix.clock.mu.Lock()
			defer ix.clock.mu.Unlock()
			return ix.clock.stuck == ""
		}, 5*time.Minute, 50*time.Millisecond, "the build given up on ends")
		// Once it has, the next build runs on the same clock: given a
		// bound no loaded machine misses (50 ms is for the slow one).
		fast := map[string][]byte{"b-fast/kustomization.yaml": files["b-fast/kustomization.yaml"], "b-fast/cm.yaml": files["b-fast/cm.yaml"]}
		// The clock carries its own bound per build, so the roomy one is
		// set on it, not only in the limits passed beside it.
		roomy := lim
		roomy.Time = time.Minute
		ix.clock.mu.Lock()
		ix.clock.each = roomy.Time
		ix.clock.mu.Unlock()
		again := indexKustomizeWithin(fast, nil, roomy, ix.clock)
		require.Equal(t, []string{"b-fast/kustomization.yaml: built"}, errs(again))
	})
	t.Run("a run", func(t *testing.T) {
		lim.Time, lim.Total = time.Minute, 50*time.Millisecond
		ix := indexKustomizeWithin(files, nil, lim, nil)
		require.Equal(t, []string{
			"kustomize: build a-slow: build stopped: the run's 50ms of builds was spent",
			"kustomize: build b-fast: build stopped: the run's 50ms of builds is spent",
		}, errs(ix))
		require.Eventually(t, func() bool {
			ix.clock.mu.Lock()
			defer ix.clock.mu.Unlock()
			return ix.clock.stuck == ""
		}, 5*time.Minute, 50*time.Millisecond)
	})
}

// memFS answers CleanedAbs from the path asked for, not by kyaml's walk
// of each parent's entries; kustomize's loader must see the same
// directory, file name and refusal for every path, found or not.
func TestMemFSCleanedAbs(t *testing.T) {
	files := map[string][]byte{
		"base/kustomization.yaml":        []byte("resources: [d.yaml]\n"),
		"base/d.yaml":                    []byte("kind: ConfigMap\n"),
		"overlays/o1/kustomization.yaml": []byte("resources: [../../base]\n"),
		"overlays/o2/team.yaml":          []byte("kind: ConfigMap\n"),
	}
	fast, err := memFS(files)
	require.NoError(t, err)
	plain := filesys.MakeFsInMemory()
	for p, b := range files {
		require.NoError(t, plain.WriteFile(path.Join(buildRoot, p), b))
	}
	for _, p := range []string{
		"", "/", ".", "..", "../repo", "/..", "/repo", "repo", "/repo/", "//repo//base/", "/repo/base/d.yaml",
		"repo/base/./d.yaml", "/repo/overlays/o1/../../base", "/repo/overlays/o1/../../base/d.yaml", "/repo/base/d.yaml/x",
		"/repo/missing", "/repo/base/missing.yaml", "/repo/overlays", "/repo/overlays/o2/team.yaml", "/repo/../repo/base",
	} {
		wantDir, wantFile, wantErr := plain.CleanedAbs(p)
		dir, file, err := fast.CleanedAbs(p)
		require.Equal(t, wantDir, dir, "dir of %q", p)
		require.Equal(t, wantFile, file, "file of %q", p)
		require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(err), "error of %q", p)
	}
}

// exists reads a directory from dirsOf, once for every reference, as
// the scan of every file it replaces read it.
func TestExists(t *testing.T) {
	files := map[string][]byte{"a/b/c.yaml": nil, "a/d.yaml": nil, "e.yaml": nil}
	dirs := dirsOf(files)
	for p, want := range map[string]bool{
		"a": true, "a/b": true, "a/b/c.yaml": true, "a/./b": true, "a/b/": true, "e.yaml": true, ".": false,
		"": false, "..": false, "../a": false, "a/b/c": false, "a/bb": false, "b": false, "e.yaml/x": false,
	} {
		require.Equal(t, want, exists(p, files, dirs), p)
	}
}
