package plan_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fleetRepo is Flux's fleet-infra layout: clusters/<name> applies the
// overlay apps/<name>, and both overlays build apps/base, which holds a
// Deployment summarize on 0.6 of a GPU and a StatefulSet llm on 0.5.
// Its ClusterMap maps prod-eu and prod-us to the cluster label's values
// eu-west-1 and us-east-1.
const fleetRepo = "../../examples/clusters"

// fleetAt is the evaluation time: the fleet recording's last sample.
var fleetAt = metricstest.FleetAt

// fleetPlan plans dir over src, and returns the plan and its log.
func fleetPlan(t *testing.T, dir string, src plan.UsageSource, opts plan.Options) (*plan.Plan, string) {
	t.Helper()
	var log bytes.Buffer
	opts.Repo, opts.At, opts.Source = dir, fleetAt, src
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	p, err := plan.Make(context.Background(), opts)
	require.NoError(t, err)
	return p, log.String()
}

// rows renders each decision a line: its ref, action, allocations and
// the pods its evidence names.
func rows(p *plan.Plan) string {
	var b strings.Builder
	for _, d := range p.Decisions {
		var pods []string
		for _, pod := range d.Usage.Pods {
			pods = append(pods, pod.Name)
		}
		b.WriteString(d.Workload.Ref.String() + " (" + d.Workload.File + "): " + string(d.Action) + " " + d.Current.String() + " → " +
			d.Recommended.String() + " urgent=" + boolString(d.Urgent) + " pods=" + strings.Join(pods, ",") + "\n")
	}
	return b.String()
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestFleetOfClusters: one store of two clusters and a repository that
// maps them plan a row per (cluster, workload), each decided on its own
// cluster's series: the busy cluster's summarize is upsized and the quiet
// one's scaled back, llm-0 is never summed across clusters, each edit
// lands where that cluster's value lives (a patch of its overlay when the
// clusters disagree, the shared base when they agree), and every overlay
// still builds. A recording and a real Prometheus fed the same series
// agree. The plan's JSON is golden (-update rewrites it).
func TestFleetOfClusters(t *testing.T) {
	rec := metricstest.Fleet()
	p, log := fleetPlan(t, fleetRepo, rec.Parse(t), plan.Options{})
	require.Empty(t, p.Problems)
	require.NotContains(t, log, "unmapped")
	require.Equal(t, `prod-eu:inference/Deployment/summarize (apps/prod-eu/kustomization.yaml): scaleBack 0.60 → 0.22 urgent=false pods=prod-eu/summarize-6b8f9c7d5-t4hxm
prod-us:inference/Deployment/summarize (apps/prod-us/kustomization.yaml): upsize 0.60 → 0.90 urgent=true pods=prod-us/summarize-6b8f9c7d5-q9zrw
prod-eu:inference/StatefulSet/llm (apps/prod-eu/kustomization.yaml): scaleBack 0.50 → 0.36 urgent=false pods=prod-eu/llm-0
prod-us:inference/StatefulSet/llm (apps/prod-us/kustomization.yaml): scaleBack 0.50 → 0.36 urgent=false pods=prod-us/llm-0
`, rows(p))

	// One query for both clusters: the requests do not grow with them.
	require.Len(t, p.Queries, 1)
	require.Equal(t, "cluster", p.Queries[0].ClusterLabel)

	var js bytes.Buffer
	require.NoError(t, p.WriteJSON(&js))
	golden(t, "testdata/clusters.plan.json", js.Bytes())

	files := map[string]string{}
	for _, f := range p.Files {
		files[f.Path] = f.Diff()
	}
	require.ElementsMatch(t, []string{"apps/base/llm.yaml",
		"apps/prod-eu/kustomization.yaml", "apps/prod-eu/gpu-rightsizing-deployment-summarize.yaml", "apps/prod-eu/gpu-rightsizing-args-deployment-summarize.yaml",
		"apps/prod-us/kustomization.yaml", "apps/prod-us/gpu-rightsizing-deployment-summarize.yaml", "apps/prod-us/gpu-rightsizing-args-deployment-summarize.yaml"}, keys(files),
		"llm's one value in the base, which both clusters agree on; summarize's in each overlay, which they do not")
	require.NotContains(t, files, "apps/base/summarize.yaml", "the base both clusters build keeps what neither agrees on")

	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fleetRepo)))
	errs, written := p.WriteFiles(dir)
	require.NoError(t, errors.Join(errs...))
	require.True(t, written)
	for cluster, want := range map[string]string{"prod-eu": "0.22", "prod-us": "0.90"} {
		built := build(t, filepath.Join(dir, "apps", cluster))
		require.Contains(t, built, "gpu-fraction: \""+want+"\"", "%s's summarize: %s", cluster, built)
		require.Contains(t, built, "gpu-fraction: \"0.36\"", "%s's llm", cluster)
	}

	sets, err := p.ChangeSets("")
	require.NoError(t, err)
	var keysOf []string
	for _, cs := range sets {
		keysOf = append(keysOf, string(cs.Grouping)+" "+cs.Key)
	}
	require.Equal(t, []string{
		"workload prod-eu+prod-us:inference/StatefulSet/llm",
		"workload prod-eu:inference/Deployment/summarize",
		"workload prod-us:inference/Deployment/summarize",
	}, keysOf, "one change set per (cluster, workload); the base edit both agree on is one")

	t.Run("a real Prometheus holding both clusters agrees", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fleet.om")
		require.NoError(t, os.WriteFile(path, []byte(rec.String()), 0o644))
		src, err := prometheus.New(prometheus.Config{URL: testenv.StartPrometheus(t, path).URL, Timeout: 10 * time.Second})
		require.NoError(t, err)
		got, _ := fleetPlan(t, fleetRepo, src, plan.Options{})
		require.Empty(t, got.Problems)
		require.Equal(t, rows(p), rows(got))
	})

	t.Run("one cluster, by --cluster and by --workload", func(t *testing.T) {
		for _, f := range []plan.Filter{{Clusters: []string{"prod-us"}}, {Workloads: []string{"prod-us:inference/*/*"}}} {
			got, _ := fleetPlan(t, fleetRepo, rec.Parse(t), plan.Options{Filter: f})
			require.Equal(t, `prod-us:inference/Deployment/summarize (apps/prod-us/kustomization.yaml): upsize 0.60 → 0.90 urgent=true pods=prod-us/summarize-6b8f9c7d5-q9zrw
prod-us:inference/StatefulSet/llm (apps/prod-us/kustomization.yaml): scaleBack 0.50 → 0.36 urgent=false pods=prod-us/llm-0
`, rows(got), "%+v", f)
		}
	})

	t.Run("a cluster the map does not hold", func(t *testing.T) {
		_, err := plan.Make(context.Background(), plan.Options{Repo: fleetRepo, At: fleetAt, Source: rec.Parse(t),
			Filter: plan.Filter{Clusters: []string{"prod-ap"}}})
		var oe *plan.OptionsError
		require.ErrorAs(t, err, &oe)
		require.ErrorContains(t, err, "`--cluster` \"prod-ap\": ClusterMap fleet (clusters.yaml) maps prod-eu, prod-us")
	})

	t.Run("one cluster per pull request", func(t *testing.T) {
		sets, err := p.ChangeSets(plan.ByCluster)
		require.NoError(t, err)
		var keysOf []string
		for _, cs := range sets {
			keysOf = append(keysOf, string(cs.Grouping)+" "+cs.Key)
		}
		require.Equal(t, []string{"cluster prod-eu+prod-us"}, keysOf,
			"the base edit both clusters agree on joins their change sets: two would conflict on it")
	})
}

