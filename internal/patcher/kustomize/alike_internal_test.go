package kustomize

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const alikeBase = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app
  template:
    metadata:
      labels:
        app: app
      annotations:
        gpu-fraction: "0.5"
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai
        env:
        - name: PEER
          value: %s
`

// alikeFleet is a base and an overlay per namespace: each sets its
// namespace, a label with it as the value, and a patch of its own made
// by patch (nil: none). peer is a value of the base.
func alikeFleet(peer string, kust func(ns string) string, patch func(ns string) string, nss ...string) map[string][]byte {
	files := map[string][]byte{
		"base/kustomization.yaml": []byte("resources:\n  - d.yaml\n"),
		"base/d.yaml":             fmt.Appendf(nil, alikeBase, peer),
	}
	for _, ns := range nss {
		dir := "overlays/" + ns
		k := fmt.Sprintf("namespace: %[1]s\nresources:\n  - ../../base\nlabels:\n  - pairs:\n      team: %[1]s\n    includeSelectors: true\n", ns)
		if kust != nil {
			k += kust(ns)
		}
		if patch != nil {
			k += "patches:\n  - path: p.yaml\n"
			files[dir+"/p.yaml"] = []byte(patch(ns))
		}
		files[dir+"/kustomization.yaml"] = []byte(k)
	}
	return files
}

func replicasPatch(n string) func(string) string {
	return func(ns string) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: %s\n  template:\n    metadata:\n      labels:\n        owner: %s\n", n, ns)
	}
}

// TestTwins: which overlays the proof predicts from another's build. Each
// guard has a case where renaming the representative's build gives
// something else than the overlay's real build (naiveWrong): there the
// overlay must be built.
func TestTwins(t *testing.T) {
	tests := []struct {
		name  string
		files map[string][]byte
		// twins maps a predicted overlay to its representative.
		twins map[string]string
		// naiveWrong is an overlay whose real build is not its
		// representative's renamed.
		naiveWrong string
	}{
		{
			name:  "alike",
			files: alikeFleet("none", nil, replicasPatch("2"), "team-a", "team-b", "team-c"),
			twins: map[string]string{"overlays/team-b": "overlays/team-a", "overlays/team-c": "overlays/team-a"},
		},
		{
			name: "a patch value of its own",
			files: alikeFleet("none", nil, func(ns string) string {
				return replicasPatch(map[bool]string{true: "3", false: "2"}[ns == "team-b"])(ns)
			}, "team-a", "team-b", "team-c"),
			twins: map[string]string{"overlays/team-c": "overlays/team-a"},
		},
		{
			// The base holds team-a: team-b's build keeps it where the
			// renamed build of team-a writes team-b. team-a is left out,
			// and team-b stands for team-c.
			name:       "the namespace in the base",
			files:      alikeFleet("team-a", nil, nil, "team-a", "team-b", "team-c"),
			twins:      map[string]string{"overlays/team-c": "overlays/team-b"},
			naiveWrong: "overlays/team-b",
		},
		{
			// A generator's hash is of its data, namespace included: no
			// renaming makes one from the other.
			name:       "a generator",
			files:      alikeFleet("none", func(ns string) string { return "configMapGenerator:\n  - name: cm\n    literals: [team=" + ns + "]\n" }, nil, "team-a", "team-b"),
			naiveWrong: "overlays/team-b",
		},
		{
			name: "a patch target",
			files: alikeFleet("none", func(string) string {
				return "patches:\n  - target: {kind: Deployment}\n    patch: |-\n      - op: add\n        path: /spec/paused\n        value: true\n"
			}, nil, "team-a", "team-b"),
		},
		{
			name:  "namespaces of two lengths",
			files: alikeFleet("none", nil, nil, "team-a", "team-bb"),
		},
		{
			name:  "the default namespace",
			files: alikeFleet("none", nil, nil, "staging", "default"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndex(tt.files, nil)
			fs, err := memFS(tt.files)
			require.NoError(t, err)
			st := &kstate{ix: ix, fs: fs}
			var todo []*kust
			for _, k := range ix.kusts {
				require.NoError(t, k.err, k.file)
				if k.root {
					todo = append(todo, k)
				}
			}
			got := map[string]string{}
			for k, tw := range st.twins(todo, nil) {
				got[k.dir] = tw.rep.dir
			}
			if tt.twins == nil {
				tt.twins = map[string]string{}
			}
			require.Equal(t, tt.twins, got)
			// Every twin's real build is its representative's renamed.
			for dir, rep := range got {
				requireRenamed(t, ix, rep, dir, true)
			}
			if tt.naiveWrong != "" {
				requireRenamed(t, ix, todo[0].dir, tt.naiveWrong, false)
			}
		})
	}
}

// requireRenamed builds the overlays rep and dir and checks whether dir's
// build is rep's with rep's namespace written as dir's.
func requireRenamed(t *testing.T, ix *Index, rep, dir string, want bool) {
	t.Helper()
	fs, err := memFS(ix.files)
	require.NoError(t, err)
	a, err := run(fs, rep, false)
	require.NoError(t, err)
	b, err := run(fs, dir, false)
	require.NoError(t, err)
	same := len(a.Resources()) == len(b.Resources())
	for i := range a.Resources() {
		same = same && splice.Compare(replaced(a.Resources()[i].YNode(), ix.byDir[rep].k.Namespace, ix.byDir[dir].k.Namespace), b.Resources()[i].YNode(), "") == nil
	}
	require.Equal(t, want, same, "%s renamed as %s", rep, dir)
}

// TestAlikeOverlaysProven: an edit of overlays alike but for their
// namespace builds one of each set, and what it writes builds, overlay
// by overlay, what each edit intends.
func TestAlikeOverlaysProven(t *testing.T) {
	nss := []string{"team-a", "team-b", "team-c", "team-d"}
	files := alikeFleet("none", nil, replicasPatch("2"), nss...)
	tests := []struct {
		name   string
		edited []string // the overlays asking for 0.7
		builds int      // by the proof
		// changed are the files written.
		changed []string
	}{
		// every overlay wants the same: the base is edited, and team-a
		// alone is built again
		{"all", nss, 1, []string{"base/d.yaml"}},
		// two want it: new patches in theirs, the only overlays that
		// read them; team-b is predicted from team-a
		{"some", nss[:2], 1, []string{
			"overlays/team-a/gpu-rightsizing-deployment-app.yaml", "overlays/team-a/kustomization.yaml",
			"overlays/team-b/gpu-rightsizing-deployment-app.yaml", "overlays/team-b/kustomization.yaml",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndex(files, nil)
			var edits []workload.Edit
			for _, ns := range tt.edited {
				edits = append(edits, workload.Edit{File: "overlays/" + ns + "/kustomization.yaml", Reason: "test",
					Workload: usage.Ref{Kind: "Deployment", Namespace: ns, Name: "app"}, Ops: []workload.Op{workload.SetGPUFraction("0.7")}})
			}
			before := ix.clock.builds
			var res workload.Result
			ix.apply(edits, &res)
			require.Empty(t, res.Refused)
			require.Equal(t, tt.builds, ix.clock.builds-before, "builds of the proof")
			after := maps.Clone(files)
			var changed []string
			for _, f := range res.Files {
				after[f.Path] = f.New
				changed = append(changed, f.Path)
			}
			require.Equal(t, tt.changed, changed)
			fs, err := memFS(after)
			require.NoError(t, err)
			for _, ns := range nss {
				out, err := build(fs, "overlays/"+ns, false)
				require.NoError(t, err)
				want := "0.5"
				if slices.Contains(tt.edited, ns) {
					want = "0.7"
				}
				require.Contains(t, string(out), "gpu-fraction: \""+want+"\"", ns)
				require.True(t, strings.Contains(string(out), "namespace: "+ns), ns)
			}
		})
	}
}
