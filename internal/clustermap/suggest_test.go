package clustermap_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/clustermap"
	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const fleetRepo = "../../examples/clusters"

// golden compares got with testdata/file, which -update rewrites.
func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	require.Equal(t, string(want), string(got))
}

// suggest drafts the map of repo: its YAML, and each unresolved object a
// line.
func suggest(t *testing.T, repo string) (*clustermap.Suggestion, string, string) {
	t.Helper()
	s, err := clustermap.Suggest(context.Background(), repo)
	require.NoError(t, err)
	var out bytes.Buffer
	if err := s.WriteYAML(&out); err != nil {
		require.ErrorIs(t, err, clustermap.ErrNothing)
	}
	var unresolved strings.Builder
	for _, e := range s.Unresolved {
		fmt.Fprintln(&unresolved, e)
	}
	return s, out.String(), unresolved.String()
}

// TestSuggest: each layout's draft, as a golden file; what it cannot
// resolve, each at its file and line; and the draft loads with the
// policy loader's strict decoding, as the map it prints.
func TestSuggest(t *testing.T) {
	for _, tc := range []struct {
		name, repo string
		// unresolved must each be one line of what is not resolved.
		unresolved []string
	}{
		{name: "flux-fleet-infra", repo: fleetRepo},
		{name: "argocd", repo: "testdata/argocd", unresolved: []string{
			"argocd/appset.yaml:2:1: spec.generators: ApplicationSet argocd/chat: its generators (clusters) choose its clusters and paths when Argo CD runs",
			`argocd/in-cluster.yaml:11:11: spec.source.path: "tools/base" holds no file of the checkout`,
			"argocd/prod-us/summarize.yaml:29:5: spec.source.chart: Application argocd/dcgm-exporter renders the chart dcgm-exporter of https://nvidia.github.io/dcgm-exporter/helm-charts",
		}},
		{name: "flux", repo: "testdata/flux", unresolved: []string{
			"apps/orphan.yaml:2:1: metadata: Kustomization flux-system/orphan is neither in clusters/<name>/ nor under a path another mapped Kustomization applies",
			`clusters/staging/apps.yaml:12:9: spec.path: "./apps/${CLUSTER_NAME}" is substituted when it is applied`,
			"clusters/staging/apps.yaml:27:7: spec.postBuild.substituteFrom: Kustomization flux-system/base substitutes ${...} in the files under apps/staging",
			`clusters/staging/apps.yaml:40:9: spec.path: "../platform/apps" leads outside the checkout`,
			"clusters/staging/apps.yaml:50:11: spec.sourceRef.kind: Kustomization flux-system/models reads ExternalArtifact models, not this checkout",
			"clusters/staging/apps.yaml:54:1: kind: ArtifactGenerator flux-system/models builds an artifact outside this checkout's paths",
			"infrastructure/prod/apps.yaml:22:5: spec.kubeConfig: Kustomization flux-system/edge applies to the cluster its kubeconfig secret names, not to prod",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, out, unresolved := suggest(t, tc.repo)
			golden(t, tc.name+".suggested.yaml", []byte(out))
			lines := strings.Split(strings.TrimSuffix(unresolved, "\n"), "\n")
			if unresolved == "" {
				lines = nil
			}
			require.Len(t, lines, len(tc.unresolved), unresolved)
			for i, want := range tc.unresolved {
				require.True(t, strings.HasPrefix(lines[i], want), "line %d:\n got %s\nwant %s…", i, lines[i], want)
			}
			for _, e := range s.Unresolved {
				var le *located.Error
				require.True(t, errors.As(e, &le) && le.File != "" && le.Line > 0, "located: %v", e)
			}

			set := policy.Parse("clusters.yaml", []byte(out))
			require.Empty(t, set.Errors, "the draft loads strictly")
			require.NotNil(t, set.ClusterMap)
			require.Equal(t, s.Map().Spec, set.ClusterMap.Spec, "what it prints is the map it drafted")
		})
	}
}

// TestSuggestAgreesWithTheCommittedMap: on examples/clusters, `policy
// validate` gives every workload the same clusters with the drafted map
// as with the one committed.
func TestSuggestAgreesWithTheCommittedMap(t *testing.T) {
	_, out, unresolved := suggest(t, fleetRepo)
	require.Empty(t, unresolved)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fleetRepo)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clusters.yaml"), []byte(out), 0o644))

	committed := assigned(t, fleetRepo)
	require.Equal(t, `prod-eu:inference/Deployment/summarize apps/prod-eu/kustomization.yaml
prod-us:inference/Deployment/summarize apps/prod-us/kustomization.yaml
prod-eu:inference/StatefulSet/llm apps/prod-eu/kustomization.yaml
prod-us:inference/StatefulSet/llm apps/prod-us/kustomization.yaml
`, committed)
	require.Equal(t, committed, assigned(t, dir))
}

// TestSuggestArgoCDGoverns: in the Argo CD layout, the drafted map
// gives each Application's overlay its destination's cluster, as
// `policy validate` reads it.
func TestSuggestArgoCDGoverns(t *testing.T) {
	_, out, _ := suggest(t, "testdata/argocd")
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/argocd")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clusters.yaml"), []byte(out), 0o644))
	require.Equal(t, `prod-eu:inference/Deployment/summarize apps/overlays/prod-eu/kustomization.yaml
prod-us-k8s-example:inference/Deployment/summarize apps/overlays/prod-us/kustomization.yaml
`, assigned(t, dir))
}

// assigned is each workload `policy validate` finds in repo, with its
// definition root, a line each.
func assigned(t *testing.T, repo string) string {
	t.Helper()
	v, err := plan.Validate(context.Background(), plan.Options{Repo: repo})
	require.NoError(t, err)
	require.Empty(t, v.Problems)
	var b strings.Builder
	for _, w := range v.Workloads {
		fmt.Fprintf(&b, "%s %s\n", w.Ref, w.File)
	}
	return b.String()
}

// TestSuggestNothing: a checkout without a Flux or Argo CD object that
// names a cluster gives no map, since a map must name one.
func TestSuggestNothing(t *testing.T) {
	s, out, _ := suggest(t, "../../examples/quickstart")
	require.Empty(t, s.Clusters)
	require.Empty(t, out)
}