// TestFleetWithoutAMap: the same store read for a repository of one
// cluster (prod-eu's overlay alone) without a ClusterMap mixes two
// clusters' pods under one name. Each workload is then said to be
// mixed, naming the label and its values, and nothing changes on it: no
// scale-back, no urgent upsize.
func TestFleetWithoutAMap(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fleetRepo)))
	for _, f := range []string{"clusters.yaml", "clusters/prod-us", "apps/prod-us"} {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, f)))
	}
	rec := metricstest.Fleet()
	check := func(t *testing.T, p *plan.Plan, log string) {
		t.Helper()
		require.Empty(t, p.Files)
		require.Len(t, p.Decisions, 2)
		for _, d := range p.Decisions {
			require.Equal(t, engine.NoChange, d.Action, d.Reason())
			require.False(t, d.Urgent)
			require.Equal(t, engine.CauseDataMixed, d.Cause, d.Reason())
			require.Contains(t, d.Reason(), `differ in cluster ("eu-west-1", "us-east-1")`)
		}
		require.Contains(t, log, `level=WARN msg=usage warning=`)
		require.Contains(t, log, `differ in cluster (\"eu-west-1\", \"us-east-1\")`)
	}
	t.Run("a recording", func(t *testing.T) {
		p, log := fleetPlan(t, dir, rec.Parse(t), plan.Options{})
		check(t, p, log)
	})
	t.Run("a real Prometheus", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fleet.om")
		require.NoError(t, os.WriteFile(path, []byte(rec.String()), 0o644))
		src, err := prometheus.New(prometheus.Config{URL: testenv.StartPrometheus(t, path).URL, Timeout: 10 * time.Second})
		require.NoError(t, err)
		p, log := fleetPlan(t, dir, src, plan.Options{})
		check(t, p, log)
	})
	t.Run("--cluster-label reads one cluster of a recording", func(t *testing.T) {
		p, _ := fleetPlan(t, dir, rec.Parse(t), plan.Options{ClusterLabel: plan.ClusterLabel{Name: "cluster", Value: "us-east-1"}})
		for _, d := range p.Decisions {
			require.NotEqual(t, engine.CauseDataMixed, d.Cause, d.Reason())
			require.Empty(t, d.Workload.Ref.Cluster, "the map of one cluster names none")
		}
	})
}

