package run

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

type noPullRequests struct{}

func (noPullRequests) Find(context.Context, string) ([]scm.PullRequest, error) { return nil, nil }

// TestLiveStageKinds runs the live stage's dry run on a real API server: a
// kind the fast path does not own is refused by name by the stage, a
// StatefulSet whose pods would not roll (OnDelete) and a Dynamo graph's
// multinode service are refused by name from their live objects, each in
// the row where the Deployment's would-apply is, a Dynamo graph's other
// service would go live by its workload's name, and the Deployment's row
// reads as before.
func TestLiveStageKinds(t *testing.T) {
	kube := kubeenv.StartAPIServer(t)
	kube.InstallKAIQueueCRD(t)
	kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: serving}\n---\n"+kubeenv.Deployment("llm")+
		"---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: serving}\nspec:\n  resources:\n"+
		"    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n"+
		"---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: embed, namespace: serving}\nspec:\n  serviceName: embed\n  updateStrategy: {type: OnDelete}\n"+
		"  selector: {matchLabels: {app: embed}}\n  template:\n    metadata:\n      labels: {app: embed}\n      annotations: {gpu-fraction: \"0.5\"}\n"+
		"    spec:\n      containers: [{name: vllm, image: vllm/vllm-openai:v0.8.5}]\n"))
	kube.InstallDynamoGraphDeploymentCRD(t)
	kube.Apply(t, []byte("apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: llama, namespace: serving}\nspec:\n  services:\n"+
		"    VllmDecodeWorker:\n      extraPodMetadata: {annotations: {gpu-fraction: \"0.5\"}}\n"+
		"    Wide:\n      multinode: {nodeCount: 2}\n      extraPodMetadata: {annotations: {gpu-fraction: \"0.5\"}}\n"))

	upsize := func(kind, name string, urgent bool) plan.Decision {
		return plan.Decision{
			Decision: engine.Decision{Action: engine.Upsize, Urgent: urgent, Rule: "reactive upsize (memory)",
				Current:     engine.Allocation{Form: engine.Fraction, GPUs: 0.5},
				Recommended: engine.Allocation{Form: engine.Fraction, GPUs: 0.6}},
			Workload: patcher.Workload{Ref: usage.Ref{Namespace: "serving", Kind: kind, Name: name}, File: name + ".yaml",
				Queue: "serving", GPU: patcher.GPU{Fraction: 0.5, FractionText: "0.5"}},
			Rules: engine.Rules{Strategy: &engine.StrategyRules{LiveUpsize: true, VLLMBufferPercent: -1}},
		}
	}
	p := &plan.Plan{Decisions: []plan.Decision{
		upsize("StatefulSet", "embed", true),
		upsize("Deployment", "llm", true),
		upsize("CronJob", "batch", true),
		upsize("DynamoGraphDeployment", "llama-vllmdecodeworker", true),
		upsize("DynamoGraphDeployment", "llama-wide", true),
		upsize("StatefulSet", "calm", false),
	}}
	stage, err := prepareLive(t.Context(), p, Live{Enabled: true, Namespaces: []string{"serving"}, MaxChanges: 3,
		Kubeconfig: kube.Kubeconfig(t, kubeenv.Admin)}, nil, true, func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) })
	require.NoError(t, err)
	rep := &publish.Report{DryRun: true}
	for _, d := range p.Decisions {
		rep.Results = append(rep.Results, publish.Result{Key: d.Workload.Ref.String(), Outcome: publish.Opened, Branch: "gpu-rightsizing/serving/" + d.Workload.Ref.Name})
	}
	var out bytes.Buffer
	failed, err := stage.Finish(t.Context(), noPullRequests{}, rep, plan.ByWorkload, &out)
	require.NoError(t, err)
	require.False(t, failed, "a refusal is not a failure")
	require.Equal(t, `
LIVE WORKLOAD                   OUTCOME      CHANGE                   DETAIL
serving/embed                   refused      -                        StatefulSet serving/embed has updateStrategy OnDelete: its pods keep the old request until each is deleted by hand, so the live fast path refuses it; it waits for its pull request
serving/llm                     would apply  gpu-fraction 0.5 → 0.60  would apply by server-side apply as gpu-rightsizing-recommender
serving/batch                   refused      -                        the live fast path applies Deployments, StatefulSets, Rollouts, LeaderWorkerSets, InferenceServices and DynamoGraphDeployments' services only; CronJob serving/batch waits for its pull request
serving/llama-vllmdecodeworker  would apply  gpu-fraction 0.5 → 0.60  would apply by server-side apply as gpu-rightsizing-recommender
serving/llama-wide              refused      -                        DynamoGraphDeployment serving/llama: service Wide runs on several nodes as a group (multinode), which the editor leaves alone, so the live fast path refuses it; it waits for its pull request
`, out.String())
	require.Equal(t, []any{string(live.Refused), 3, string(live.WouldApply), 2}, stage.Summary())
}
