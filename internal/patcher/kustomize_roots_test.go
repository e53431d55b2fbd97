package patcher_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/kustomize"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// kustRun discovers files, applies edits and writes the result to a copy:
// the copy's root, the discovered workloads ("ns/name in file") and the
// result.
func kustRun(t *testing.T, files map[string]string, edits ...patcher.Edit) (string, []string, *patcher.Result) {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	writeFiles(t, root, files)
	inv, err := patcher.Discover(ctx, root)
	require.NoError(t, err)
	require.Empty(t, inv.Problems)
	ws := workloadNames(inv)
	res, err := patcher.Apply(ctx, root, inv, edits)
	require.NoError(t, err)
	out := t.TempDir()
	copyTree(t, root, out)
	require.NoError(t, writeResult(out, res))
	return out, ws, res
}

// fractions builds dir of root with kustomize (the CLI's default load
// restrictions unless loose) and returns each Deployment's
// gpu-fraction by namespace/name.
func fractions(t *testing.T, root, dir string, loose bool) map[string]string {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	if loose {
		opts.LoadRestrictions = types.LoadRestrictionsNone
	}
	abs, err := filepath.Abs(filepath.Join(root, dir))
	require.NoError(t, err)
	rm, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), abs)
	require.NoError(t, err)
	out := map[string]string{}
	for _, r := range rm.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		v, err := r.GetString("spec.template.metadata.annotations.gpu-fraction")
		if err != nil {
			v = "" // none
		}
		out[r.GetNamespace()+"/"+r.GetName()] = v
	}
	return out
}

// Only the roots, kustomizations no other one includes, define
// workloads: a base under an overlay, and overlays under an aggregate
// (bases: read as resources:), are built as part of what includes them.
// An edit of one overlay's object, when the aggregate also builds the
// other overlay's from the same base, cannot go into the base: it goes
// into a new patch of the aggregate, which names the object by the
// namespace the overlay gave it.
func TestKustomizeRootsOnly(t *testing.T) {
	files := map[string]string{
		"base/kustomization.yaml":         "resources:\n  - deployment.yaml\n",
		"base/deployment.yaml":            applyDeployment,
		"overlays/a/kustomization.yaml":   "namespace: a\nbases:\n  - ../../base\n",
		"overlays/b/kustomization.yaml":   "namespace: b\nresources:\n  - ../../base\n",
		"clusters/all/kustomization.yaml": "resources:\n  - ../../overlays/a\n  - ../../overlays/b\n",
	}
	edit := patcher.Edit{Workload: dep("a", "app"), File: "clusters/all/kustomization.yaml", Reason: "test",
		Ops: []workload.Op{patcher.SetGPUFraction("0.3")}}
	out, ws, res := kustRun(t, files, edit)
	require.Equal(t, []string{"a/app in clusters/all/kustomization.yaml", "b/app in clusters/all/kustomization.yaml"}, ws)
	require.Empty(t, res.Refused)
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{"clusters/all/gpu-rightsizing-deployment-app.yaml", "clusters/all/kustomization.yaml"}, paths)
	require.Contains(t, string(res.Files[0].New), "namespace: a\n")
	require.Equal(t, map[string]string{"a/app": "0.3", "b/app": "0.5"}, fractions(t, out, "clusters/all", false))
}

// Two roots that build the same namespace/name may be deployed to two
// clusters or fight over one: which cannot be known, so both are
// workloads, and an edit that does not say which is refused, naming both
// kustomizations.
func TestKustomizeTwoRootsOneName(t *testing.T) {
	files := map[string]string{
		"base/kustomization.yaml":      "namespace: ml\nresources:\n  - deployment.yaml\n",
		"base/deployment.yaml":         applyDeployment,
		"cluster-1/kustomization.yaml": "resources:\n  - ../base\n",
		"cluster-2/kustomization.yaml": "resources:\n  - ../base\n",
	}
	_, ws, res := kustRun(t, files, patcher.Edit{Workload: dep("ml", "app"), Reason: "test", Ops: []workload.Op{patcher.SetGPUFraction("0.3")}})
	require.Equal(t, []string{"ml/app in cluster-1/kustomization.yaml", "ml/app in cluster-2/kustomization.yaml"}, ws)
	require.Empty(t, res.Files)
	require.Len(t, res.Refused, 1)
	require.ErrorIs(t, res.Refused[0], workload.ErrAmbiguous)
	require.Contains(t, res.Refused[0].Error(), "in cluster-1/kustomization.yaml, cluster-2/kustomization.yaml")
}