// build builds the kustomization in dir with kustomize's Go API, as Flux
// would, and returns the YAML.
func build(t *testing.T, dir string) string {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, dir)
	out, err := rm.AsYaml()
	require.NoError(t, err)
	return string(out)
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(file, got, 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "run with -update to write it")
	require.Equal(t, string(want), string(got))
}

// TestRequestsDoNotGrowWithClusters: a plan over 1, 10 or 50 clusters in
// one store asks a real Prometheus the same number of requests, since
// one matcher (cluster=~"c0|c1|…") covers every cluster. Counted by a
// proxy in front of the server. `make bench-e2e` reports the same counts
// (BenchmarkE2EClusterRequests).
func TestRequestsDoNotGrowWithClusters(t *testing.T) {
	requests := map[int]int{}
	for _, n := range []int{1, 10, 50} {
		requests[n] = clusterRequests(t, n)
	}
	t.Logf("requests per plan by clusters: %v", requests)
	require.Equal(t, requests[1], requests[10])
	require.Equal(t, requests[1], requests[50])
}

// clusterRequests plans n clusters, each an overlay of the fleet's base
// with an llm-0 of its own in one store, and returns the requests the
// plan made to that store's Prometheus.
func clusterRequests(t testing.TB, n int) int {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "apps", "base"), os.DirFS(filepath.Join(fleetRepo, "apps", "base"))))
	require.NoError(t, os.CopyFS(filepath.Join(dir, "policies"), os.DirFS(filepath.Join(fleetRepo, "policies"))))
	clusterMap := "apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ClusterMap\nmetadata:\n  name: fleet\nspec:\n  clusters:\n"
	rec := new(metricstest.Recording)
	for i := range n {
		c := "c" + strconv.Itoa(i)
		clusterMap += "    - name: " + c + "\n      paths: [apps/" + c + "]\n"
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "apps", c), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "apps", c, "kustomization.yaml"), []byte("resources:\n  - ../base\n"), 0o644))
		in := func(name string, pairs ...string) string {
			return metricstest.Series(name, append(pairs, "cluster", c)...)
		}
		ones, use := make([]any, 30), make([]any, 30)
		for j := range ones {
			ones[j], use[j] = 1.0, 20.0
		}
		rec.Add(in("kube_pod_owner", "namespace", "inference", "pod", "llm-0", "uid", c, "owner_kind", "StatefulSet", "owner_name", "llm", "owner_is_controller", "true"), 0, time.Minute, ones...)
		rec.Add(in(metricstest.SM, "namespace", "inference", "pod", "llm-0", "container", "vllm"), 0, time.Minute, use...)
		rec.Add(in(metricstest.KubexMemory, "namespace", "inference", "pod", "llm-0", "container", "vllm"), 0, time.Minute, use...)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "clusters.yaml"), []byte(clusterMap), 0o644))
	path := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(path, []byte(rec.String()), 0o644))
	proxy := testenv.NewFaultProxy(t, testenv.StartPrometheus(t, path).URL)
	src, err := prometheus.New(prometheus.Config{URL: proxy.URL, Timeout: 10 * time.Second})
	require.NoError(t, err)
	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: metricstest.T0.Add(29 * time.Minute), Source: src})
	require.NoError(t, err)
	require.Empty(t, p.Problems)
	require.Len(t, p.Decisions, 2*n, "summarize and llm in each cluster")
	pods := 0
	for _, d := range p.Decisions {
		pods += len(d.Usage.Pods)
	}
	require.Equal(t, n, pods, "llm-0 of each cluster, read as its own")
	return proxy.Requests()
}

