package live_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/live"
)

var now = func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }

// target is the urgent upsize of w from 0.30 to 0.45, with vLLM's flag
// from 0.27 to 0.40, carried by pull request #7.
func target(w workload) live.Target {
	return live.Target{Namespace: w.ns, Name: w.name, Kind: "Deployment",
		Fraction: live.Values{Old: "0.30", New: "0.45"},
		VLLM:     &live.VLLMValues{Container: "vllm", Values: live.Values{Old: "0.27", New: "0.40"}},
		Ceiling:  1, MaxPercent: 200, Reason: "reactive upsize (memory): peak 98% ≥ 90% over 2m",
		PullRequest: "https://github.example/acme/gitops/pull/7", Number: 7, Branch: "gpu-rightsizing/" + w.ns + "/" + w.name}
}

var vllmArgs = []string{"--model", "Qwen/Qwen2.5-7B", "--gpu-memory-utilization=0.27", "--max-model-len", "8192"}

// TestApply: an urgent upsize on a real API server, under every rule of
// the fast path.
func TestApply(t *testing.T) {
	c := startCluster(t, "admin")
	opts := live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Now: now}
	tests := []struct {
		name    string
		w       workload
		manager string // creates the Deployment by server-side apply
		target  func(live.Target) live.Target
		opts    func(live.Options) live.Options
		before  func(t *testing.T, w workload) // after creation
		want    live.Outcome
		detail  string
		check   func(t *testing.T, w workload, res live.Result, gen int64)
	}{
		{
			name: "applied under the tool's manager, and the Deployment rolls",
			w:    workload{ns: "inference", name: "chat", fraction: "0.30", args: vllmArgs}, manager: "kustomize-controller",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			want: live.Applied, detail: "generation 1 → 2",
			check: func(t *testing.T, w workload, res live.Result, gen int64) {
				d := c.get(t, w.ns, w.name)
				require.Equal(t, gen+1, d.Generation, "the pod template changed: the Deployment rolls")
				require.Equal(t, "0.45", d.Spec.Template.Annotations["gpu-fraction"])
				require.Equal(t, []string{"--model", "Qwen/Qwen2.5-7B", "--gpu-memory-utilization=0.40", "--max-model-len", "8192"},
					d.Spec.Template.Spec.Containers[0].Args, "only the flag's value changed in the args")
				require.Equal(t, "vllm/vllm-openai:v0.10.0", d.Spec.Template.Spec.Containers[0].Image)
				require.Equal(t, []string{live.FieldManager}, owners(t, d, fractionPath...))
				require.Equal(t, []string{live.FieldManager}, owners(t, d, argsPath...))
				require.Equal(t, []string{live.FieldManager}, owners(t, d, markerPath...))
				require.Contains(t, owners(t, d, "f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"vllm"}`, "f:image"), "kustomize-controller",
					"fields the tool does not send stay the other manager's")
				var mk live.Marker
				require.NoError(t, json.Unmarshal([]byte(d.Annotations[live.MarkerAnnotation]), &mk))
				require.Equal(t, live.Marker{Fraction: live.Values{Old: "0.30", New: "0.45"},
					VLLM: &live.VLLMValues{Container: "vllm", Values: live.Values{Old: "0.27", New: "0.40"}}, At: now(),
					Reason: "reactive upsize (memory): peak 98% ≥ 90% over 2m", PullRequest: "https://github.example/acme/gitops/pull/7",
					Number: 7, Branch: "gpu-rightsizing/inference/chat", Owners: []string{"kustomize-controller"}}, mk,
					"the marker names who applied the fields before: the release hands them back")
				require.Equal(t, []string{"gpu-fraction 0.30 → 0.45", "container vllm --gpu-memory-utilization 0.27 → 0.40"}, res.Fields)
			},
		},
		{
			name: "another manager's field is reported, not overwritten",
			w:    workload{ns: "inference", name: "argo", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			want: live.Conflict, detail: `conflict with "argocd-controller"`,
			check: func(t *testing.T, w workload, _ live.Result, gen int64) {
				d := c.get(t, w.ns, w.name)
				require.Equal(t, gen, d.Generation, "nothing changed")
				require.Equal(t, "0.30", d.Spec.Template.Annotations["gpu-fraction"])
				require.Equal(t, []string{"argocd-controller"}, owners(t, d, fractionPath...))
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
			},
		},
		{
			name: "forced over another manager only when configured",
			w:    workload{ns: "inference", name: "argo-forced", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			want: live.Applied, detail: "forcing conflicts",
			check: func(t *testing.T, w workload, _ live.Result, gen int64) {
				d := c.get(t, w.ns, w.name)
				require.Equal(t, "0.45", d.Spec.Template.Annotations["gpu-fraction"])
				require.Equal(t, []string{live.FieldManager}, owners(t, d, fractionPath...), "the field moved to the tool")
			},
		},
		{
			name: "a live value someone changed is left",
			w:    workload{ns: "inference", name: "hand-edited", fraction: "0.35", args: vllmArgs}, manager: "kubectl-edit",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			want: live.Left, detail: "the live gpu-fraction is 0.35, Git's 0.30: someone changed it",
			check: unchanged(c, "0.35"),
		},
		{
			name: "a live vLLM flag someone changed is left",
			w: workload{ns: "inference", name: "hand-flag", fraction: "0.30",
				args: []string{"--gpu-memory-utilization", "0.5"}}, manager: "kubectl-edit",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			want: live.Left, detail: "the live --gpu-memory-utilization is 0.5, Git's 0.27",
			check: unchanged(c, "0.30"),
		},
		{
			name: "never a downsize: Git's value above the recommendation",
			w:    workload{ns: "inference", name: "down", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			target: func(tg live.Target) live.Target { tg.Fraction.New = "0.20"; tg.VLLM = nil; return tg },
			opts:   func(o live.Options) live.Options { o.Force = true; return o },
			want:   live.Refused, detail: "never downsized",
			check: unchanged(c, "0.30"),
		},
		{
			name: "never a downsize: the live value, the tool's own from before, already higher",
			w:    workload{ns: "inference", name: "already", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			before: func(t *testing.T, w workload) {
				tg := target(w)
				tg.Fraction.New, tg.VLLM.New = "0.60", "0.54"
				res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 1, Force: true, Now: now}).Apply(ctx(t), tg)
				require.NoError(t, err)
				require.Equal(t, live.Applied, res.Outcome, res.Detail)
			},
			want: live.Left, detail: "the live gpu-fraction 0.60 already holds the recommended 0.45: never downsized",
			check: unchanged(c, "0.60"),
		},
		{
			name: "a person's manual revert to Git's value is not applied over again",
			w:    workload{ns: "inference", name: "reverted-by-hand", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			before: func(t *testing.T, w workload) {
				res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"inference"}, MaxChanges: 1, Force: true, Now: now}).Apply(ctx(t), target(w))
				require.NoError(t, err)
				require.Equal(t, live.Applied, res.Outcome, res.Detail)
				c.applyAs(t, w, "kubectl-edit", true) // back to 0.30 and 0.27 by hand; the marker stays
			},
			want: live.Left, detail: "the live gpu-fraction is 0.30, not the 0.45 of the tool's live change: a person changed it since our live change",
			check: func(t *testing.T, w workload, res live.Result, gen int64) {
				unchanged(c, "0.30")(t, w, res, gen)
				require.Equal(t, vllmArgs, c.get(t, w.ns, w.name).Spec.Template.Spec.Containers[0].Args)
			},
		},
		{
			name: "a vLLM flag that would drop is never lowered live: the fraction alone, and a warning",
			w:    workload{ns: "inference", name: "flag-down", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			target: func(tg live.Target) live.Target { tg.VLLM.New = "0.20"; return tg },
			opts:   func(o live.Options) live.Options { o.Force = true; return o },
			want:   live.Applied,
			check: func(t *testing.T, w workload, res live.Result, _ int64) {
				d := c.get(t, w.ns, w.name)
				require.Equal(t, "0.45", d.Spec.Template.Annotations["gpu-fraction"])
				require.Equal(t, vllmArgs, d.Spec.Template.Spec.Containers[0].Args, "the flag stays 0.27")
				require.Equal(t, []string{"argocd-controller"}, owners(t, d, argsPath...), "args not sent are not taken")
				require.Equal(t, []string{"gpu-fraction 0.30 → 0.45"}, res.Fields)
				require.Equal(t, []string{"container vllm: --gpu-memory-utilization would drop from 0.27 to 0.20: never lowered live, left to the pull request"}, res.Warnings)
			},
		},
		{
			name: "beyond maxPercent is refused",
			w:    workload{ns: "inference", name: "steep", fraction: "0.30"}, manager: "argocd-controller",
			target: func(tg live.Target) live.Target { tg.Fraction.New = "0.70"; tg.VLLM = nil; return tg },
			opts:   func(o live.Options) live.Options { o.Force = true; return o },
			want:   live.Refused, detail: "more than maxPercent 200% of 0.30",
			check: unchanged(c, "0.30"),
		},
		{
			name: "an unset maxPercent is the default 200%, not no bound",
			w:    workload{ns: "inference", name: "steep-unset", fraction: "0.30"}, manager: "argocd-controller",
			target: func(tg live.Target) live.Target { tg.Fraction.New, tg.MaxPercent, tg.VLLM = "0.70", 0, nil; return tg },
			opts:   func(o live.Options) live.Options { o.Force = true; return o },
			want:   live.Refused, detail: "more than maxPercent 200% of 0.30",
			check: unchanged(c, "0.30"),
		},
		{
			name: "beyond the ceiling is refused",
			w:    workload{ns: "inference", name: "ceiling", fraction: "0.30"}, manager: "argocd-controller",
			target: func(tg live.Target) live.Target { tg.Ceiling = 0.4; tg.VLLM = nil; return tg },
			opts:   func(o live.Options) live.Options { o.Force = true; return o },
			want:   live.Refused, detail: "above the ceiling 0.4",
			check: unchanged(c, "0.30"),
		},
		{
			name: "a namespace not allowed is not touched",
			w:    workload{ns: "staging", name: "chat", fraction: "0.30"}, manager: "argocd-controller",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			want: live.Refused, detail: "namespace staging is not one live changes may touch (inference)",
			check: unchanged(c, "0.30"),
		},
		{
			name: "only the kinds whose pod template it owns, never a Pod",
			w:    workload{ns: "inference", name: "kind", fraction: "0.30"}, manager: "argocd-controller",
			target: func(tg live.Target) live.Target { tg.Kind = "Pod"; return tg },
			want:   live.Refused, detail: "a Pod is never changed live: Deployments, StatefulSets, Argo Rollouts, LeaderWorkerSets, KServe InferenceServices and NVIDIA Dynamo graphs' services only",
			check: unchanged(c, "0.30"),
		},
		{
			name: "at the cap of live changes",
			w:    workload{ns: "inference", name: "capped", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			opts: func(o live.Options) live.Options { o.Force, o.MaxChanges = true, 0; return o },
			want: live.Capped, detail: "at the cap of 0 live changes per run",
			check: unchanged(c, "0.30"),
		},
		{
			name: "a dry run changes nothing",
			w:    workload{ns: "inference", name: "dry", fraction: "0.30", args: vllmArgs}, manager: "argocd-controller",
			opts: func(o live.Options) live.Options { o.DryRun = true; return o },
			want: live.WouldApply, detail: "would apply by server-side apply as gpu-rightsizing-recommender",
			check: unchanged(c, "0.30"),
		},
		{
			name: "vLLM args without the flag: the fraction alone, and a warning",
			w:    workload{ns: "inference", name: "noflag", fraction: "0.30", args: []string{"--model", "m"}}, manager: "argocd-controller",
			opts: func(o live.Options) live.Options { o.Force = true; return o },
			want: live.Applied,
			check: func(t *testing.T, w workload, res live.Result, _ int64) {
				d := c.get(t, w.ns, w.name)
				require.Equal(t, "0.45", d.Spec.Template.Annotations["gpu-fraction"])
				require.Equal(t, []string{"--model", "m"}, d.Spec.Template.Spec.Containers[0].Args)
				require.Equal(t, []string{"argocd-controller"}, owners(t, d, argsPath...), "args not sent are not taken")
				require.Equal(t, []string{"container vllm: --gpu-memory-utilization is not a literal in its args: left to the pull request"}, res.Warnings)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.create(t, tt.w, tt.manager)
			if tt.before != nil {
				tt.before(t, tt.w)
			}
			gen := c.get(t, tt.w.ns, tt.w.name).Generation
			tg := target(tt.w)
			if tt.target != nil {
				tg = tt.target(tg)
			}
			o := opts
			if tt.opts != nil {
				o = tt.opts(o)
			}
			res, err := live.NewApplier(c.c, o).Apply(ctx(t), tg)
			require.NoError(t, err)
			require.Equal(t, tt.want, res.Outcome, res.Detail)
			require.Contains(t, res.Detail, tt.detail)
			tt.check(t, tt.w, res, gen)
		})
	}
}

// unchanged checks that the Deployment still holds fraction and no
// marker of a change made by this case.
func unchanged(c testCluster, fraction string) func(t *testing.T, w workload, _ live.Result, gen int64) {
	return func(t *testing.T, w workload, _ live.Result, gen int64) {
		d := c.get(t, w.ns, w.name)
		require.Equal(t, gen, d.Generation, "nothing changed")
		require.Equal(t, fraction, d.Spec.Template.Annotations["gpu-fraction"])
	}
}

// TestApplyForbidden: a user that may only read Deployments gets an
// error that names the verb and the resource, and nothing changes.
func TestApplyForbidden(t *testing.T) {
	c := startCluster(t, "admin", testenvUser("reader"))
	c.s.Apply(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: read-deployments, namespace: inference}
rules:
  - apiGroups: ["apps"]
    resources: ["deployments"]
    verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: inference}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read-deployments}
subjects: [{kind: User, name: reader, apiGroup: rbac.authorization.k8s.io}]
`))
	w := workload{ns: "inference", name: "chat", fraction: "0.30", args: vllmArgs, queue: "inference"}
	c.create(t, w, "argocd-controller")
	reader := client(t, c.s, "reader")
	res, err := live.NewApplier(reader, live.Options{Namespaces: []string{"inference"}, MaxChanges: 1, Force: true, Now: now}).Apply(ctx(t), target(w))
	require.NoError(t, err)
	require.Equal(t, live.Failed, res.Outcome, res.Detail)
	require.Contains(t, res.Detail, "patch deployments in namespace inference: forbidden: ")
	require.Contains(t, res.Warnings, `KAI queue inference could not be read (queues.scheduling.run.ai "inference" is forbidden: User "reader" cannot get resource "queues" in API group "scheduling.run.ai" at the cluster scope): its quota and limit were not checked`,
		"an unreadable queue is a note, not fatal")
	require.Equal(t, "0.30", c.get(t, w.ns, w.name).Spec.Template.Annotations["gpu-fraction"])

	// And a reader without even get: the error names get.
	other := client(t, c.s, "reader")
	res, err = live.NewApplier(other, live.Options{Namespaces: []string{"staging"}, MaxChanges: 1, Now: now}).Apply(ctx(t),
		target(workload{ns: "staging", name: "chat"}))
	require.NoError(t, err)
	require.Equal(t, live.Failed, res.Outcome)
	require.Contains(t, res.Detail, "get deployments in namespace staging: forbidden: ")
}
