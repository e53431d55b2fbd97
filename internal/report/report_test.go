package report_test

import (
	"reflect"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/report"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func TestRecommendations(t *testing.T) {
	frac := func(f float64) engine.Allocation { return engine.Allocation{Form: engine.Fraction, GPUs: f} }
	ref := usage.Ref{Namespace: "ml", Kind: "Deployment", Name: "w"}
	for _, tc := range []struct {
		name string
		d    engine.Decision
		want map[usage.Ref]engine.Allocation
	}{
		{"an upsize is the share after the merge", engine.Decision{Action: engine.Upsize, Current: frac(0.5), Recommended: frac(0.72)}, map[usage.Ref]engine.Allocation{ref: frac(0.72)}},
		{"a scale-back too", engine.Decision{Action: engine.ScaleBack, Current: frac(0.5), Recommended: frac(0.3)}, map[usage.Ref]engine.Allocation{ref: frac(0.3)}},
		{"no change keeps the current share", engine.Decision{Action: engine.NoChange, Current: frac(0.5), Recommended: frac(0.5)}, map[usage.Ref]engine.Allocation{}},
		{"a skipped workload too", engine.Decision{Action: engine.Skipped, Current: frac(0.5)}, map[usage.Ref]engine.Allocation{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &plan.Plan{Decisions: []plan.Decision{{Decision: tc.d, Workload: patcher.Workload{Ref: ref}}}}
			if got := report.Recommendations(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	sixty := 60
	pol := func(name, pool string, threshold *int) *policy.ConsolidationPolicy {
		cp := &policy.ConsolidationPolicy{Meta: policy.Meta{Kind: policy.KindConsolidation, Name: name}}
		cp.Spec.NodeSelector.MatchLabels = map[string]string{"pool": pool}
		cp.Spec.UtilizationThresholdPercent = threshold
		return cp
	}
	in := consolidate.Placement{Nodes: []consolidate.Node{
		{Name: "a-1", Labels: map[string]string{"pool": "a"}, GPUs: 2},
		{Name: "b-1", Labels: map[string]string{"pool": "b"}, GPUs: 1},
	}}
	got := report.Evaluate([]*policy.ConsolidationPolicy{pol("pool-b", "b", &sixty), pol("pool-a", "a", nil)}, in, nil)
	type row struct {
		Policy           string
		ThresholdPercent int
		Nodes, GPUs      int
	}
	want := []row{{"pool-a", policy.DefaultConsolidationUtil, 1, 2}, {"pool-b", 60, 1, 1}}
	var rows []row
	for _, r := range got {
		rows = append(rows, row{r.Policy, r.ThresholdPercent, r.Nodes, r.GPUs})
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("got %+v, want %+v: sorted by name, the default threshold where none is set", rows, want)
	}
}

func TestFindings(t *testing.T) {
	chat := usage.Ref{Namespace: "ml", Kind: "Deployment", Name: "chat"}
	embed := usage.Ref{Namespace: "ml", Kind: "Deployment", Name: "embed"}
	stalls := consolidate.Room{Workload: chat, To: consolidate.Fraction(0.4, 1), Pods: 2, Why: "no GPU of the pool has 0.40 free while the old pods still hold theirs",
		Suggestion: "maxSurge: 0, maxUnavailable: 1"}
	fits := consolidate.Room{Workload: embed, Fits: true}
	tests := []struct {
		name string
		res  report.Result
		want map[string][]string
	}{
		{name: "no reports, no findings", want: map[string][]string{}},
		{
			name: "a rollout that stalls is said for its workload; one that fits is not",
			res:  report.Result{Reports: []consolidate.Report{{Rollouts: []consolidate.Room{stalls, fits}}}},
			want: map[string][]string{"ml/Deployment/chat": {stalls.Sentence()}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.Findings(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
