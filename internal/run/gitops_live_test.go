package run_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// liveFiles is the quickstart with a strategy that lets urgent upsizes go
// live (a project policy: gitops is not in Kubex's kinds).
func liveFiles(t *testing.T) map[string]string {
	t.Helper()
	files := repoFiles(t, "")
	const policy = "policies/kai-gpu-sharing.yaml"
	s := strings.ReplaceAll(files[policy], "rightsizing.kubex.ai/v1alpha1", "gpu-rightsizing.github.io/v1alpha1")
	s = strings.Replace(s, "  podEviction:\n    enabled: true\n---", "  podEviction:\n    enabled: true\n  gitops:\n    liveUpsize: true\n---", 1)
	require.Contains(t, s, "liveUpsize: true")
	files[policy] = s
	return files
}

// exampleIgnore is spec.ignore of the Flux example users copy
// (examples/flux/kustomization-flux.yaml), as a YAML line of a spec.
func exampleIgnore(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/flux/kustomization-flux.yaml")
	require.NoError(t, err)
	var ks struct {
		Spec struct {
			Ignore []map[string]any `yaml:"ignore"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(b, &ks))
	require.NotEmpty(t, ks.Spec.Ignore, "the example sets spec.ignore")
	j, err := json.Marshal(ks.Spec.Ignore)
	require.NoError(t, err)
	return "  ignore: " + string(j) + "\n" // JSON is YAML
}

// owners lists the field managers (manager/Operation) of the field at path
// of d, as metadata.managedFields records them.
func owners(t *testing.T, d *appsv1.Deployment, path ...string) []string {
	t.Helper()
	var out []string
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var node map[string]any
		require.NoError(t, json.Unmarshal(mf.FieldsV1.GetRawBytes(), &node))
		found := true
		for _, p := range path {
			next, ok := node[p].(map[string]any)
			if !ok {
				found = false
				break
			}
			node = next
		}
		if found {
			out = append(out, mf.Manager+"/"+string(mf.Operation))
		}
	}
	slices.Sort(out)
	return out
}

var fractionPath = []string{"f:spec", "f:template", "f:metadata", "f:annotations", "f:gpu-fraction"}

// pullFor is the number of the pull request whose head is branch.
func (g *gitops) pullFor(t *testing.T, branch string) int {
	t.Helper()
	for _, p := range g.forge.Pulls() {
		if p.Head == branch && p.State == "open" {
			return p.Number
		}
	}
	t.Fatalf("no open pull request for %s", branch)
	return 0
}

// TestLiveOnFlux is the fast path against real Flux. With the set-up
// docs/live.md recommends (the example's spec.ignore): an urgent upsize
// applied live survives Flux's reconciliations; its pull request merges;
// the next run releases the fields; a later change to the same field
// merged through Git reaches the Deployment; and a field Git later drops
// is pruned. Without the set-up, Flux's next reconciliation reverts the
// live change, and the next run reports it.
func TestLiveOnFlux(t *testing.T) {
	liveOn := func(g *gitops) func(*run.Options) {
		return func(o *run.Options) {
			o.Live = run.Live{Enabled: true, Namespaces: []string{"inference"}, Force: true, MaxChanges: 3, Kubeconfig: g.kube.Kubeconfig(t, kubeenv.Admin)}
		}
	}
	// Later runs evaluate the recording before its last minutes' spike:
	// the urgency is over, so they only reconcile earlier live changes.
	later := func(g *gitops) func(*run.Options) {
		return func(o *run.Options) {
			liveOn(g)(o)
			o.Usage.At = time.Date(2026, 11, 30, 11, 50, 0, 0, time.UTC)
		}
	}
	fraction := func(g *gitops, name string) string {
		return deployment(t, g.kube, name).Spec.Template.Annotations["gpu-fraction"]
	}

	t.Run("with the documented set-up", func(t *testing.T) {
		g := newGitOps(t, liveFiles(t))
		g.kube.InstallKAIQueueCRD(t)
		queues, err := os.ReadFile("../../examples/kai-queues/queues.yaml")
		require.NoError(t, err)
		g.kube.Apply(t, queues)
		ks := g.kustomization(t, "apps", "./apps", exampleIgnore(t))
		require.Equal(t, []string{"kustomize-controller/Apply"}, owners(t, deployment(t, g.kube, "chat"), fractionPath...))

		out, _ := g.recommend(t, liveOn(g))
		require.Contains(t, out, "inference/chat       applied")
		chat := deployment(t, g.kube, "chat")
		require.Equal(t, "0.72", chat.Spec.Template.Annotations["gpu-fraction"])
		require.Equal(t, "0.64", flagValue(vllmArgs(chat)))
		require.Contains(t, chat.Annotations, live.MarkerAnnotation)

		for i := range 3 {
			g.sync(t, ks)
			chat := deployment(t, g.kube, "chat")
			require.Equal(t, "0.72", chat.Spec.Template.Annotations["gpu-fraction"], "reconciliation %d kept the live upsize", i+1)
			require.Equal(t, "0.64", flagValue(vllmArgs(chat)), "reconciliation %d kept the live flag", i+1)
		}

		require.NoError(t, g.forge.Merge(g.pullFor(t, "gpu-rightsizing/inference/chat")))
		g.sync(t, ks)
		require.Equal(t, "0.72", fraction(g, "chat"))
		out, _ = g.recommend(t, later(g))
		require.Contains(t, out, "inference/chat       released")
		chat = deployment(t, g.kube, "chat")
		require.NotContains(t, chat.Annotations, live.MarkerAnnotation, "the marker is gone: the ignore rule no longer matches")
		require.Equal(t, "0.72", chat.Spec.Template.Annotations["gpu-fraction"], "releasing deletes nothing")
		require.Equal(t, []string{"kustomize-controller/Apply"}, owners(t, chat, fractionPath...),
			"the release handed the field back to the manager that applied it before the live change")
		g.sync(t, ks)
		require.Equal(t, "0.72", fraction(g, "chat"))

		// A later change to the same field, merged through Git: Flux
		// applies it, and owns the field again.
		chatFile := g.git.Git(t, gitopsRepo, "show", "main:apps/chat/deployment.yaml")
		require.Contains(t, chatFile, `gpu-fraction: "0.72"`)
		g.git.Commit(t, gitopsRepo, "main", map[string]string{"apps/chat/deployment.yaml": strings.Replace(chatFile, `gpu-fraction: "0.72"`, `gpu-fraction: "0.6"`, 1)}, "scale chat back")
		g.sync(t, ks)
		chat = deployment(t, g.kube, "chat")
		require.Equal(t, "0.6", chat.Spec.Template.Annotations["gpu-fraction"], "Git's later scale-back reached the cluster")
		require.Equal(t, []string{"kustomize-controller/Apply"}, owners(t, chat, fractionPath...), "Flux alone owns the field again")

		// translate: a later run lowered its open pull request (the
		// spike has passed) before a person merged it, so Git holds less
		// than the live value. The run releases the fields all the same,
		// and Flux applies Git's value: merged is merged.
		require.NoError(t, g.forge.Merge(g.pullFor(t, "gpu-rightsizing/inference/translate")))
		g.sync(t, ks)
		require.Equal(t, "0.32", fraction(g, "translate"), "while the marker stands, Flux leaves the field alone")
		out, _ = g.recommend(t, later(g))
		require.Contains(t, out, "inference/translate  released")
		require.Contains(t, out, "fields released to kustomize-controller")
		g.sync(t, ks)
		require.Equal(t, "0.27", fraction(g, "translate"), "Flux applied the merged value")

		// Then a person moves translate off fractions in Git, dropping
		// gpu-fraction: Flux prunes the annotation (KAI refuses a pod that
		// asks for a fraction and whole GPUs at once), since the release
		// gave the field back to kustomize-controller.
		trFile := g.git.Git(t, gitopsRepo, "show", "main:apps/translate/deployment.yaml")
		lines := strings.Split(trFile, "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "gpu-fraction:") })
		require.GreaterOrEqual(t, i, 0)
		g.git.Commit(t, gitopsRepo, "main", map[string]string{"apps/translate/deployment.yaml": strings.Join(slices.Delete(lines, i, i+1), "\n")}, "translate: no fraction")
		g.sync(t, ks)
		tr := deployment(t, g.kube, "translate")
		require.NotContains(t, tr.Spec.Template.Annotations, "gpu-fraction", "Flux pruned the field Git dropped; its managers were %v", owners(t, tr, fractionPath...))
	})

	t.Run("without it", func(t *testing.T) {
		g := newGitOps(t, liveFiles(t))
		ks := g.kustomization(t, "apps", "./apps", "")
		out, _ := g.recommend(t, liveOn(g))
		require.Contains(t, out, "inference/chat       applied")
		require.Equal(t, "0.72", fraction(g, "chat"))
		g.sync(t, ks)
		require.Equal(t, "0.5", fraction(g, "chat"), "Flux's drift correction reverted the live change")
		out, _ = g.recommend(t, liveOn(g))
		require.Contains(t, out, "inference/chat       left")
	})
}
