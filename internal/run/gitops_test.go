package run_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// gitops is the whole loop of a test, every part real but the forge: a
// repository on the git server whose pull requests live on the fake
// GitHub (merging is a real git merge), and a real API server that Flux's
// real controllers sync from that repository.
type gitops struct {
	t     *testing.T
	kube  *kubeenv.APIServer
	flux  *kubeenv.Flux
	git   *testenv.GitServer
	forge *forge.FakeGitHub
	// opts are a run's against the forge, on the quickstart's
	// recording.
	opts run.Options
}

const gitopsRepo = "acme/gitops"

const gpuResource = corev1.ResourceName("nvidia.com/gpu")

// newGitOps serves files as the repository's first commit, with the
// namespace inference on the cluster and the GitRepository "gitops" in
// flux-system following main.
func newGitOps(t *testing.T, files map[string]string) *gitops {
	t.Helper()
	g := &gitops{t: t, kube: kubeenv.StartAPIServer(t), git: testenv.NewGitServer(t)}
	g.flux = kubeenv.StartFlux(t, g.kube)
	g.git.NewRepo(t, gitopsRepo, files)
	g.forge = forge.NewFakeGitHub(t, g.git, "acme", "gitops")
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(g.forge.Token+"\n"), 0o600))
	g.opts = options("")
	g.opts.SCM, g.opts.GitHub.Repo, g.opts.GitHub.URL, g.opts.GitHub.TokenFile = "github", gitopsRepo, g.forge.BaseURL(), tokenFile
	g.opts.Observe.Output = "table"
	g.kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: inference}\n"))
	g.flux.GitRepositorySource(t, "gitops", g.git.RepoURL(gitopsRepo), g.git.Token, "main")
	return g
}

