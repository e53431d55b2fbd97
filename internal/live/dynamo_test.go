package live_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// dgd is the DynamoGraphDeployment fixture: graph llama, whose services
// are workloads of their own named llama-<service, lowercased>.
var dgd = kindCase{kind: "DynamoGraphDeployment", file: "dynamographdeployment.yaml",
	collection: "/apis/nvidia.com/v1alpha1/namespaces/inference/dynamographdeployments", name: "llama"}

// withPrefill adds a second GPU service to the fixture, a prefill worker
// on half a GPU whose vLLM flag is 0.45 too.
func withPrefill(m map[string]any) {
	svcs := m["spec"].(map[string]any)["services"].(map[string]any)
	svcs["VllmPrefillWorker"] = map[string]any{
		"componentType": "worker", "replicas": 1,
		"extraPodMetadata": map[string]any{"annotations": map[string]any{"gpu-fraction": "0.5"}},
		"extraPodSpec": map[string]any{"schedulerName": "kai-scheduler", "mainContainer": map[string]any{
			"image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.5.1", "command": []any{"python3", "-m", "dynamo.vllm"},
			"args": []any{"--model", "meta-llama/Llama-3.1-8B-Instruct", "--is-prefill-worker", "--gpu-memory-utilization", "0.45"}}},
	}
}

// createGraph creates the graph as a GitOps controller would: server-side
// apply by argocd-controller, under strict field validation.
func createGraph(t *testing.T, c testCluster, edit func(map[string]any)) {
	t.Helper()
	c.s.InstallDynamoGraphDeploymentCRD(t)
	code, body := c.s.Do(t, kubeenv.Admin, http.MethodPatch, dgd.collection+"/"+dgd.name+"?fieldManager=argocd-controller&fieldValidation=Strict",
		fixture(t, dgd.file, edit), "application/apply-patch+yaml")
	require.Contains(t, []int{http.StatusOK, http.StatusCreated}, code, "%s", body)
}

// Fields of a service of the graph.
func svcFraction(svc string) []string {
	return []string{"f:spec", "f:services", "f:" + svc, "f:extraPodMetadata", "f:annotations", "f:gpu-fraction"}
}

func svcArgs(svc string) []string {
	return []string{"f:spec", "f:services", "f:" + svc, "f:extraPodSpec", "f:mainContainer", "f:args"}
}

// graphMarker reads the graph's marker: its entries by service.
func graphMarker(t *testing.T, obj map[string]any) map[string]live.Marker {
	t.Helper()
	v, ok := at(obj, "metadata", "annotations", live.MarkerAnnotation).(string)
	if !ok {
		return nil
	}
	var g struct {
		Services map[string]live.Marker `json:"services"`
	}
	require.NoError(t, json.Unmarshal([]byte(v), &g))
	return g.Services
}

