package deploy_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// TestExamplesOnCluster creates every object under examples/ on a real
// API server, with strict field validation, the upstream CRDs installed:
// Flux's from the controllers' own modules (make test-deps), Argo CD's
// Application and KAI's Queue as their projects publish them
// (internal/testenv/kubeenv/testdata). A misspelt or misplaced field anywhere is
// an error. Each example is built with the kustomize API first, as Argo CD
// and Flux build it. The chart's objects, for examples/helm's values among
// others, are created the same way by TestChartOnCluster; the policies
// under examples/ are read by the tool from Git, never applied to a
// cluster, and are checked by the policy loader's own strict decoding.
func TestExamplesOnCluster(t *testing.T) {
	kube := kubeenv.StartAPIServer(t)
	kube.InstallKAIQueueCRD(t)
	kube.InstallArgoCDApplicationCRD(t)
	kube.InstallFluxCRDs(t)
	kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n"))

	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	build := func(t *testing.T, dir string) []byte {
		t.Helper()
		abs, err := filepath.Abs(filepath.Join(root, dir))
		require.NoError(t, err)
		m, err := k.Run(filesys.MakeFsOnDisk(), abs)
		require.NoError(t, err)
		b, err := m.AsYaml()
		require.NoError(t, err)
		return b
	}
	for _, dir := range []string{"examples/argocd", "examples/flux", "examples/kai-queues"} {
		t.Run(dir, func(t *testing.T) {
			kube.Apply(t, build(t, dir))
		})
	}
	t.Run("examples/quickstart/apps", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(root, "examples/quickstart/apps/*/*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		var docs []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			docs = append(docs, string(b))
		}
		kube.Apply(t, []byte(strings.Join(docs, "\n---\n")))
	})

	// What the examples promise, read back from the server.
	get := func(t *testing.T, path string) map[string]any {
		t.Helper()
		code, body := kube.Do(t, kubeenv.Admin, http.MethodGet, path, nil, "")
		require.Equal(t, http.StatusOK, code, "%s", body)
		return decodeJSON(t, body)
	}
	t.Run("Flux leaves a live change's fields alone while the marker stands", func(t *testing.T) {
		ks := get(t, "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/inference")
		src := dig(ks, "spec", "sourceRef").(map[string]any)
		require.Equal(t, "GitRepository", src["kind"])
		get(t, "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/"+src["name"].(string))
		rules := dig(ks, "spec", "ignore").([]any)
		require.Len(t, rules, 1)
		rule := rules[0].(map[string]any)
		require.Equal(t, []any{"/spec/template/metadata/annotations/" + kai.FractionAnnotation, "/spec/template/spec/containers/0/args"}, rule["paths"])
		require.Equal(t, map[string]any{"kind": "Deployment", "annotationSelector": live.MarkerAnnotation}, rule["target"])
	})
	t.Run("Argo CD ignores and keeps the fields of the tool's field manager", func(t *testing.T) {
		app := get(t, "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/inference")
		ignore := dig(app, "spec", "ignoreDifferences").([]any)
		require.Len(t, ignore, 1)
		require.Equal(t, map[string]any{"group": "apps", "kind": "Deployment", "managedFieldsManagers": []any{live.FieldManager}}, ignore[0])
		require.True(t, slices.Contains(dig(app, "spec", "syncPolicy", "syncOptions").([]any), any("RespectIgnoreDifferences=true")))
	})
	t.Run("the queues the quickstart names exist, under one parent", func(t *testing.T) {
		for _, q := range []string{"team-assistants", "team-docs", "team-i18n"} {
			require.Equal(t, "inference", dig(get(t, "/apis/scheduling.run.ai/v2/queues/"+q), "spec", "parentQueue"))
		}
	})

	// Strict validation is on: the field this project's examples once used
	// by mistake, and a misplaced one, are refused.
	t.Run("a misspelt field is refused", func(t *testing.T) {
		for _, body := range []string{
			`{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","metadata":{"name":"bad","namespace":"flux-system"},
			  "spec":{"interval":"10m","prune":true,"sourceRef":{"kind":"GitRepository","name":"gitops"},"driftIgnoreRules":[{"paths":["/spec/replicas"]}]}}`,
			`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"bad","namespace":"argocd"},
			  "spec":{"project":"default","destination":{"server":"https://kubernetes.default.svc"},"ignoreDifference":[]}}`,
		} {
			obj := decodeJSON(t, []byte(body))
			path := map[string]string{
				"Kustomization": "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations",
				"Application":   "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications",
			}[obj["kind"].(string)]
			code, resp := kube.Do(t, kubeenv.Admin, http.MethodPost, path+"?fieldValidation=Strict", []byte(body), "")
			require.Equal(t, http.StatusBadRequest, code, "%s", resp)
			require.Contains(t, string(resp), "unknown field")
		}
	})
}

// dig walks a decoded JSON object by keys.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	return m
}
