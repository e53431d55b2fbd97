package publish_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// A body for people: the series it names are the ones the tool read (the
// pods it counted, the source's matcher), pasteable as they are; an urgent
// change says so first in its title; the long parts are folded; the
// footer names the build.
func TestBodyForPeople(t *testing.T) {
	chat := chatOf(t)
	many := chat
	many.Usage.Pods = nil
	for i := range 13 {
		many.Usage.Pods = append(many.Usage.Pods, usage.Pod{Name: fmt.Sprintf("chat-5d8.x-%02d", i)})
	}
	calm := chat
	calm.Urgent = false
	// A workload of a mapped cluster: its pods named cluster/pod, its
	// matcher its own cluster's label value.
	clustered := chat
	clustered.Workload.Ref.Cluster = "prod-us"
	clustered.Matcher = `cluster="us-east-1"`
	clustered.Usage.Pods = nil
	for _, p := range chat.Usage.Pods {
		p.Name = "prod-us/" + p.Name
		clustered.Usage.Pods = append(clustered.Usage.Pods, p)
	}
	tests := []struct {
		name      string
		d         plan.Decision
		matcher   string
		version   string
		title     string
		contains  []string
		forbidden []string
	}{
		{
			name: "the pods counted, with the source's matcher", d: chat, matcher: `cluster="prod-eu"`, version: "v1.4.0",
			title: "Urgent: upsize the GPU of inference/chat: 0.50 → 0.72",
			contains: []string{
				"`kubex_gpu_container_sm_utilization_percent{namespace=\"inference\", pod=~\"chat-7c9d8b5f6d-p7w9z|chat-7c9d8b5f6d-x2k4q\", cluster=\"prod-eu\"}`",
				"<sub>gpu-rightsizing recommender v1.4.0 · ",
				"<details><summary>Usage over the window, and the series read</summary>",
				`line "compute" [`, `line "current 0.50" [`, `line "recommended 0.72" [`,
			},
		},
		{
			name: "too many pods to name: the name pattern, said to be one", d: many,
			title: "Urgent: upsize the GPU of inference/chat: 0.50 → 0.72",
			contains: []string{
				"`kubex_gpu_container_sm_utilization_percent{namespace=\"inference\", pod=~\"chat-.*\"}` (fullGPU; the 13 pods counted, by the pattern of their names, which may catch others)",
				"(unversioned build)",
			},
			forbidden: []string{"chat-5d8"},
		},
		{
			name: "a mapped cluster's workload: the cluster in the title, its own matcher", d: clustered, matcher: `cluster="prod-eu"`,
			title: "Urgent: upsize the GPU of inference/chat in prod-us: 0.50 → 0.72",
			contains: []string{
				"`kubex_gpu_container_sm_utilization_percent{namespace=\"inference\", pod=~\"chat-7c9d8b5f6d-p7w9z|chat-7c9d8b5f6d-x2k4q\", cluster=\"us-east-1\"}`",
			},
			forbidden: []string{"prod-us/chat", `cluster="prod-eu"`},
		},
		{
			name: "not urgent: the title as it was", d: calm,
			title: "Upsize the GPU of inference/chat: 0.50 → 0.72",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := plan.ChangeSet{Key: tt.d.Workload.Ref.String(), Grouping: plan.ByWorkload, Decisions: []plan.Decision{tt.d}}
			require.Equal(t, tt.title, publish.Title(cs))
			body, err := publish.BodyAt(cs, tt.matcher, tt.version)
			require.NoError(t, err)
			for _, want := range tt.contains {
				require.Contains(t, body, want)
			}
			for _, not := range tt.forbidden {
				require.NotContains(t, body, not)
			}
			require.Equal(t, strings.Count(body, "<details>"), strings.Count(body, "</details>"))
		})
	}
}

// TestBodyMentionsNoOne: text from a repository, a cluster or a usage
// source that holds "@name" (a team, a user, GitLab's @all) reads the
// same in a body, but mentions no one: a zero-width space follows "@".
func TestBodyMentionsNoOne(t *testing.T) {
	chat := chatOf(t)
	ref := chat.Workload.Ref.String()
	cs := plan.ChangeSet{Key: ref, Grouping: plan.ByWorkload, Decisions: []plan.Decision{chat}}
	body, err := publish.BodyWith(cs, map[string][]string{ref: {"its GPU was crowded by @alice's job; ask @acme/gpu-team or @all"}},
		map[string][]string{ref: {"queue @bob-queue would pass its quota"}})
	require.NoError(t, err)
	for _, name := range []string{"alice", "acme/gpu-team", "all", "bob-queue"} {
		require.NotContains(t, body, "@"+name)
		require.Contains(t, body, "@&#8203;"+name)
	}
}