// TestLiveDynamoGraphDeployment: two services of one graph go live one
// after the other, each in its own extraPodMetadata gpu-fraction (and the
// decode worker's vLLM args) under the tool's field manager, neither
// undoing the other; once the decode worker's pull request merged, its
// fields alone go back to the GitOps controller while the prefill worker
// stays live; then the prefill worker's pull request is closed and the
// reconcile puts Git's value back, and the tool holds nothing.
func TestLiveDynamoGraphDeployment(t *testing.T) {
	c := startCluster(t, "admin")
	createGraph(t, c, withPrefill)
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	open := func(workload string) scm.PullRequest {
		pr, err := prs.Open(ctx(t), scm.NewPullRequest{Branch: "gpu-rightsizing/inference/" + workload, Base: "main", Title: "t", Body: "b"})
		require.NoError(t, err)
		return pr
	}
	decodePR, prefillPR := open("llama-vllmdecodeworker"), open("llama-vllmprefillworker")
	o := live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, RevertClosed: true, Now: now}
	decode := live.Target{Namespace: "inference", Name: "llama-vllmdecodeworker", Kind: dgd.kind, Fraction: live.Values{Old: "0.5", New: "0.75"},
		VLLM:    &live.VLLMValues{Container: "main", Values: live.Values{Old: "0.45", New: "0.6"}},
		Ceiling: 1, MaxPercent: 200, Reason: "reactive upsize", PullRequest: decodePR.URL, Number: decodePR.Number, Branch: decodePR.Branch}
	prefill := live.Target{Namespace: "inference", Name: "llama-vllmprefillworker", Kind: dgd.kind, Fraction: live.Values{Old: "0.5", New: "0.6"},
		Ceiling: 1, MaxPercent: 200, Reason: "reactive upsize", PullRequest: prefillPR.URL, Number: prefillPR.Number, Branch: prefillPR.Branch}
	svc := func(obj map[string]any, name string, path ...string) any {
		return at(obj, append([]string{"spec", "services", name}, path...)...)
	}

	res, err := live.NewApplier(c.c, o).Apply(ctx(t), decode)
	require.NoError(t, err)
	require.Equal(t, live.Applied, res.Outcome, res.Detail)
	require.Equal(t, "llama-vllmdecodeworker", res.Name)
	require.Equal(t, []string{"gpu-fraction 0.5 → 0.75", "container main --gpu-memory-utilization 0.45 → 0.6"}, res.Fields)
	obj, mfs := c.object(t, dgd)
	require.Equal(t, "0.75", svc(obj, "VllmDecodeWorker", "extraPodMetadata", "annotations", "gpu-fraction"))
	require.Equal(t, []any{"--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", "0.6"}, svc(obj, "VllmDecodeWorker", "extraPodSpec", "mainContainer", "args"))
	require.Equal(t, []string{live.FieldManager}, managers(t, mfs, svcFraction("VllmDecodeWorker")...))
	require.Equal(t, []string{live.FieldManager}, managers(t, mfs, svcArgs("VllmDecodeWorker")...))
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, svcFraction("VllmPrefillWorker")...), "the other service is not touched")
	require.Equal(t, "0.5", svc(obj, "VllmPrefillWorker", "extraPodMetadata", "annotations", "gpu-fraction"))
	marks := graphMarker(t, obj)
	require.Len(t, marks, 1)
	require.Equal(t, live.Values{Old: "0.5", New: "0.75"}, marks["VllmDecodeWorker"].Fraction)
	require.Equal(t, []string{"argocd-controller"}, marks["VllmDecodeWorker"].Owners)
	require.Equal(t, decodePR.Branch, marks["VllmDecodeWorker"].Branch)

	// The second service of the same graph, on its own: the first keeps
	// its live values and the tool keeps owning them.
	res, err = live.NewApplier(c.c, o).Apply(ctx(t), prefill)
	require.NoError(t, err)
	require.Equal(t, live.Applied, res.Outcome, res.Detail)
	both, mfs := c.object(t, dgd)
	require.Equal(t, "0.6", svc(both, "VllmPrefillWorker", "extraPodMetadata", "annotations", "gpu-fraction"))
	require.Equal(t, "0.75", svc(both, "VllmDecodeWorker", "extraPodMetadata", "annotations", "gpu-fraction"))
	require.Equal(t, svc(obj, "VllmDecodeWorker"), svc(both, "VllmDecodeWorker"), "the first service's live change stands as it was")
	for _, p := range [][]string{svcFraction("VllmDecodeWorker"), svcArgs("VllmDecodeWorker"), svcFraction("VllmPrefillWorker")} {
		require.Equal(t, []string{live.FieldManager}, managers(t, mfs, p...), "%v", p)
	}
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, svcArgs("VllmPrefillWorker")...), "no vLLM change, so its args stay the controller's")
	marks = graphMarker(t, both)
	require.Len(t, marks, 2)
	require.Equal(t, live.Values{Old: "0.5", New: "0.6"}, marks["VllmPrefillWorker"].Fraction)
	require.Equal(t, live.Values{Old: "0.5", New: "0.75"}, marks["VllmDecodeWorker"].Fraction)

	// The decode worker's pull request merged with the live values; the
	// prefill worker's is still open.
	require.NoError(t, prs.SetState(decodePR.Number, scm.Merged, ""))
	git := map[string]live.GitValues{
		"llama-vllmdecodeworker":  {Fraction: "0.75", VLLM: map[string]string{"main": "0.6"}},
		"llama-vllmprefillworker": {Fraction: "0.5", VLLM: map[string]string{"main": "0.45"}},
	}
	gitOf := func(_, name string) (live.GitValues, bool) { g, ok := git[name]; return g, ok }
	results, err := live.NewApplier(c.c, o).Reconcile(ctx(t), prs, gitOf)
	require.NoError(t, err)
	require.Equal(t, map[string]live.Outcome{"llama-vllmdecodeworker": live.Released, "llama-vllmprefillworker": live.Pending}, outcomes(results))
	after, mfs := c.object(t, dgd)
	require.Equal(t, at(both, "spec"), at(after, "spec"), "releasing changes no value: nothing rolls")
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, svcFraction("VllmDecodeWorker")...), "handed back to the controller")
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, svcArgs("VllmDecodeWorker")...))
	require.Equal(t, []string{live.FieldManager}, managers(t, mfs, svcFraction("VllmPrefillWorker")...), "the other service stays live")
	marks = graphMarker(t, after)
	require.Equal(t, []string{"VllmPrefillWorker"}, keys(marks))

	// The prefill worker's pull request is closed unmerged: the reconcile
	// applies Git's value, then lets go; the decode worker is done.
	require.NoError(t, prs.SetState(prefillPR.Number, scm.Closed, ""))
	results, err = live.NewApplier(c.c, o).Reconcile(ctx(t), prs, gitOf)
	require.NoError(t, err)
	require.Equal(t, map[string]live.Outcome{"llama-vllmprefillworker": live.Reverted}, outcomes(results))
	final, mfs := c.object(t, dgd)
	require.Equal(t, "0.5", svc(final, "VllmPrefillWorker", "extraPodMetadata", "annotations", "gpu-fraction"), "Git's value")
	require.Equal(t, "0.75", svc(final, "VllmDecodeWorker", "extraPodMetadata", "annotations", "gpu-fraction"), "the merged value stays")
	require.Nil(t, at(final, "metadata", "annotations", live.MarkerAnnotation), "the marker goes with its last entry")
	require.Equal(t, []string{"argocd-controller"}, managers(t, mfs, svcFraction("VllmPrefillWorker")...))
	for _, mf := range mfs {
		require.NotEqual(t, live.FieldManager, mf.Manager, "the tool holds nothing")
		require.NotEqual(t, live.HandoffManager, mf.Manager)
	}
}

