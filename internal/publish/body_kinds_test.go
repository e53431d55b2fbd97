package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
)

// chatOf is the decision on the quickstart's chat, an urgent upsize.
func chatOf(t *testing.T) plan.Decision {
	t.Helper()
	p, err := plan.Make(context.Background(), plan.Options{Repo: quickstart, At: at, Source: recorded(t)})
	require.NoError(t, err)
	for _, d := range p.Decisions {
		if d.Workload.Ref.String() == chat {
			return d
		}
	}
	t.Fatalf("the quickstart's plan has no decision on %s", chat)
	return plan.Decision{}
}

// TestKindBodyGolden pins the body of chat's pull request as it reads for
// a workload of each kind beyond Deployment: the same decision, and a
// sentence on what merging does that follows the kind. The decision is
// the quickstart's chat with its kind changed, since what differs is
// only the kind; regenerate with -run TestKindBodyGolden -update and read
// the diff.
func TestKindBodyGolden(t *testing.T) {
	chatDecision := chatOf(t)

	tests := []struct {
		kind, file, golden string
		merging            string
		// template: the Rollout runs the Deployment chat's pod template
		// (spec.workloadRef), and the file changed is that Deployment's.
		template bool
	}{
		{"StatefulSet", "apps/chat/statefulset.yaml", "chat-statefulset-pull-request.md",
			"Merging rolls the StatefulSet one pod at a time, the highest ordinal first, each new pod starting with the new request once the one replaced before it is ready (under `updateStrategy: OnDelete`, only as its pods are deleted).", false},
		{"Rollout", "apps/chat/rollout.yaml", "chat-rollout-pull-request.md",
			"Merging changes the Rollout's pod template: Argo Rollouts rolls it out by the Rollout's own strategy (canary steps or blue-green), and new pods start with the new request.", false},
		{"Rollout", "apps/chat/deployment.yaml", "chat-rollout-workloadref-pull-request.md",
			"Merging changes the pod template of Deployment `chat`, which Rollout `chat` runs (`spec.workloadRef`): Argo Rollouts rolls it out by the Rollout's own strategy (canary steps or blue-green), and new pods start with the new request. " +
				"If the Deployment still runs pods of its own (Argo scales it down only as `workloadRef.scaleDown` says, by default never), it rolls them too.", true},
		{"LeaderWorkerSet", "apps/chat/leaderworkerset.yaml", "chat-leaderworkerset-pull-request.md",
			"Merging rolls the LeaderWorkerSet by whole groups: each group's leader and workers are recreated together with the new request, as many groups at a time as its `rolloutStrategy` allows (one by default).", false},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			d := chatDecision
			if tt.template {
				d.Workload.Template = d.Workload.Ref
			}
			d.Workload.Ref.Kind, d.Workload.File = tt.kind, tt.file
			cs := plan.ChangeSet{Key: d.Workload.Ref.String(), Grouping: plan.ByWorkload, Decisions: []plan.Decision{d}}
			body, err := publish.BodyRead(cs, "the recording metrics.om", at)
			require.NoError(t, err)
			require.Contains(t, body, "\n- "+tt.merging+"\n")
			if !tt.template {
				require.NotContains(t, body, "Deployment")
			}
			got := "# " + publish.Title(cs) + "\n\n" + body
			golden := filepath.Join("testdata", tt.golden)
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), got)
		})
	}
}

// TestMergingSentence: every kind's body says what merging does, one
// sentence naming the kind; a kind the tool has no sentence for is named,
// not passed off as a Deployment.
func TestMergingSentence(t *testing.T) {
	chatDecision := chatOf(t)
	tests := []struct {
		kind, want string
	}{
		{"Deployment", "Merging rolls the Deployment: new pods start with the new request."},
		{"StatefulSet", "Merging rolls the StatefulSet one pod at a time"},
		{"Rollout", "Argo Rollouts rolls it out by the Rollout's own strategy (canary steps or blue-green)"},
		{"LeaderWorkerSet", "Merging rolls the LeaderWorkerSet by whole groups"},
		{"InferenceService", "Merging changes the InferenceService's pod template: its controller decides when pods start with the new request."},
		{"Odd*Kind", `Merging changes the Odd\*Kind's pod template`},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			d := chatDecision
			d.Workload.Ref.Kind = tt.kind
			body, err := publish.Body(plan.ChangeSet{Key: d.Workload.Ref.String(), Decisions: []plan.Decision{d}})
			require.NoError(t, err)
			risks := body[strings.Index(body, "\nRisks:\n"):]
			require.Equal(t, 1, strings.Count(risks, "- Merging "), "%s", risks)
			require.Contains(t, risks, tt.want)
		})
	}
}
