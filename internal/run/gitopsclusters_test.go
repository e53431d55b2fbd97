package run_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// fleetCluster is one cluster of a fleet test: a real API server and
// Flux's controllers, bootstrapped as `flux bootstrap` leaves a cluster.
// The GitRepository flux-system follows main; the Kustomization
// flux-system applies clusters/<name>, whose apps.yaml is the
// Kustomization apps of the cluster's overlay.
type fleetCluster struct {
	name string
	kube *kubeenv.APIServer
	flux *kubeenv.Flux
}

var (
	fluxSource = kubeenv.FluxObject{Kind: "GitRepository", Namespace: kubeenv.FluxNamespace, Name: "flux-system"}
	fluxRoot   = kubeenv.FluxObject{Kind: "Kustomization", Namespace: kubeenv.FluxNamespace, Name: "flux-system"}
	fluxApps   = kubeenv.FluxObject{Kind: "Kustomization", Namespace: kubeenv.FluxNamespace, Name: "apps"}
)

// bootstrap starts the cluster's Flux on the repository's path, and
// waits until both Kustomizations have applied rev.
func (c *fleetCluster) bootstrap(t *testing.T, git *testenv.GitServer, path, rev string) {
	t.Helper()
	c.kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n"))
	c.flux.GitRepositorySource(t, fluxSource.Name, git.RepoURL(gitopsRepo), git.Token, "main")
	c.kube.Apply(t, []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: `+kubeenv.FluxNamespace+`}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: flux-system}
  path: ./`+path+`
  prune: true
`))
	applied := func(s kubeenv.FluxStatus) bool { return s.LastAppliedRevision == rev }
	c.flux.Wait(t, fluxRoot, applied)
	c.flux.Wait(t, fluxApps, applied)
}

// sync has the cluster's Flux fetch main and apply rev through both
// Kustomizations now, as `flux reconcile kustomization apps
// --with-source` does after the root.
func (c *fleetCluster) sync(t *testing.T, rev string) {
	t.Helper()
	c.flux.Reconcile(t, fluxSource, func(s kubeenv.FluxStatus) bool { return s.Artifact != nil && s.Artifact.Revision == rev })
	applied := func(s kubeenv.FluxStatus) bool { return s.LastAppliedRevision == rev }
	c.flux.Reconcile(t, fluxRoot, applied)
	c.flux.Reconcile(t, fluxApps, applied)
}

// values are what the cluster runs: summarize's and llm's gpu-fraction
// and vLLM flag.
func (c *fleetCluster) values(t *testing.T) [4]string {
	t.Helper()
	sum, llm := deployment(t, c.kube, "summarize").Spec.Template, statefulSet(t, c.kube, "llm").Spec.Template
	return [4]string{
		sum.Annotations["gpu-fraction"], flagValue(sum.Spec.Containers[0].Args),
		llm.Annotations["gpu-fraction"], flagValue(llm.Spec.Containers[0].Args),
	}
}

func statefulSet(t *testing.T, s *kubeenv.APIServer, name string) *appsv1.StatefulSet {
	t.Helper()
	code, body := s.Do(t, kubeenv.Admin, http.MethodGet, "/apis/apps/v1/namespaces/inference/statefulsets/"+name, nil, "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var st appsv1.StatefulSet
	require.NoError(t, json.Unmarshal(body, &st))
	return &st
}

// TestGitOpsLoopTwoClusters is the GitOps promise for a fleet on real
// Flux: examples/clusters on the git server, two real API servers, each
// with its own Flux applying its own clusters/<name>. One run over the
// store of both opens a pull request per (cluster, workload); each is
// merged in turn and both clusters synced. A cluster's own edit reaches
// that cluster only; the shared base's edit reaches both.
func TestGitOpsLoopTwoClusters(t *testing.T) {
	git := testenv.NewGitServer(t)
	git.NewRepo(t, gitopsRepo, testenv.DirFiles(t, "../../examples/clusters", "metrics.om.gz"))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	head := func() string {
		return kubeenv.Revision("main", strings.TrimSpace(git.Git(t, gitopsRepo, "rev-parse", "main")))
	}

	clusters := []*fleetCluster{{name: "prod-eu"}, {name: "prod-us"}}
	rev := head()
	for _, c := range clusters {
		c.kube = kubeenv.StartAPIServer(t)
		c.flux = kubeenv.StartFlux(t, c.kube)
		c.bootstrap(t, git, "clusters/"+c.name, rev)
	}
	before := [4]string{"0.6", "0.54", "0.5", "0.45"}
	for _, c := range clusters {
		require.Equal(t, before, c.values(t), "%s runs main's values", c.name)
	}

	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(fake.Token+"\n"), 0o600))
	recording := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(recording, []byte(metricstest.Fleet().String()), 0o644))
	o := options("")
	o.SCM, o.GitHub.Repo, o.GitHub.URL, o.GitHub.TokenFile = "github", gitopsRepo, fake.BaseURL(), tokenFile
	o.Usage.MetricsFile = recording
	o.Observe.Output = "table"
	o.Dashboard = false
	out, _ := runOK(t, o, run.ChangesProposed)
	t.Logf("recommender run\n%s", out)
	require.Contains(t, out, "3 opened, 0 updated, 0 unchanged, 0 closed, 0 declined, 0 failed")

	// Merged one at a time, each step says what each cluster then runs:
	// summarize's fraction and flag, llm's fraction and flag.
	steps := []struct {
		branch         string
		prodEU, prodUS [4]string
	}{
		{"gpu-rightsizing/prod-us/inference/summarize", before, [4]string{"0.90", "0.81", "0.5", "0.45"}},
		{"gpu-rightsizing/prod-eu/inference/summarize", [4]string{"0.22", "0.19", "0.5", "0.45"}, [4]string{"0.90", "0.81", "0.5", "0.45"}},
		{"gpu-rightsizing/prod-eu+prod-us/inference/statefulset_llm", [4]string{"0.22", "0.19", "0.36", "0.32"}, [4]string{"0.90", "0.81", "0.36", "0.32"}},
	}
	pulls := fake.Pulls()
	require.Len(t, pulls, len(steps))
	for _, step := range steps {
		i := slices.IndexFunc(pulls, func(p forge.FakePull) bool { return p.Head == step.branch })
		require.GreaterOrEqual(t, i, 0, "a pull request from %s", step.branch)
		require.NoError(t, fake.Merge(pulls[i].Number))
		rev := head()
		for _, c := range clusters {
			c.sync(t, rev)
		}
		require.Equal(t, step.prodEU, clusters[0].values(t), "prod-eu after merging %s", step.branch)
		require.Equal(t, step.prodUS, clusters[1].values(t), "prod-us after merging %s", step.branch)
	}
}