// TestLiveDynamoHandoff: on a graph no manager applied (created by a
// plain create), the services' fields go to the handoff manager on
// release, one service's without taking the other's from it.
func TestLiveDynamoHandoff(t *testing.T) {
	c := startCluster(t, "admin")
	c.s.InstallDynamoGraphDeploymentCRD(t)
	c.s.Apply(t, fixture(t, dgd.file, withPrefill))
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	// An update owns the fields too, so the first live apply forces.
	o := live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}
	var prNumbers []int
	for _, w := range []string{"llama-vllmdecodeworker", "llama-vllmprefillworker"} {
		pr, err := prs.Open(ctx(t), scm.NewPullRequest{Branch: "gpu-rightsizing/inference/" + w, Base: "main", Title: "t", Body: "b"})
		require.NoError(t, err)
		prNumbers = append(prNumbers, pr.Number)
		res, err := live.NewApplier(c.c, o).Apply(ctx(t), live.Target{Namespace: "inference", Name: w, Kind: dgd.kind,
			Fraction: live.Values{Old: "0.5", New: "0.75"}, Ceiling: 1, MaxPercent: 200, PullRequest: pr.URL, Number: pr.Number, Branch: pr.Branch})
		require.NoError(t, err)
		require.Equal(t, live.Applied, res.Outcome, res.Detail)
	}
	git := func(_, _ string) (live.GitValues, bool) { return live.GitValues{Fraction: "0.75"}, true }
	services := []string{"VllmDecodeWorker", "VllmPrefillWorker"}
	for i, svc := range services {
		require.NoError(t, prs.SetState(prNumbers[i], scm.Merged, ""))
		results, err := live.NewApplier(c.c, o).Reconcile(ctx(t), prs, git)
		require.NoError(t, err)
		want := map[string]live.Outcome{"llama-vllmdecodeworker": live.Released, "llama-vllmprefillworker": live.Pending}
		if i == 1 {
			want = map[string]live.Outcome{"llama-vllmprefillworker": live.Released}
		}
		require.Equal(t, want, outcomes(results))
		obj, mfs := c.object(t, dgd)
		for _, done := range services[:i+1] {
			require.Equal(t, []string{live.HandoffManager}, managers(t, mfs, svcFraction(done)...), "%s after releasing %s", done, svc)
			require.Equal(t, "0.75", at(obj, "spec", "services", done, "extraPodMetadata", "annotations", "gpu-fraction"), "%s after releasing %s", done, svc)
		}
	}
}