// The document an object is built from is found from kustomize's origin
// and the exact names the prefixes make: with two Deployments in one
// file, named app and my-app, namePrefix my- builds my-app and my-my-app,
// and each is traced to its own document (a substring test would take
// the longer name for both).
func TestKustomizeOriginalName(t *testing.T) {
	two := applyDeployment + "---\n" + strings.NewReplacer("name: app", "name: my-app", "app: app", "app: my-app", `"0.5"`, `"0.4"`).Replace(applyDeployment)
	files := map[string]string{
		"base/kustomization.yaml":    "resources:\n  - deployments.yaml\n",
		"base/deployments.yaml":      two,
		"overlay/kustomization.yaml": "namePrefix: my-\nresources:\n  - ../base\n",
	}
	edits := []patcher.Edit{
		{Workload: dep("", "my-app"), Reason: "test", Ops: []workload.Op{patcher.SetGPUFraction("0.3")}},
		{Workload: dep("", "my-my-app"), Reason: "test", Ops: []workload.Op{patcher.SetGPUFraction("0.2")}},
	}
	out, _, res := kustRun(t, files, edits...)
	require.Empty(t, res.Refused)
	require.Len(t, res.Files, 1)
	require.Equal(t, "base/deployments.yaml", res.Files[0].Path)
	require.Equal(t, map[string]string{"/my-app": "0.3", "/my-my-app": "0.2"}, fractions(t, out, "overlay", false))
}