// kustomization creates the Flux Kustomization name, which applies path
// of the repository with spec (YAML lines, indented by two), and waits
// until it has applied main's head.
func (g *gitops) kustomization(t *testing.T, name, path, spec string) kubeenv.FluxObject {
	t.Helper()
	g.kube.Apply(t, []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: `+name+`, namespace: `+kubeenv.FluxNamespace+`}
spec:
  interval: 10m
  sourceRef: {kind: GitRepository, name: gitops}
  path: `+path+`
  prune: true
`+spec))
	ks := kubeenv.FluxObject{Kind: "Kustomization", Namespace: kubeenv.FluxNamespace, Name: name}
	rev := g.head(t)
	g.flux.Wait(t, ks, func(s kubeenv.FluxStatus) bool { return s.LastAppliedRevision == rev })
	return ks
}

// head is main's head as Flux names it.
func (g *gitops) head(t *testing.T) string {
	t.Helper()
	return kubeenv.Revision("main", strings.TrimSpace(g.git.Git(t, gitopsRepo, "rev-parse", "main")))
}

// sync has Flux fetch main and apply it through ks now, as `flux reconcile
// kustomization --with-source` does, and returns the revision applied.
func (g *gitops) sync(t *testing.T, ks kubeenv.FluxObject) string {
	t.Helper()
	rev := g.head(t)
	src := kubeenv.FluxObject{Kind: "GitRepository", Namespace: kubeenv.FluxNamespace, Name: "gitops"}
	g.flux.Reconcile(t, src, func(s kubeenv.FluxStatus) bool { return s.Artifact != nil && s.Artifact.Revision == rev })
	g.flux.Reconcile(t, ks, func(s kubeenv.FluxStatus) bool { return s.LastAppliedRevision == rev })
	return rev
}

// recommend runs with the options edit changes, when not nil, and
// returns its output; the run must go well (nothing to do, or changes
// proposed).
func (g *gitops) recommend(t *testing.T, edit func(*run.Options)) (stdout, stderr string) {
	t.Helper()
	o := g.opts
	if edit != nil {
		edit(&o)
	}
	stdout, stderr, res, err := runOnce(t, o)
	t.Logf("recommender run → %s\n%s", res.Outcome, stdout)
	require.NoError(t, err, "%s\n%s", stdout, stderr)
	require.Contains(t, []run.Outcome{run.NothingToDo, run.ChangesProposed}, res.Outcome, "%s\n%s", stdout, stderr)
	return stdout, stderr
}

// mergeOpen merges every open pull request, as a reviewer would, and
// returns how many.
func (g *gitops) mergeOpen(t *testing.T) int {
	t.Helper()
	n := 0
	for _, p := range g.forge.Pulls() {
		if p.State == "open" {
			require.NoError(t, g.forge.Merge(p.Number))
			n++
		}
	}
	return n
}

// eventually polls the Deployment inference/name until ok holds of it,
// for at most a minute: the helm-controller upgrades a release after the
// Kustomization that carries it has applied.
func (g *gitops) eventually(t *testing.T, name string, ok func(*appsv1.Deployment) bool) *appsv1.Deployment {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var d *appsv1.Deployment
		code, body := g.kube.Do(t, kubeenv.Admin, http.MethodGet, "/apis/apps/v1/namespaces/inference/deployments/"+name, nil, "")
		if code == http.StatusOK {
			d = new(appsv1.Deployment)
			require.NoError(t, json.Unmarshal(body, d))
			if ok(d) {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployment inference/%s: not as expected after 1m: %d %s\nFlux log, last lines:\n%s",
				name, code, body, tailText(g.flux.Log(), 6000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tailText(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// repoFiles is the quickstart's policies with the files of the directory
// dir of testdata/gitops, or the whole quickstart when dir is "".
func repoFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := quickstartFiles(t)
	if dir == "" {
		return files
	}
	for p := range files {
		if !strings.HasPrefix(p, "policies/") {
			delete(files, p)
		}
	}
	maps.Copy(files, testenv.DirFiles(t, filepath.Join("testdata", "gitops", dir)))
	return files
}

func vllmArgs(d *appsv1.Deployment) []string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "vllm" {
			return c.Args
		}
	}
	return nil
}

// flagValue is the value after --gpu-memory-utilization in args.
func flagValue(args []string) string {
	i := slices.Index(args, "--gpu-memory-utilization")
	if i < 0 || i+1 >= len(args) {
		return ""
	}
	return args[i+1]
}

// TestGitOpsLoop is the GitOps promise on real Flux: a run opens pull
// requests, a person merges them, and Flux's next
// reconciliation puts the new values on the live Deployments — a
// fraction raised with its vLLM flag, one scaled back, and a whole-GPU
// Deployment moved onto KAI (fraction, queue label, scheduler; the
// nvidia.com/gpu request Git no longer holds pruned) — whether the value
// lives in a plain manifest, a Kustomize overlay or a HelmRelease's values.
func TestGitOpsLoop(t *testing.T) {
	t.Run("plain manifests", func(t *testing.T) {
		// `make demo-gitops` runs this case and shows its narrative.
		d := newDemo()
		g := newGitOps(t, repoFiles(t, ""))
		d.step("etcd, kube-apiserver %s, the git server, source-, kustomize- and helm-controller started; the quickstart pushed to %s",
			kubeenv.APIServerVersion, gitopsRepo)
		ks := g.kustomization(t, "apps", "./apps", "")
		d.step("Flux applied main (%s) to the namespace inference", g.head(t))
		before := deployment(t, g.kube, "asr-whisper")
		require.Contains(t, before.Spec.Template.Spec.Containers[0].Resources.Limits, gpuResource)
		require.Equal(t, "0.5", deployment(t, g.kube, "chat").Spec.Template.Annotations["gpu-fraction"])
		d.deployments("live, before", g, "chat", "summarize", "translate", "asr-whisper")

		out, _ := g.recommend(t, nil)
		require.Contains(t, out, "4 opened")
		d.step("recommender run: pull requests opened on the fake GitHub\n%s", indent(out))
		require.Equal(t, 4, g.mergeOpen(t))
		d.step("a reviewer merged the 4 pull requests (real git merges into main)")
		rev := g.sync(t, ks)
		d.step("Flux fetched and applied %s", rev)
		d.deployments("live, after", g, "chat", "summarize", "translate", "asr-whisper")

		chat := deployment(t, g.kube, "chat")
		require.Equal(t, "0.72", chat.Spec.Template.Annotations["gpu-fraction"], "the upsize reached the cluster")
		require.Equal(t, "0.64", flagValue(vllmArgs(chat)), "and vLLM's flag with it")
		require.Equal(t, "0.33", deployment(t, g.kube, "summarize").Spec.Template.Annotations["gpu-fraction"], "the scale-back reached the cluster")
		asr := deployment(t, g.kube, "asr-whisper")
		require.Equal(t, "0.24", asr.Spec.Template.Annotations["gpu-fraction"])
		require.Equal(t, "kubex-unlimited-gpu-queue", asr.Spec.Template.Labels["kai.scheduler/queue"], "the queue label reached the cluster")
		require.Equal(t, "kai-scheduler", asr.Spec.Template.Spec.SchedulerName)
		require.NotContains(t, asr.Spec.Template.Spec.Containers[0].Resources.Limits, gpuResource, "Flux pruned the whole-GPU request Git dropped")
		require.NotContains(t, asr.Spec.Template.Spec.Containers[0].Resources.Requests, gpuResource)

		// chat's usage is read in whole-GPU terms (compute), so the same
		// recording against the merged value proposes nothing more: the
		// loop has a fixed point. (The others' memory readings are percent
		// of the allocation the recording was made under, which a replay
		// against the new one misreads.)
		out, _ = g.recommend(t, nil)
		require.NotContains(t, out, "inference/Deployment/chat", "once merged and synced, chat has nothing left to propose")
	})

	t.Run("kustomize overlay", func(t *testing.T) {
		g := newGitOps(t, repoFiles(t, "overlay"))
		ks := g.kustomization(t, "apps", "./apps/prod", "")
		require.Equal(t, "0.5", deployment(t, g.kube, "chat").Spec.Template.Annotations["gpu-fraction"])

		out, _ := g.recommend(t, nil)
		require.Contains(t, out, "1 opened")
		require.Equal(t, 1, g.mergeOpen(t))
		g.sync(t, ks)
		chat := deployment(t, g.kube, "chat")
		require.Equal(t, "0.72", chat.Spec.Template.Annotations["gpu-fraction"], "the overlay's patch, edited, reached the cluster")
		require.Equal(t, "0.64", flagValue(vllmArgs(chat)), "the base's flag, edited, reached the cluster")
	})

	t.Run("HelmRelease", func(t *testing.T) {
		g := newGitOps(t, repoFiles(t, "helm"))
		ks := g.kustomization(t, "apps", "./apps", "")
		g.eventually(t, "chat", func(d *appsv1.Deployment) bool { return d.Spec.Template.Annotations["gpu-fraction"] == "0.5" })

		out, _ := g.recommend(t, nil)
		require.Contains(t, out, "1 opened")
		require.Equal(t, 1, g.mergeOpen(t))
		g.sync(t, ks)
		// kustomize-controller applies the HelmRelease; helm-controller
		// then upgrades the release.
		chat := g.eventually(t, "chat", func(d *appsv1.Deployment) bool { return d.Spec.Template.Annotations["gpu-fraction"] == "0.72" })
		require.Equal(t, "0.64", flagValue(vllmArgs(chat)), "the release's values, edited, reached the cluster")
	})
}

// demo narrates a test for `make demo-gitops` (RECOMMENDER_DEMO set): what
// each step did and how long it took. Otherwise it says nothing.
type demo struct {
	w    io.Writer
	last time.Time
}

func newDemo() *demo {
	d := &demo{w: io.Discard, last: time.Now()}
	if os.Getenv("RECOMMENDER_DEMO") != "" {
		d.w = os.Stdout
	}
	return d
}

func (d *demo) step(format string, args ...any) {
	now := time.Now()
	fmt.Fprintf(d.w, "[%5.1fs] %s\n", now.Sub(d.last).Seconds(), fmt.Sprintf(format, args...))
	d.last = now
}

// deployments prints what the live Deployments ask KAI for.
func (d *demo) deployments(title string, g *gitops, names ...string) {
	fmt.Fprintf(d.w, "\n        %s:\n", title)
	tw := tabwriter.NewWriter(d.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "        DEPLOYMENT\tgpu-fraction\tkai.scheduler/queue\tnvidia.com/gpu\t--gpu-memory-utilization")
	for _, name := range names {
		var dep appsv1.Deployment
		code, body := g.kube.Do(g.t, kubeenv.Admin, http.MethodGet, "/apis/apps/v1/namespaces/inference/deployments/"+name, nil, "")
		if code != http.StatusOK || json.Unmarshal(body, &dep) != nil {
			continue
		}
		tmpl := dep.Spec.Template
		gpus := "-"
		if q, ok := tmpl.Spec.Containers[0].Resources.Limits[gpuResource]; ok {
			gpus = q.String()
		}
		flag := flagValue(tmpl.Spec.Containers[0].Args)
		for _, a := range tmpl.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--gpu_memory_utilization="); ok {
				flag = v
			}
		}
		fmt.Fprintf(tw, "        inference/%s\t%s\t%s\t%s\t%s\n", name, or(tmpl.Annotations["gpu-fraction"]), or(tmpl.Labels["kai.scheduler/queue"]), gpus, or(flag))
	}
	tw.Flush()
	fmt.Fprintln(d.w)
}

func or(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func indent(s string) string {
	return "        " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n        ")
}
