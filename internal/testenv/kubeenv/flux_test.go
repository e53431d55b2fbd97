package kubeenv_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// TestFluxVersions: the versions testenv looks for are the ones the
// wrapper modules under hack/flux build.
func TestFluxVersions(t *testing.T) {
	for name, want := range map[string]string{
		"source-controller":    kubeenv.FluxSourceControllerVersion,
		"kustomize-controller": kubeenv.FluxKustomizeControllerVersion,
		"helm-controller":      kubeenv.FluxHelmControllerVersion,
	} {
		path := filepath.Join("..", "..", "..", "hack", "flux", name, "go.mod")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		f, err := modfile.Parse(path, b, nil)
		require.NoError(t, err)
		var got string
		for _, r := range f.Require {
			if r.Mod.Path == "github.com/fluxcd/"+name {
				got = r.Mod.Version
			}
		}
		require.Equal(t, want, got, "%s requires github.com/fluxcd/%s", path, name)
		require.Len(t, f.Tool, 1, "%s builds one tool", path)
		require.Equal(t, "github.com/fluxcd/"+name, f.Tool[0].Path)
	}
}

// TestFlux: the real controllers fetch a repository served by the git
// server and apply it; a commit pushed later reaches the cluster once the
// source and the Kustomization are reconciled.
func TestFlux(t *testing.T) {
	kube := kubeenv.StartAPIServer(t)
	git := testenv.NewGitServer(t)
	flux := kubeenv.StartFlux(t, kube)
	kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n"))
	cm := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {fraction: \"" + v + "\"}\n"
	}
	git.NewRepo(t, "acme/gitops", map[string]string{"apps/settings.yaml": cm("0.5")})
	flux.GitRepositorySource(t, "gitops", git.RepoURL("acme/gitops"), git.Token, "main")
	kube.Apply(t, []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: gitops}
  path: ./apps
  prune: true
`))
	ks := kubeenv.FluxObject{Kind: "Kustomization", Namespace: kubeenv.FluxNamespace, Name: "apps"}
	src := kubeenv.FluxObject{Kind: "GitRepository", Namespace: kubeenv.FluxNamespace, Name: "gitops"}
	head := strings.TrimSpace(git.Git(t, "acme/gitops", "rev-parse", "main"))
	flux.Wait(t, ks, func(s kubeenv.FluxStatus) bool { return s.LastAppliedRevision == kubeenv.Revision("main", head) })

	data := func() string {
		code, body := kube.Do(t, kubeenv.Admin, http.MethodGet, "/api/v1/namespaces/apps/configmaps/settings", nil, "")
		require.Equal(t, http.StatusOK, code, "%s", body)
		var obj struct {
			Data map[string]string `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &obj))
		return obj.Data["fraction"]
	}
	require.Equal(t, "0.5", data())

	head = git.Commit(t, "acme/gitops", "main", map[string]string{"apps/settings.yaml": cm("0.7")}, "raise")
	rev := kubeenv.Revision("main", head)
	flux.Reconcile(t, src, func(s kubeenv.FluxStatus) bool { return s.Artifact != nil && s.Artifact.Revision == rev })
	flux.Reconcile(t, ks, func(s kubeenv.FluxStatus) bool { return s.LastAppliedRevision == rev })
	require.Equal(t, "0.7", data())
}
