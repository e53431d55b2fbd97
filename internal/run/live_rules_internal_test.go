package run

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestLiveBounds: the live path checks the tightest maxPercent, as the
// engine's step limit does, and an unset ceiling or maxPercent is the
// default, never no bound.
func TestLiveBounds(t *testing.T) {
	up := func(p int) *engine.MetricRules {
		return &engine.MetricRules{Upsize: &engine.UpsizeRules{MaxPercent: p}}
	}
	tests := []struct {
		name    string
		rules   engine.Rules
		ceiling float64
		percent int
	}{
		{"tightest of the metrics", engine.Rules{Strategy: &engine.StrategyRules{Ceiling: 0.8},
			Reactive: &engine.ReactiveRules{Metrics: map[usage.Metric]*engine.MetricRules{"memory": up(300), "compute": up(150), "other": {}}}}, 0.8, 150},
		{"no strategy, no reactive rules: defaults", engine.Rules{}, engine.DefaultCeiling, engine.DefaultMaxPercent},
		{"unset ceiling", engine.Rules{Strategy: &engine.StrategyRules{}}, engine.DefaultCeiling, engine.DefaultMaxPercent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p := liveBounds(tt.rules)
			require.Equal(t, tt.ceiling, c)
			require.Equal(t, tt.percent, p)
		})
	}
}

// TestLiveUpsize: an urgent upsize the rules send live is applied when it
// is of a kind whose pod templates the fast path owns, and refused by name
// when it is another kind's; any other decision is none of the live
// stage's business.
func TestLiveUpsize(t *testing.T) {
	decision := func(kind, ns string, change func(*plan.Decision)) plan.Decision {
		d := plan.Decision{
			Decision: engine.Decision{Action: engine.Upsize, Urgent: true},
			Workload: patcher.Workload{Ref: usage.Ref{Namespace: ns, Kind: kind, Name: "llm"}},
			Rules:    engine.Rules{Strategy: &engine.StrategyRules{LiveUpsize: true}},
		}
		if change != nil {
			change(&d)
		}
		return d
	}
	namespaces := []string{"inference", "serving"}
	tests := []struct {
		name    string
		d       plan.Decision
		apply   bool
		refused string
	}{
		{"an urgent Deployment goes live", decision("Deployment", "serving", nil), true, ""},
		{"an urgent StatefulSet goes live", decision("StatefulSet", "inference", nil), true, ""},
		{"an urgent Rollout goes live", decision("Rollout", "inference", nil), true, ""},
		{"a Rollout that runs a Deployment's template is refused by name", decision("Rollout", "inference", func(d *plan.Decision) {
			d.Workload.Template = usage.Ref{Namespace: "inference", Kind: "Deployment", Name: "llm-template"}
		}), false, "Rollout inference/llm runs the pod template of Deployment llm-template (spec.workloadRef), not its own: the live fast path refuses it; it waits for its pull request"},
		{"an urgent LeaderWorkerSet goes live", decision("LeaderWorkerSet", "inference", nil), true, ""},
		{"an urgent InferenceService goes live", decision("InferenceService", "inference", nil), true, ""},
		{"a CronJob is refused by name", decision("CronJob", "inference", nil), false,
			"the live fast path applies Deployments, StatefulSets, Rollouts, LeaderWorkerSets, InferenceServices and DynamoGraphDeployments' services only; CronJob inference/llm waits for its pull request"},
		// A Dynamo graph's service goes live on its own (a multinode one is
		// refused by package live, read from the graph).
		{"an urgent Dynamo service goes live", decision("DynamoGraphDeployment", "inference", nil), true, ""},
		{"a DaemonSet is refused by name", decision("DaemonSet", "inference", nil), false,
			"the live fast path applies Deployments, StatefulSets, Rollouts, LeaderWorkerSets, InferenceServices and DynamoGraphDeployments' services only; DaemonSet inference/llm waits for its pull request"},
		{"a namespace not live: nothing to refuse", decision("StatefulSet", "staging", nil), false, ""},
		{"not urgent: nothing to refuse", decision("StatefulSet", "inference", func(d *plan.Decision) { d.Urgent = false }), false, ""},
		{"not urgent: a Deployment waits too", decision("Deployment", "inference", func(d *plan.Decision) { d.Urgent = false }), false, ""},
		{"liveUpsize unset: nothing to refuse", decision("StatefulSet", "inference", func(d *plan.Decision) { d.Rules.Strategy.LiveUpsize = false }), false, ""},
		{"no strategy: nothing to refuse", decision("Rollout", "inference", func(d *plan.Decision) { d.Rules.Strategy = nil }), false, ""},
		// Which cluster's context it goes through is the stage's
		// (TestLiveClusters).
		{"a workload of a mapped cluster goes live",
			decision("Deployment", "inference", func(d *plan.Decision) { d.Workload.Ref.Cluster = "prod-us" }), true, ""},
		{"a scale-back never goes live", decision("StatefulSet", "inference", func(d *plan.Decision) { d.Action = engine.ScaleBack }), false, ""},
		{"a Deployment's scale-back neither", decision("Deployment", "inference", func(d *plan.Decision) { d.Action = engine.ScaleBack }), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apply, refused := liveUpsize(tt.d, namespaces)
			require.Equal(t, tt.apply, apply)
			require.Equal(t, tt.refused, refused)
		})
	}
}
