package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// hotFleet is examples/clusters' store with prod-us urgent: in
// us-east-1, the pods of summarize, llm and embed (a Deployment both
// clusters deploy from one path) pass their share in the last five
// minutes; eu-west-1 stays quiet.
func hotFleet() string {
	const samples = 26 * 60
	r := new(metricstest.Recording)
	series := func(before, after float64) []any {
		vs := make([]any, samples)
		for i := range vs {
			vs[i] = before
			if i >= samples-5 {
				vs[i] = after
			}
		}
		return vs
	}
	for _, c := range []struct {
		value, pod     string
		summarize, llm []any
	}{
		{"eu-west-1", "t4hxm", series(15, 15), series(30, 30)},
		{"us-east-1", "q9zrw", series(50, 75), series(30, 60)},
	} {
		in := func(name string, pairs ...string) string {
			return metricstest.Series(name, append(pairs, "cluster", c.value)...)
		}
		add := func(s string, vs []any) { r.Add(s, 0, time.Minute, vs...) }
		started := series(float64(metricstest.T0.Add(-time.Hour).Unix()), float64(metricstest.T0.Add(-time.Hour).Unix()))
		add(in("kube_pod_owner", "namespace", "inference", "pod", "llm-0", "uid", c.value+"-llm-0",
			"owner_kind", "StatefulSet", "owner_name", "llm", "owner_is_controller", "true"), series(1, 1))
		add(in("kube_pod_start_time", "namespace", "inference", "pod", "llm-0", "uid", c.value+"-llm-0"), started)
		add(in(metricstest.SM, "namespace", "inference", "pod", "llm-0", "container", "vllm"), c.llm)
		add(in(metricstest.KubexMemory, "namespace", "inference", "pod", "llm-0", "container", "vllm"), series(30, 30))
		for _, w := range []string{"summarize", "embed"} {
			pod, rs := w+"-6b8f9c7d5-"+c.pod, w+"-6b8f9c7d5"
			add(in("kube_pod_owner", "namespace", "inference", "pod", pod, "uid", c.value+"-"+w,
				"owner_kind", "ReplicaSet", "owner_name", rs, "owner_is_controller", "true"), series(1, 1))
			add(in("kube_replicaset_owner", "namespace", "inference", "replicaset", rs,
				"owner_kind", "Deployment", "owner_name", w, "owner_is_controller", "true"), series(1, 1))
			add(in("kube_pod_start_time", "namespace", "inference", "pod", pod, "uid", c.value+"-"+w), started)
			add(in(metricstest.SM, "namespace", "inference", "pod", pod, "container", "server"), c.summarize)
			add(in(metricstest.KubexMemory, "namespace", "inference", "pod", pod, "container", "server"), series(30, 30))
		}
	}
	return r.String()
}

// kubeconfigOf writes one kubeconfig holding a context per cluster, each
// the admin's context of one API server, as a job's mounted kubeconfig
// would.
func kubeconfigOf(t *testing.T, servers map[string]*kubeenv.APIServer) string {
	t.Helper()
	out := clientcmdapi.NewConfig()
	for name, s := range servers {
		one, err := clientcmd.LoadFromFile(s.Kubeconfig(t, kubeenv.Admin))
		require.NoError(t, err)
		c := one.Contexts[one.CurrentContext]
		out.Clusters[name] = one.Clusters[c.Cluster]
		out.AuthInfos[name] = one.AuthInfos[c.AuthInfo]
		out.Contexts["ctx-"+name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*out, path))
	return path
}

// templateAnnotation is the gpu-fraction of the pod template of a
// workload on s.
func templateAnnotation(t *testing.T, s *kubeenv.APIServer, resource, name string) string {
	t.Helper()
	code, body := s.Do(t, kubeenv.Admin, "GET", "/apis/apps/v1/namespaces/inference/"+resource+"/"+name, nil, "")
	require.Equal(t, 200, code, "%s", body)
	var obj struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(body, &obj))
	return obj.Spec.Template.Metadata.Annotations["gpu-fraction"]
}