// Patch targets select as kustomize selects: a name is an anchored
// regular expression, and label and annotation selectors count. The
// patch that sets the fraction of the object is the one edited.
func TestKustomizePatchTargets(t *testing.T) {
	gpu := applyDeployment
	cpu := strings.NewReplacer("  name: app\n", "  name: web\n  labels:\n    app: web\n", "app: app", "app: web", `gpu-fraction: "0.5"`, `other: "x"`).Replace(applyDeployment)
	patch := func(v string) string {
		return "- op: add\n  path: /spec/template/metadata/annotations/gpu-fraction\n  value: \"" + v + "\"\n"
	}
	smp := func(v string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: any\nspec:\n  template:\n    metadata:\n      annotations:\n        gpu-fraction: \"" + v + "\"\n"
	}
	tests := []struct {
		name, target string
		json         bool
		// body, when set, is the patch instead
		body string
		// refused: the edit is refused (a JSON 6902 patch that sets
		// the field otherwise than as its one value); else the files
		// edited
		refused bool
		edited  []string
		want    map[string]string
	}{
		{name: "regex name", target: "name: ap.*", edited: []string{"overlay/patch.yaml"}, want: map[string]string{"/app": "0.3", "/web": ""}},
		{name: "regex is anchored", target: "name: p", edited: []string{"base/app.yaml"}, want: map[string]string{"/app": "0.3", "/web": ""}},
		{name: "label selector", target: "labelSelector: app=app", edited: []string{"overlay/patch.yaml"}, want: map[string]string{"/app": "0.3", "/web": ""}},
		{name: "label selector elsewhere", target: "labelSelector: app=web", edited: []string{"base/app.yaml"}, want: map[string]string{"/app": "0.3", "/web": "0.9"}},
		{name: "annotation selector", target: "annotationSelector: team=ml", edited: []string{"overlay/patch.yaml"}, want: map[string]string{"/app": "0.3", "/web": ""}},
		{name: "kind regex", target: "kind: Deploy.*\n      name: app", edited: []string{"overlay/patch.yaml"}, want: map[string]string{"/app": "0.3", "/web": ""}},
		// the patch sets web's too: a new patch of the overlay, after
		// it, sets app's
		{name: "several by regex", target: "name: .*", edited: []string{"overlay/gpu-rightsizing-deployment-app.yaml", "overlay/kustomization.yaml"}, want: map[string]string{"/app": "0.3", "/web": "0.9"}},
		// a JSON 6902 patch whose value is the field's: edited there
		{name: "json6902 by regex", target: "name: a.p", json: true, edited: []string{"overlay/patch.yaml"}, want: map[string]string{"/app": "0.3", "/web": ""}},
		// one that sets the whole map the field is in: refused
		{name: "json6902 of the whole map", target: "name: a.p", json: true, refused: true, want: map[string]string{"/app": "0.9", "/web": ""},
			body: "- op: add\n  path: /spec/template/metadata/annotations\n  value:\n    gpu-fraction: \"0.9\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := smp("0.9")
			if tt.json {
				body = patch("0.9")
			}
			if tt.body != "" {
				body = tt.body
			}
			base := strings.Replace(gpu, "  name: app\n", "  name: app\n  labels:\n    app: app\n  annotations:\n    team: ml\n", 1)
			files := map[string]string{
				"base/kustomization.yaml":    "resources:\n  - app.yaml\n  - web.yaml\n",
				"base/app.yaml":              base,
				"base/web.yaml":              cpu,
				"overlay/kustomization.yaml": "resources:\n  - ../base\npatches:\n  - path: patch.yaml\n    target:\n      " + tt.target + "\n",
				"overlay/patch.yaml":         body,
			}
			out, _, res := kustRun(t, files, patcher.Edit{Workload: dep("", "app"), Reason: "test", Ops: []workload.Op{patcher.SetGPUFraction("0.3")}})
			if tt.refused {
				require.Len(t, res.Refused, 1)
				require.ErrorIs(t, res.Refused[0], kustomize.ErrKustomize)
				require.Empty(t, res.Files)
			} else {
				require.Empty(t, res.Refused)
				var paths []string
				for _, f := range res.Files {
					paths = append(paths, f.Path)
				}
				require.Equal(t, tt.edited, paths)
			}
			require.Equal(t, tt.want, fractions(t, out, "overlay", false))
		})
	}
}

// A kustomization that names a file outside its directory builds only
// without load restrictions, as Flux builds: it is built that way, and
// edited with the same proof.
func TestKustomizeOutsideItsDirectory(t *testing.T) {
	files := map[string]string{
		"shared/deployment.yaml":        applyDeployment,
		"overlays/a/kustomization.yaml": "namespace: a\nresources:\n  - ../../shared/deployment.yaml\n",
		"overlays/b/kustomization.yaml": "namespace: b\nresources:\n  - ../../shared/deployment.yaml\n",
	}
	out, ws, res := kustRun(t, files, patcher.Edit{Workload: dep("a", "app"), Reason: "test", Ops: []workload.Op{patcher.SetGPUFraction("0.3")}})
	require.Equal(t, []string{"a/app in overlays/a/kustomization.yaml", "b/app in overlays/b/kustomization.yaml"}, ws)
	require.Empty(t, res.Refused)
	require.Equal(t, map[string]string{"a/app": "0.3"}, fractions(t, out, "overlays/a", true))
	require.Equal(t, map[string]string{"b/app": "0.5"}, fractions(t, out, "overlays/b", true))
	_, err := os.Stat(filepath.Join(out, "overlays", "a", "gpu-rightsizing-deployment-app.yaml"))
	require.NoError(t, err, "the shared file is left alone")
}

