package live_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// kindCase is a workload kind beyond Deployment, from the fixtures
// internal/testenv/kubeenv holds to the upstream schemas.
type kindCase struct {
	kind, file, collection, name string
	// templates are the paths of the pod templates a live change sizes.
	templates [][]string
	container string
}

func kindCases() []kindCase {
	return []kindCase{
		{kind: "StatefulSet", file: "statefulset.yaml", collection: "/apis/apps/v1/namespaces/inference/statefulsets", name: "embed",
			templates: [][]string{{"spec", "template"}}, container: "vllm"},
		{kind: "Rollout", file: "rollout.yaml", collection: "/apis/argoproj.io/v1alpha1/namespaces/inference/rollouts", name: "chat",
			templates: [][]string{{"spec", "template"}}, container: "vllm"},
		{kind: "LeaderWorkerSet", file: "leaderworkerset.yaml", collection: "/apis/leaderworkerset.x-k8s.io/v1/namespaces/inference/leaderworkersets", name: "llama",
			templates: [][]string{{"spec", "leaderWorkerTemplate", "leaderTemplate"}, {"spec", "leaderWorkerTemplate", "workerTemplate"}},
			container: "vllm-leader"},
	}
}

// fixture is a kind's fixture, changed by edit, as JSON.
func fixture(t *testing.T, file string, edit func(map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testenv", "kubeenv", "testdata", "kinds", file))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(b, &m))
	if edit != nil {
		edit(m)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// object reads a workload as the admin, with its managedFields.
func (c testCluster) object(t *testing.T, k kindCase) (map[string]any, []metav1.ManagedFieldsEntry) {
	t.Helper()
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodGet, k.collection+"/"+k.name, nil, "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(body, &obj))
	var meta struct {
		metav1.ObjectMeta `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(body, &meta))
	return obj, meta.ManagedFields
}

// managers are the managers whose fieldsV1 hold path.
func managers(t *testing.T, mfs []metav1.ManagedFieldsEntry, path ...string) []string {
	t.Helper()
	var out []string
	for _, mf := range mfs {
		var node map[string]any
		require.NoError(t, json.Unmarshal(mf.FieldsV1.GetRawBytes(), &node))
		found := true
		for _, k := range path {
			next, ok := node[k].(map[string]any)
			if !ok {
				found = false
				break
			}
			node = next
		}
		if found {
			out = append(out, mf.Manager)
		}
	}
	return out
}

func fieldsOf(path []string, rest ...string) []string {
	var out []string
	for _, p := range append(append([]string{}, path...), rest...) {
		out = append(out, "f:"+p)
	}
	return out
}

func at(obj map[string]any, path ...string) any {
	var v any = obj
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestLiveKinds: an urgent upsize of a StatefulSet, an Argo Rollout and a
// LeaderWorkerSet (the upstream CRDs installed) goes live under the
// tool's field manager in every pod template it sizes, the vLLM args in
// the template that runs vLLM, and once the pull request merged with
// Git's values the fields go back to the GitOps controller that applied
// them.
func TestLiveKinds(t *testing.T) {
	c := startCluster(t, "admin")
	c.s.InstallArgoRolloutCRD(t)
	c.s.InstallLeaderWorkerSetCRD(t)
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	o := live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}
	for _, k := range kindCases() {
		t.Run(k.kind, func(t *testing.T) {
			code, body := c.s.Do(t, kubeenv.Admin, http.MethodPatch, k.collection+"/"+k.name+"?fieldManager=argocd-controller",
				fixture(t, k.file, nil), "application/apply-patch+yaml")
			require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "%s", body)
			pr, err := prs.Open(ctx(t), scm.NewPullRequest{Branch: "gpu-rightsizing/inference/" + k.name, Base: "main", Title: "t", Body: "b"})
			require.NoError(t, err)
			tg := live.Target{Namespace: "inference", Name: k.name, Kind: k.kind, Fraction: live.Values{Old: "0.5", New: "0.75"},
				VLLM:    &live.VLLMValues{Container: k.container, Values: live.Values{Old: "0.45", New: "0.6"}},
				Ceiling: 1, MaxPercent: 200, Reason: "reactive upsize", PullRequest: pr.URL, Number: pr.Number, Branch: pr.Branch}

			res, err := live.NewApplier(c.c, o).Apply(ctx(t), tg)
			require.NoError(t, err)
			require.Equal(t, live.Applied, res.Outcome, res.Detail)
			// The quota check reads every sized kind: this one's queue is
			// found on it, and no Queue of that name exists here.
			require.Equal(t, []string{`KAI queue inference could not be read (queues.scheduling.run.ai "inference" not found): its quota and limit were not checked`}, res.Warnings)
			obj, mfs := c.object(t, k)
			for _, p := range k.templates {
				require.Equal(t, "0.75", at(obj, append(p, "metadata", "annotations", "gpu-fraction")...), "%v", p)
				require.Equal(t, []string{live.FieldManager}, managers(t, mfs, fieldsOf(p, "metadata", "annotations", "gpu-fraction")...), "%v", p)
			}
			args := append(fieldsOf(k.templates[0], "spec", "containers"), `k:{"name":"`+k.container+`"}`, "f:args")
			require.Equal(t, []string{live.FieldManager}, managers(t, mfs, args...))
			require.Contains(t, strings.Join(argsOf(t, obj, k), " "), "--gpu-memory-utilization 0.6")
			var mk live.Marker
			require.NoError(t, json.Unmarshal([]byte(at(obj, "metadata", "annotations", live.MarkerAnnotation).(string)), &mk))
			require.Equal(t, []string{"argocd-controller"}, mk.Owners)

			require.NoError(t, prs.SetState(pr.Number, scm.Merged, ""))
			results, err := live.NewApplier(c.c, o).Reconcile(ctx(t), prs, func(_, name string) (live.GitValues, bool) {
				return live.GitValues{Fraction: "0.75", VLLM: map[string]string{k.container: "0.6"}}, name == k.name
			})
			require.NoError(t, err)
			released := 0
			for _, r := range results {
				if r.Name == k.name {
					require.Equal(t, live.Released, r.Outcome, r.Detail)
					released++
				}
			}
			require.Equal(t, 1, released)
			after, mfs := c.object(t, k)
			require.Nil(t, at(after, "metadata", "annotations", live.MarkerAnnotation), "marker removed")
			require.Equal(t, at(obj, "spec"), at(after, "spec"), "releasing does not change the spec: nothing rolls")
			for _, p := range k.templates {
				require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, fieldsOf(p, "metadata", "annotations", "gpu-fraction")...),
					"%v: handed back to the manager that applied it before", p)
			}
			require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, args...))
			require.Contains(t, managers(t, mfs, append(fieldsOf(k.templates[0], "spec", "containers"), `k:{"name":"`+k.container+`"}`, "f:image")...),
				"argocd-controller", "and it keeps everything else it applied")
			for _, mf := range mfs {
				require.NotEqual(t, live.FieldManager, mf.Manager, "the tool holds nothing")
				require.NotEqual(t, live.HandoffManager, mf.Manager)
			}
		})
	}
}

func argsOf(t *testing.T, obj map[string]any, k kindCase) []string {
	t.Helper()
	cs, _ := at(obj, append(k.templates[0], "spec", "containers")...).([]any)
	for _, c := range cs {
		if m := c.(map[string]any); m["name"] == k.container {
			var out []string
			for _, a := range m["args"].([]any) {
				out = append(out, a.(string))
			}
			return out
		}
	}
	t.Fatalf("no container %s", k.container)
	return nil
}

// TestLiveKindsRefused: a StatefulSet whose controller would not roll its
// pods from the change (updateStrategy OnDelete) is refused by name, read
// from the live object, and nothing is written.
func TestLiveKindsRefused(t *testing.T) {
	c := startCluster(t, "admin")
	k := kindCases()[0]
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodPatch, k.collection+"/"+k.name+"?fieldManager=argocd-controller",
		fixture(t, k.file, func(m map[string]any) {
			m["spec"].(map[string]any)["updateStrategy"] = map[string]any{"type": "OnDelete"}
		}), "application/apply-patch+yaml")
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "%s", body)
	before, _ := c.object(t, k)
	tg := live.Target{Namespace: "inference", Name: k.name, Kind: k.kind, Fraction: live.Values{Old: "0.5", New: "0.75"},
		Ceiling: 1, MaxPercent: 200, PullRequest: "https://forge/pull/1", Number: 1, Branch: "b"}
	res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}).Apply(ctx(t), tg)
	require.NoError(t, err)
	require.Equal(t, live.Refused, res.Outcome, res.Detail)
	require.Equal(t, "StatefulSet inference/embed has updateStrategy OnDelete: its pods keep the old request until each is deleted by hand, so the live fast path refuses it; it waits for its pull request", res.Detail)
	after, _ := c.object(t, k)
	require.Equal(t, at(before, "metadata", "resourceVersion"), at(after, "metadata", "resourceVersion"), "nothing written")
}
