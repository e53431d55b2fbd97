package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const fleetMap = `apiVersion: gpu-rightsizing.github.io/v1alpha1
kind: ClusterMap
metadata:
  name: fleet
spec:
  clusters:
    - name: prod-eu
      labelValue: eu-1
      paths: [clusters/prod-eu, apps/prod-eu/]
      policies: [policies/prod-eu]
    - name: staging
      paths: [clusters/staging, apps/staging]
`

func TestLoadClusterMap(t *testing.T) {
	set := policy.Parse("fleet.yaml", []byte(fleetMap))
	require.Empty(t, set.Errors)
	m := set.ClusterMap
	require.NotNil(t, m)
	require.Equal(t, policy.DefaultClusterLabel, m.Spec.Label)
	require.Equal(t, []string{"prod-eu", "staging"}, m.Names())
	require.Equal(t, map[string]string{"prod-eu": "eu-1", "staging": "staging"}, m.Values(), "a label value defaults to the name")
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"an overlay's root", "apps/prod-eu/kustomization.yaml", []string{"prod-eu"}},
		{"a trailing slash is cleaned", "apps/prod-eu/chat.yaml", []string{"prod-eu"}},
		{"a name that only starts like a path", "apps/prod-eu-2/kustomization.yaml", nil},
		{"the shared base, deployed through overlays", "apps/base/kustomization.yaml", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, m.Clusters(tc.file))
		})
	}
}

func TestLoadRefusesBadClusterMaps(t *testing.T) {
	doc := func(spec string) string {
		return "apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ClusterMap\nmetadata:\n  name: fleet\nspec:\n" + spec
	}
	tests := []struct {
		name, file, want string
	}{
		{"no clusters", doc("  label: cluster\n"), "fleet.yaml:5:1: spec.clusters: missing"},
		{"a name that is no DNS label", doc("  clusters:\n    - name: Prod_EU\n      paths: [a]\n"),
			`fleet.yaml:7:13: spec.clusters[0].name: "Prod_EU" is not a DNS label`},
		{"two clusters of one name", doc("  clusters:\n    - name: a\n      paths: [a]\n    - name: a\n      paths: [b]\n"),
			`fleet.yaml:9:13: spec.clusters[1].name: "a" is spec.clusters[0]'s name too`},
		{"two clusters of one label value", doc("  clusters:\n    - name: a\n      paths: [a]\n    - name: b\n      labelValue: a\n      paths: [b]\n"),
			`fleet.yaml:10:19: spec.clusters[1].labelValue: cluster="a" is spec.clusters[0]'s too`},
		{"no paths", doc("  clusters:\n    - name: a\n"), "fleet.yaml:7:7: spec.clusters[0].paths: missing"},
		{"a path outside the repository", doc("  clusters:\n    - name: a\n      paths: [../other]\n"),
			`fleet.yaml:8:15: spec.clusters[0].paths[0]: "../other" leads outside the repository`},
		{"an absolute path", doc("  clusters:\n    - name: a\n      paths: [/apps]\n"), `spec.clusters[0].paths[0]: "/apps": a path relative`},
		{"a bad label", doc("  label: cluster-name\n  clusters:\n    - name: a\n      paths: [a]\n"),
			`fleet.yaml:6:10: spec.label: "cluster-name" is not a label name`},
		{"an unknown field", doc("  clusters:\n    - name: a\n      dirs: [a]\n"), `fleet.yaml:8:7: spec.clusters[0].dirs: unknown field (known fields: name, labelValue, paths, policies)`},
		{"a misspelt field", doc("  clusters:\n    - name: a\n      path: [a]\n"), `fleet.yaml:8:7: spec.clusters[0].path: unknown field (did you mean "paths"?)`},
		{"Kubex's group", strings.Replace(doc("  clusters: []\n"), "gpu-rightsizing.github.io", "rightsizing.kubex.ai", 1),
			"apiVersion: ClusterMap is the project's own kind: use gpu-rightsizing.github.io/v1alpha1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := policy.Parse("fleet.yaml", []byte(tc.file))
			require.Nil(t, set.ClusterMap, "a broken map is not used")
			require.NotEmpty(t, set.Errors)
			// Every error is told, in the order of the file.
			require.Contains(t, errors.Join(set.Errors...).Error(), tc.want)
			g := set.Govern(gpuDeployment)
			require.Equal(t, engine.CausePolicyInvalid, g.Skip, "and every workload is left alone: the run cannot tell its clusters apart")
		})
	}
}

func TestLoadClusterMapWhateverThePolicyPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("fleet.yaml", fleetMap)
	write("policies/starter.yaml", readStarter(t))
	set, err := policy.Load(context.Background(), dir, "policies")
	require.NoError(t, err)
	require.Empty(t, set.Errors)
	require.NotNil(t, set.ClusterMap, "--policies narrows where policies are read, never the map")

	write("other/fleet.yaml", fleetMap)
	set, err = policy.Load(context.Background(), dir, "policies")
	require.NoError(t, err)
	require.Nil(t, set.ClusterMap)
	require.Len(t, set.Errors, 2)
	require.Contains(t, set.Errors[0].Error(), "fleet.yaml:1: kind: a repository holds one ClusterMap; another is at other/fleet.yaml:1, and neither is used")
}

func TestGovernByCluster(t *testing.T) {
	// The starter's policies for every cluster; prod-eu's own directory
	// holds a proactive policy and a strategy of the same names.
	starter := readStarter(t)
	euOnly := strings.ReplaceAll(starter, "headroomPercent: 20", "headroomPercent: 35")
	files := map[string]string{"fleet.yaml": fleetMap, "policies/all.yaml": starter, "policies/prod-eu/eu.yaml": euOnly}
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	set, err := policy.Load(context.Background(), dir)
	require.NoError(t, err)
	require.Empty(t, set.Errors, "a name used again in a cluster's own directory is no conflict")
	in := func(cluster string) policy.Target {
		t := gpuDeployment
		t.Ref.Cluster = cluster
		return t
	}
	headroom := func(g policy.Governance) int { return g.Reactive.Metrics[usage.Compute].Upsize.HeadroomPercent }
	eu := set.Govern(in("prod-eu"))
	require.Empty(t, eu.Skip)
	require.Equal(t, 35, headroom(eu), "prod-eu's own policies win over those of every cluster")
	require.Equal(t, "ClusterGpuReactivePolicy kai-gpu-sharing-reactive (prod-eu)", eu.Policies[1].String())
	st := set.Govern(in("staging"))
	require.Equal(t, 20, headroom(st), "staging has no policy of its own")
	group := set.Govern(in("prod-eu" + usage.ClusterSep + "staging"))
	require.Equal(t, 20, headroom(group), "a definition both deploy is governed by what governs both")
}

// TestClusterMapNamed: the named clusters among a limit, in the map's
// order; the nameless cluster `--cluster-label` maps is never one.
func TestClusterMapNamed(t *testing.T) {
	m := &policy.ClusterMap{Spec: policy.ClusterMapSpec{Clusters: []policy.ClusterSpec{{Name: "prod-eu"}, {Name: ""}, {Name: "prod-us"}}}}
	require.Equal(t, []string{"prod-eu", "prod-us"}, m.Named(nil))
	require.Equal(t, []string{"prod-eu", "prod-us"}, m.Named([]string{"prod-us", "prod-eu"}), "the map's order, not the limit's")
	require.Equal(t, []string{"prod-us"}, m.Named([]string{"prod-us", "staging"}))
	nameless := &policy.ClusterMap{Spec: policy.ClusterMapSpec{Clusters: []policy.ClusterSpec{{LabelValue: "eu-west-1"}}}}
	require.Empty(t, nameless.Named(nil))
}
