package fastpath_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/fastpath"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

type noPullRequests struct{}

func (noPullRequests) Find(context.Context, string) ([]scm.PullRequest, error) { return nil, nil }

// TestStageRefusesOtherKinds runs the live stage's dry run on a real API
// server: the urgent upsizes of a StatefulSet, a Rollout and a
// LeaderWorkerSet are each reported refused, by name, in the rows where
// the Deployment's would-apply is, and the Deployment's row reads as
// before.
func TestStageRefusesOtherKinds(t *testing.T) {
	kube := testenv.StartKubeAPIServer(t)
	kube.InstallKAIQueueCRD(t)
	kube.Apply(t, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: serving}\n---\n"+testenv.Deployment("llm")+
		"---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: serving}\nspec:\n  resources:\n"+
		"    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n"))

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
		upsize("Rollout", "chat", true),
		upsize("LeaderWorkerSet", "llama", true),
		upsize("StatefulSet", "calm", false),
	}}
	stage, err := fastpath.Prepare(t.Context(), p, fastpath.Options{Namespaces: []string{"serving"}, MaxChanges: 3, DryRun: true,
		Kubeconfig: kube.Kubeconfig(t, testenv.KubeAdmin), Now: func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }})
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
LIVE DEPLOYMENT  OUTCOME      CHANGE                   DETAIL
serving/embed    refused      -                        the live fast path applies Deployments only; StatefulSet serving/embed waits for its pull request
serving/llm      would apply  gpu-fraction 0.5 → 0.60  would apply by server-side apply as gpu-rightsizing-recommender
serving/chat     refused      -                        the live fast path applies Deployments only; Rollout serving/chat waits for its pull request
serving/llama    refused      -                        the live fast path applies Deployments only; LeaderWorkerSet serving/llama waits for its pull request
`, out.String())
	require.Equal(t, []any{string(live.Refused), 3, string(live.WouldApply), 1}, stage.Summary())
}