// TestLiveDynamoRefused: a multinode service (which the editor leaves
// alone), a workload no service of the graphs is, and one that two
// services are, are refused by name, and nothing is written.
func TestLiveDynamoRefused(t *testing.T) {
	c := startCluster(t, "admin")
	createGraph(t, c, func(m map[string]any) {
		svcs := m["spec"].(map[string]any)["services"].(map[string]any)
		svcs["VllmDecodeWorker"].(map[string]any)["multinode"] = map[string]any{"nodeCount": 2}
		svcs["Vllm-Prefill"] = map[string]any{"componentType": "worker",
			"extraPodMetadata": map[string]any{"annotations": map[string]any{"gpu-fraction": "0.5"}}}
	})
	// Graph llama-vllm's service Prefill is a workload of the same name
	// as graph llama's service Vllm-Prefill.
	c.s.Apply(t, fixture(t, dgd.file, func(m map[string]any) {
		m["metadata"].(map[string]any)["name"] = "llama-vllm"
		m["spec"].(map[string]any)["services"] = map[string]any{"Prefill": map[string]any{"componentType": "worker",
			"extraPodMetadata": map[string]any{"annotations": map[string]any{"gpu-fraction": "0.5"}}}}
	}))
	before, _ := c.object(t, dgd)
	tests := []struct {
		name, workload, detail string
	}{
		{"a multinode service", "llama-vllmdecodeworker",
			"DynamoGraphDeployment inference/llama: service VllmDecodeWorker runs on several nodes as a group (multinode), which the editor leaves alone, so the live fast path refuses it; it waits for its pull request"},
		{"no such service", "llama-vllmworker",
			"no DynamoGraphDeployment in namespace inference has a service whose workload is llama-vllmworker (<graph>-<service, lowercased>), so the live fast path refuses it; it waits for its pull request"},
		{"two services of that name", "llama-vllm-prefill",
			"service Vllm-Prefill of llama and service Prefill of llama-vllm in namespace inference are the same workload llama-vllm-prefill, which names no one service, so the live fast path refuses it; it waits for its pull request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}).Apply(ctx(t),
				live.Target{Namespace: "inference", Name: tt.workload, Kind: dgd.kind, Fraction: live.Values{Old: "0.5", New: "0.75"},
					Ceiling: 1, MaxPercent: 200, PullRequest: "https://forge/pull/1", Number: 1, Branch: "b"})
			require.NoError(t, err)
			require.Equal(t, live.Refused, res.Outcome, res.Detail)
			require.Equal(t, tt.detail, res.Detail)
			after, _ := c.object(t, dgd)
			require.Equal(t, at(before, "metadata", "resourceVersion"), at(after, "metadata", "resourceVersion"), "nothing written")
		})
	}
}

// outcomes are the results' outcomes by workload.
func outcomes(results []live.Result) map[string]live.Outcome {
	out := map[string]live.Outcome{}
	for _, r := range results {
		out[r.Name] = r.Outcome
	}
	return out
}

func keys(m map[string]live.Marker) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