// TestLiveClusters is the live fast path of a fleet on two real API
// servers, one per cluster of examples/clusters, reached through one
// kubeconfig with a context each. prod-us is urgent, prod-eu quiet. The
// run opens the pull requests, then live-patches prod-us's summarize and
// llm, and prod-us's embed, a Deployment both clusters deploy from one
// path; prod-eu's three stay as they were. Without a context for
// prod-us, its upsizes are refused by name; a context of a cluster the
// map does not name stops the run.
func TestLiveClusters(t *testing.T) {
	servers := map[string]*kubeenv.APIServer{"prod-eu": kubeenv.StartAPIServer(t), "prod-us": kubeenv.StartAPIServer(t)}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	summarize := read("../../examples/clusters/apps/base/summarize.yaml")
	embed := strings.ReplaceAll(summarize, "summarize", "embed")
	objects := "apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n---\n" + summarize + "---\n" +
		read("../../examples/clusters/apps/base/llm.yaml") + "---\n" + embed
	for _, s := range servers {
		s.Apply(t, []byte(objects))
	}
	kubeconfig := kubeconfigOf(t, servers)

	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS("../../examples/clusters")))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "apps", "shared"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "apps", "shared", "embed.yaml"), []byte(embed), 0o644))
	edit := func(file string, pairs ...string) {
		path := filepath.Join(repo, file)
		s := read(path)
		for i := 0; i < len(pairs); i += 2 {
			require.Contains(t, s, pairs[i])
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	}
	edit("clusters.yaml", "paths: [clusters/prod-eu, apps/prod-eu]", "paths: [clusters/prod-eu, apps/prod-eu, apps/shared]",
		"paths: [clusters/prod-us, apps/prod-us]", "paths: [clusters/prod-us, apps/prod-us, apps/shared]")
	// liveUpsize is the project's own field: the strategy moves to its
	// API group.
	edit(filepath.Join("policies", "gpu-sharing.yaml"),
		"apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterAutomationStrategy", "apiVersion: gpu-rightsizing.github.io/v1alpha1\nkind: ClusterAutomationStrategy",
		"  podEviction:\n    enabled: true\n", "  podEviction:\n    enabled: true\n  gitops:\n    liveUpsize: true\n")
	gitRepo(t, repo)
	recording := filepath.Join(t.TempDir(), "fleet.om")
	require.NoError(t, os.WriteFile(recording, []byte(hotFleet()), 0o644))

	o := options(repo)
	o.Usage.MetricsFile = recording
	o.Observe.Output = "table"
	o.Dashboard = false
	o.Live = run.Live{Enabled: true, Namespaces: []string{"inference"}, MaxChanges: 3, Force: true, Kubeconfig: kubeconfig,
		Contexts: []string{"prod-eu=ctx-prod-eu"}}

	dry := o
	dry.DryRun = true
	out, _ := runOK(t, dry, run.ChangesProposed)
	for _, ref := range []string{"prod-us:inference/Deployment/summarize", "prod-us:inference/StatefulSet/llm", "prod-eu+prod-us:inference/Deployment/embed"} {
		require.Contains(t, out, "no kubeconfig context reaches cluster prod-us (`--live-context prod-us=CONTEXT`); "+ref+" waits for its pull request")
	}
	liveRows := func(out string) string { return out[strings.Index(out, "LIVE WORKLOAD"):] }
	require.NotContains(t, liveRows(out), "prod-eu:", "a quiet cluster has no live row")

	o.Live.Contexts = []string{"prod-eu=ctx-prod-eu", "prod-us=ctx-prod-us"}
	out, _ = runOK(t, o, run.ChangesProposed)
	for _, row := range []string{"prod-us:inference/summarize  applied", "prod-us:inference/llm        applied", "prod-us:inference/embed      applied"} {
		require.Contains(t, out, row)
	}
	require.NotContains(t, liveRows(out), "prod-eu:")
	us, eu := servers["prod-us"], servers["prod-eu"]
	require.Equal(t, "0.90", templateAnnotation(t, us, "deployments", "summarize"))
	require.Equal(t, "0.90", templateAnnotation(t, us, "deployments", "embed"))
	require.NotEqual(t, "0.5", templateAnnotation(t, us, "statefulsets", "llm"))
	require.Equal(t, "0.6", templateAnnotation(t, eu, "deployments", "summarize"), "the quiet cluster's Deployment is untouched")
	require.Equal(t, "0.6", templateAnnotation(t, eu, "deployments", "embed"), "the quiet cluster's copy of a shared Deployment is untouched")
	require.Equal(t, "0.5", templateAnnotation(t, eu, "statefulsets", "llm"))

	o.Live.Contexts = []string{"prod-asia=ctx-prod-eu"}
	_, _, _, err := runOnce(t, o)
	require.ErrorContains(t, err, "`--live-context` names cluster prod-asia, which is not in the repository's ClusterMap: its clusters are prod-eu, prod-us")
}