// Kustomizations that include themselves, directly or through another,
// are problems (kustomize refuses them too), not an endless walk; what
// includes them is not built either.
func TestKustomizeIncludeCycle(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"self/kustomization.yaml": "resources:\n  - .\n  - deployment.yaml\n",
		"self/deployment.yaml":    applyDeployment,
		"a/kustomization.yaml":    "resources:\n  - ../b\n",
		"b/kustomization.yaml":    "resources:\n  - ../a\n  - deployment.yaml\n",
		"b/deployment.yaml":       applyDeployment,
		"top/kustomization.yaml":  "resources:\n  - ../a\n",
		"plain/deployment.yaml":   applyDeployment,
	})
	inv, err := patcher.Discover(context.Background(), root)
	require.NoError(t, err)
	require.Len(t, inv.Workloads, 1)
	require.Equal(t, "plain/deployment.yaml", inv.Workloads[0].File)
	var files []string
	for _, p := range inv.Problems {
		require.ErrorIs(t, p, kustomize.ErrKustomize)
		files = append(files, p.File)
	}
	require.Equal(t, []string{"a/kustomization.yaml", "b/kustomization.yaml", "self/kustomization.yaml", "top/kustomization.yaml"}, files)
}

// Overlays of one base that all want the same edit have it in the base,
// once, and every overlay is built again: one whose output was that of
// the others but for its names, and whose kustomization carries the
// value somewhere else too (a replacement into a ConfigMap), shows a
// change the edit is not for, and the edit is refused.
func TestKustomizeSameEditManyOverlays(t *testing.T) {
	configMap := "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sizing\ndata:\n  fraction: \"0.5\"\n"
	base := map[string]string{
		"base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"base/deployment.yaml":    applyDeployment + configMap,
	}
	overlays := map[string]string{
		"overlays/a/kustomization.yaml": "namespace: a\nresources:\n  - ../../base\n",
		"overlays/b/kustomization.yaml": "namespace: b\nresources:\n  - ../../base\n",
		"overlays/c/kustomization.yaml": "namespace: c\nnamePrefix: c-\nresources:\n  - ../../base\n",
	}
	replacement := "namespace: d\nresources:\n  - ../../base\nreplacements:\n  - source:\n      kind: Deployment\n      name: app\n      fieldPath: spec.template.metadata.annotations.gpu-fraction\n    targets:\n      - select:\n          kind: ConfigMap\n          name: sizing\n        fieldPaths:\n          - data.fraction\n"
	tests := []struct {
		name      string
		extra     map[string]string
		fractions map[string]string // by overlay, namespace/name
		refused   bool
	}{
		{
			name:      "alike but for their names",
			fractions: map[string]string{"a": "0.3", "b": "0.3", "c": "0.3"},
		},
		{
			name:      "one carries the value into a ConfigMap",
			extra:     map[string]string{"overlays/d/kustomization.yaml": replacement},
			fractions: map[string]string{"a": "0.5", "b": "0.5", "c": "0.5", "d": "0.5"},
			refused:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for _, m := range []map[string]string{base, overlays, tt.extra} {
				for p, s := range m {
					files[p] = s
				}
			}
			var edits []patcher.Edit
			for o := range tt.fractions {
				name := "app"
				if o == "c" {
					name = "c-app"
				}
				edits = append(edits, patcher.Edit{Workload: dep(o, name), Reason: "test", Ops: []workload.Op{patcher.SetGPUFraction("0.3")}})
			}
			out, _, res := kustRun(t, files, edits...)
			if tt.refused {
				require.Empty(t, res.Files)
				require.Len(t, res.Refused, len(edits))
				for _, r := range res.Refused {
					require.ErrorIs(t, r, kustomize.ErrKustomize)
				}
				require.Contains(t, res.Refused[0].Error(), "overlays/d")
			} else {
				require.Empty(t, res.Refused)
				require.Len(t, res.Files, 1)
				require.Equal(t, "base/deployment.yaml", res.Files[0].Path)
			}
			for o, want := range tt.fractions {
				name := "app"
				if o == "c" {
					name = "c-app"
				}
				require.Equal(t, map[string]string{o + "/" + name: want}, fractions(t, out, "overlays/"+o, false), o)
			}
		})
	}
}
