package kustomize

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Discovery reads the workloads of a build from the trees kustomize holds
// where they read as the rendering does, and from the rendering
// elsewhere. Over the repository's Kustomize cases and a repository of
// scalars the JSON round trip respells, what it found for every root must
// be what reading the rendering finds, and a tree it calls settled must
// be its rendering but for key order, style and positions.
func TestHeldReadsAsTheRendering(t *testing.T) {
	repos := map[string]map[string][]byte{"spellings": spellings()}
	root := filepath.Join("..", "testdata", "kustomize")
	cases, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, c := range cases {
		repos[c.Name()] = readTree(t, filepath.Join(root, c.Name(), "original"))
	}
	var fromHeld, fromRendering int
	for name, files := range repos {
		t.Run(name, func(t *testing.T) {
			ix := NewIndex(files, nil)
			built := 0
			for _, k := range ix.kusts {
				if k.err != nil || !k.root || k.component() {
					continue
				}
				built++
				if k.out == nil {
					fromHeld++
				} else {
					fromRendering++
				}
				out, err := k.output()
				require.NoError(t, err)
				s, err := splice.Parse(out)
				require.NoError(t, err)
				rs := k.rm.Resources()
				require.Len(t, s.Docs, len(rs), k.dir)
				for i, r := range rs {
					if settled(r.YNode()) {
						require.Nil(t, splice.CompareBuilt(r.YNode(), s.Docs[i].Content[0], ""), "%s: object %d is settled", k.dir, i+1)
					}
				}

				bw, err := workload.BuiltWorkloads(out)
				require.NoError(t, err)
				origins := map[usage.Ref]string{}
				for _, o := range k.objs {
					origins[o.obj] = o.origin
				}
				want := ix.builtWorkloads(k, bw, origins)
				require.Equal(t, messages(want), messages(k.objs), k.dir)
				require.Equal(t, workload.UnsupportedIn(s, k.file, false), k.unsupported, k.dir)
			}
			require.Positive(t, built)
		})
	}
	require.Positive(t, fromHeld, "roots read from the trees kustomize holds")
	require.Positive(t, fromRendering, "roots read from the rendering")
}

// spellings is a repository whose overlays each build a Deployment
// (or a StatefulSet) with one field spelled so that the JSON round trip
// may change it.
func spellings() map[string][]byte {
	files := map[string][]byte{}
	values := []string{
		`"0.5"`, `0.5`, `0.50`, `1e3`, `1.0`, `0x10`, `0o17`, `017`, `+1`, `-0`, `1_000`, `12`, `-3`,
		`9223372036854775808`, `~`, `null`, `Null`, ``, `yes`, `True`, `true`, `false`, `2001-12-14`,
		`!!binary aGVsbG8=`, `"caf\u00e9"`, `"a\tb"`, `'multi\n\n line'`, "|\n      kept\n      lines",
		`"` + strings.Repeat("long words ", 20) + `"`, `"\u2028"`, `{a: 1}`, `[1, "2"]`,
	}
	for i, v := range values {
		dir := fmt.Sprintf("o%02d", i)
		files[dir+"/kustomization.yaml"] = []byte("resources:\n  - d.yaml\n")
		files[dir+"/d.yaml"] = []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels:
    v: ` + v + `
spec:
  replicas: ` + v + `
  template:
    metadata:
      annotations:
        gpu-fraction: "0.5"
        note: ` + v + `
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai
          args: ["--gpu-memory-utilization", ` + v + `]
          resources:
            limits:
              nvidia.com/gpu: ` + v + `
`)
	}
	// read with an error, which names a line of what it was read from
	files["bad/kustomization.yaml"] = []byte("resources:\n  - d.yaml\n")
	files["bad/d.yaml"] = []byte("# lines the rendering\n# does not have\n" + strings.Replace(string(files["o00/d.yaml"]), `gpu-fraction: "0.5"`, `gpu-fraction: "1.5"`, 1))
	files["anchor/kustomization.yaml"] = []byte("resources:\n  - d.yaml\n")
	files["anchor/d.yaml"] = []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels: &l {app: chat}
spec:
  template:
    metadata:
      labels: *l
      annotations:
        gpu-fraction: "0.5"
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai
`)
	return files
}

// messages returns objs with each error replaced by one of its message
// alone: errors are compared by what they say.
func messages(objs []kobj) []kobj {
	out := slices.Clone(objs)
	msg := func(err error) error {
		if err == nil {
			return nil
		}
		return errors.New(err.Error())
	}
	for i := range out {
		out[i].w.GPU.Err, out[i].w.GPU.FractionErr = msg(out[i].w.GPU.Err), msg(out[i].w.GPU.FractionErr)
	}
	return out
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return err
	}))
	return files
}
