package workload_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestFollowRefs: which Rollouts with a spec.workloadRef become
// workloads, read from the Deployment they name, and why the others stay
// unsupported.
func TestFollowRefs(t *testing.T) {
	deployment := func(ns, name, file string) workload.Workload {
		return workload.Workload{Ref: usage.Ref{Kind: "Deployment", Namespace: ns, Name: name}, File: file, Line: 1,
			Labels: map[string]string{"kai.scheduler/queue": "deployment-queue"}, PodLabels: map[string]string{"app": name},
			Queue: "deployment-queue", GPU: workload.GPU{FractionText: "0.5", Fraction: 0.5, NumDevices: 1}}
	}
	ro := func(ns, name string, ref *workload.WorkloadRef) workload.Unsupported {
		return workload.Unsupported{Ref: usage.Ref{Kind: "Rollout", Namespace: ns, Name: name}, APIVersion: "argoproj.io/v1alpha1",
			File: "rollout.yaml", Labels: map[string]string{"team": "a"}, WorkloadRef: ref, Why: "not followed"}
	}
	toDeployment := func(name string) *workload.WorkloadRef {
		return &workload.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
	}
	tests := []struct {
		name        string
		workloads   []workload.Workload
		unsupported []workload.Unsupported
		// want are the workloads after, as "Kind/namespace/name from Template in File"
		want []string
		// why are the reasons of the Rollouts left unsupported, by name
		why map[string]string
	}{
		{
			name:        "a Deployment of the same namespace: the Rollout in its place",
			workloads:   []workload.Workload{deployment("ml", "other", "a.yaml"), deployment("ml", "chat", "d.yaml")},
			unsupported: []workload.Unsupported{ro("ml", "chat", toDeployment("chat"))},
			want:        []string{"Deployment/ml/other in a.yaml", "Rollout/ml/chat from ml/Deployment/chat in d.yaml"},
			why:         map[string]string{},
		},
		{
			name:        "no namespace on either: the same one",
			workloads:   []workload.Workload{deployment("", "chat", "d.yaml")},
			unsupported: []workload.Unsupported{ro("", "chat", toDeployment("chat"))},
			want:        []string{"Rollout//chat from /Deployment/chat in d.yaml"},
			why:         map[string]string{},
		},
		{
			name:        "a Deployment of another namespace",
			workloads:   []workload.Workload{deployment("", "chat", "d.yaml"), deployment("staging", "chat", "s.yaml")},
			unsupported: []workload.Unsupported{ro("ml", "chat", toDeployment("chat"))},
			want:        []string{"Deployment//chat in d.yaml", "Deployment/staging/chat in s.yaml"},
			why: map[string]string{"chat": "spec.workloadRef names Deployment chat, which the repository has in namespace (none given), staging only, not in ml: " +
				"Argo reads it from the Rollout's namespace"},
		},
		{
			name:        "no Deployment of that name",
			workloads:   []workload.Workload{deployment("ml", "chat", "d.yaml")},
			unsupported: []workload.Unsupported{ro("ml", "rank", toDeployment("rank"))},
			want:        []string{"Deployment/ml/chat in d.yaml"},
			why:         map[string]string{"rank": "spec.workloadRef names Deployment rank, which is not in the repository: its pod template cannot be edited here"},
		},
		{
			name:      "another kind Argo takes",
			workloads: []workload.Workload{deployment("ml", "chat", "d.yaml")},
			unsupported: []workload.Unsupported{
				ro("ml", "a", &workload.WorkloadRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "chat"}),
				ro("ml", "b", &workload.WorkloadRef{APIVersion: "v1", Kind: "PodTemplate", Name: "chat"}),
				ro("ml", "c", &workload.WorkloadRef{APIVersion: "example.com/v1", Kind: "Deployment", Name: "chat"}),
			},
			want: []string{"Deployment/ml/chat in d.yaml"},
			why: map[string]string{
				"a": "spec.workloadRef names ReplicaSet chat (apps/v1): only a Deployment's (apps/v1) pod template is followed, so it is not sized",
				"b": "spec.workloadRef names PodTemplate chat (v1): only a Deployment's (apps/v1) pod template is followed, so it is not sized",
				"c": "spec.workloadRef names Deployment chat (example.com/v1): only a Deployment's (apps/v1) pod template is followed, so it is not sized",
			},
		},
		{
			name:        "the Deployment defined twice",
			workloads:   []workload.Workload{deployment("ml", "chat", "a.yaml"), deployment("ml", "chat", "b.yaml")},
			unsupported: []workload.Unsupported{ro("ml", "chat", toDeployment("chat"))},
			want:        []string{"Deployment/ml/chat in a.yaml", "Deployment/ml/chat in b.yaml"},
			why: map[string]string{"chat": "spec.workloadRef names Deployment chat, which the repository defines 2 times (a.yaml:1, b.yaml:1): " +
				"which one is deployed is not known"},
		},
		{
			name:        "two Rollouts of one Deployment: neither",
			workloads:   []workload.Workload{deployment("ml", "chat", "d.yaml")},
			unsupported: []workload.Unsupported{ro("ml", "blue", toDeployment("chat")), ro("ml", "green", toDeployment("chat"))},
			want:        []string{"Deployment/ml/chat in d.yaml"},
			why: map[string]string{
				"blue":  "spec.workloadRef names ml/Deployment/chat, whose pod template Rollout green runs too (d.yaml:1): sizing it for one would size it for all",
				"green": "spec.workloadRef names ml/Deployment/chat, whose pod template Rollout blue runs too (d.yaml:1): sizing it for one would size it for all",
			},
		},
		{
			name:        "a Rollout without workloadRef and other kinds pass through",
			workloads:   []workload.Workload{deployment("ml", "chat", "d.yaml")},
			unsupported: []workload.Unsupported{{Ref: usage.Ref{Kind: "DaemonSet", Namespace: "ml", Name: "chat"}, Why: "kept"}},
			want:        []string{"Deployment/ml/chat in d.yaml"},
			why:         map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]workload.Unsupported(nil), tt.unsupported...)
			ws, us := workload.FollowRefs(tt.workloads, tt.unsupported)
			require.Equal(t, before, tt.unsupported, "the input is left as it was")
			var got []string
			for _, w := range ws {
				s := w.Ref.Kind + "/" + w.Ref.Namespace + "/" + w.Ref.Name
				if w.Template != (usage.Ref{}) {
					s += " from " + w.Template.String()
					// The identity and the object's labels are the
					// Rollout's, the queue too; the rest the template's.
					require.Equal(t, map[string]string{"team": "a"}, w.Labels)
					require.Empty(t, w.Queue)
					require.Equal(t, "0.5", w.GPU.FractionText)
					require.Equal(t, map[string]string{"app": w.Template.Name}, w.PodLabels)
				}
				got = append(got, s+" in "+w.File)
			}
			require.Equal(t, tt.want, got)
			why := map[string]string{}
			for _, u := range us {
				if u.WorkloadRef != nil {
					why[u.Ref.Name] = u.Why
				}
			}
			require.Equal(t, tt.why, why)
			followed := 0
			for _, w := range ws {
				if w.Template != (usage.Ref{}) {
					followed++
				}
			}
			require.Len(t, us, len(tt.unsupported)-followed, "a Rollout followed is no longer unsupported; nothing else goes")
		})
	}
}

// BenchmarkFollowRefs: 10,000 Deployments, 1,000 of them the template of
// a Rollout, as discovery hands them over: one pass over each, linear.
func BenchmarkFollowRefs(b *testing.B) {
	var ws []workload.Workload
	var us []workload.Unsupported
	for i := range 10_000 {
		name := fmt.Sprintf("llm-%d", i)
		ws = append(ws, workload.Workload{Ref: usage.Ref{Kind: "Deployment", Namespace: fmt.Sprintf("team-%d", i%50), Name: name}, File: name + ".yaml"})
		if i%10 == 0 {
			us = append(us, workload.Unsupported{Ref: usage.Ref{Kind: "Rollout", Namespace: fmt.Sprintf("team-%d", i%50), Name: name},
				WorkloadRef: &workload.WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		out, rest := workload.FollowRefs(ws, us)
		if len(out) != len(ws) || len(rest) != 0 {
			b.Fatal(len(out), len(rest))
		}
	}
}