// TestApplicationSetChartsWarn: a chart no Application or HelmRelease
// renders is not read. When an ApplicationSet in the checkout may render
// it (its cluster generator names no path the tool can follow), that is
// a warning at the default level naming both, not an INFO line.
func TestApplicationSetChartsWarn(t *testing.T) {
	files := map[string]string{
		"charts/chat/Chart.yaml":                "apiVersion: v2\nname: chat\nversion: 0.1.0\n",
		"charts/chat/templates/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: chat\n",
		// The shape of Argo CD's cluster generator example
		// (argoproj/argo-cd, docs/operator-manual/applicationset/Generators-Cluster.md).
		"argocd/chat.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: chat
spec:
  generators:
    - clusters: {}
  template:
    metadata:
      name: '{{name}}-chat'
    spec:
      project: default
      source:
        repoURL: https://git.example/fleet.git
        path: charts/chat
      destination:
        server: '{{server}}'
        namespace: inference
`,
	}
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"with an ApplicationSet: a warning", []string{"charts/chat/Chart.yaml", "charts/chat/templates/deployment.yaml", "argocd/chat.yaml"},
			`level=WARN msg="charts that no Application, HelmRelease or helmCharts of the checkout renders are not read; the checkout's ApplicationSets may render them, and their generators are not read" charts=[charts/chat] applicationSets=[argocd/chat.yaml]`},
		{"without one: INFO, as before", []string{"charts/chat/Chart.yaml", "charts/chat/templates/deployment.yaml"},
			`level=INFO msg="charts that no Application, HelmRelease or helmCharts of the checkout renders are not read" charts=[charts/chat]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(files[f]), 0o644))
			}
			var log bytes.Buffer
			_, err := plan.Govern(context.Background(), plan.Options{Repo: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			require.NoError(t, err)
			require.Contains(t, log.String(), tc.want)
		})
	}
}

// TestValidateNamesClusters: `policy validate` on a repository with a
// map lists each workload per cluster, says what the map holds, and
// leaves a root under no cluster's paths alone as unmapped, naming it.
func TestValidateNamesClusters(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(fleetRepo)))
	require.NoError(t, os.CopyFS(filepath.Join(dir, "apps", "staging"), os.DirFS(filepath.Join(fleetRepo, "apps", "prod-eu"))))
	v, err := plan.Validate(context.Background(), plan.Options{Repo: dir})
	require.NoError(t, err)
	var got []string
	for _, w := range v.Workloads {
		got = append(got, w.Ref.String()+" "+string(w.Skip))
	}
	require.Equal(t, []string{
		"inference/Deployment/summarize unmapped", "prod-eu:inference/Deployment/summarize ", "prod-us:inference/Deployment/summarize ",
		"inference/StatefulSet/llm unmapped", "prod-eu:inference/StatefulSet/llm ", "prod-us:inference/StatefulSet/llm ",
	}, got, "one workload's rows of every cluster together")
	for _, w := range v.Workloads {
		if w.Skip == engine.CauseUnmapped {
			require.Equal(t, "apps/staging/kustomization.yaml", w.File)
			require.Contains(t, w.Why, "apps/staging/kustomization.yaml lies under no cluster's paths in ClusterMap fleet (clusters.yaml:3)")
		}
	}
	var notes []string
	for _, p := range v.Policies {
		if p.Kind == "ClusterMap" {
			notes = append(notes, p.Note)
		}
	}
	require.Equal(t, []string{`the cluster map: prod-eu (cluster="eu-west-1": clusters/prod-eu, apps/prod-eu); prod-us (cluster="us-east-1": clusters/prod-us, apps/prod-us)`}, notes)
}

// TestWholeStoreOfOneCluster: a job per cluster whose Prometheus holds
// that cluster alone, its series without the map's label. Read by the
// label, the cluster has no series, and the error says the store holds
// no value of it; with --whole-store the same rows as from the shared
// store.
func TestWholeStoreOfOneCluster(t *testing.T) {
	var own []string
	for _, line := range strings.SplitAfter(metricstest.Fleet().String(), "\n") {
		if strings.Contains(line, `cluster="eu-west-1"`) {
			continue
		}
		own = append(own, strings.Replace(line, `,cluster="us-east-1"`, "", 1))
	}
	path := filepath.Join(t.TempDir(), "prod-us.om")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(own, "")), 0o644))
	src, err := openmetrics.OpenRecorded(path)
	require.NoError(t, err)
	us := plan.Filter{Clusters: []string{"prod-us"}}

	byLabel, _ := fleetPlan(t, fleetRepo, src, plan.Options{Filter: us})
	require.Empty(t, byLabel.Files)
	require.Len(t, byLabel.Problems, 1)
	require.Equal(t, `usage of 2 workload(s) unavailable: cluster prod-us: no series of `+path+` has cluster="us-east-1", nor any other value of cluster`,
		byLabel.Problems[0].Message)

	whole, _ := fleetPlan(t, fleetRepo, src, plan.Options{Filter: us, WholeStore: true})
	require.Empty(t, whole.Problems)
	require.Equal(t, `prod-us:inference/Deployment/summarize (apps/prod-us/kustomization.yaml): upsize 0.60 → 0.90 urgent=true pods=prod-us/summarize-6b8f9c7d5-q9zrw
prod-us:inference/StatefulSet/llm (apps/prod-us/kustomization.yaml): scaleBack 0.50 → 0.36 urgent=false pods=prod-us/llm-0
`, rows(whole))

	_, err = plan.Make(context.Background(), plan.Options{Repo: fleetRepo, At: fleetAt, Source: src, WholeStore: true})
	require.ErrorContains(t, err, "`--whole-store` reads a store that holds one cluster alone: name that cluster with `--cluster`")
}
