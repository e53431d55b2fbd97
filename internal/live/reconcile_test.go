package live_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// TestReconcile: the marker's life after a live change, on a real API
// server, with pull requests on the local forge: open leaves it; merged
// (Git holds the live values) releases the fields and removes it; closed
// reverts only when configured; a live object someone changed since is
// left.
func TestReconcile(t *testing.T) {
	c := startCluster(t, "admin")
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	tests := []struct {
		name   string
		state  scm.State
		revert bool
		// git is the base branch's values after the pull request's fate.
		git    live.GitValues
		meddle func(t *testing.T, w workload) // after the live change
		want   live.Outcome
		detail string
		check  func(t *testing.T, w workload, before *appsv1.Deployment)
	}{
		{
			name: "open: pending", state: scm.Open,
			git:  live.GitValues{Fraction: "0.30", VLLM: map[string]string{"vllm": "0.27"}},
			want: live.Pending, detail: "is open",
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.Contains(t, d.Annotations, live.MarkerAnnotation)
				require.Equal(t, before.ResourceVersion, d.ResourceVersion, "nothing written")
			},
		},
		{
			name: "merged and Git holds the values: marker removed, fields released and kept", state: scm.Merged,
			git:  live.GitValues{Fraction: "0.45", VLLM: map[string]string{"vllm": "0.40"}},
			want: live.Released, detail: "marker removed",
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
				require.Equal(t, before.Spec.Template, d.Spec.Template, "releasing does not roll: the pod template is the same")
				require.Equal(t, "0.45", d.Spec.Template.Annotations["gpu-fraction"], "the value stays: Git holds it now")
				require.Equal(t, "--gpu-memory-utilization=0.40", d.Spec.Template.Spec.Containers[0].Args[2])
				require.Equal(t, []string{"argocd-controller"}, owners(t, d, fractionPath...), "handed back to the manager that applied it before: Argo CD manages it again")
				require.Equal(t, []string{"argocd-controller"}, owners(t, d, argsPath...))
				require.Contains(t, owners(t, d, "f:spec", "f:template", "f:spec", "f:containers", `k:{"name":"vllm"}`, "f:image"), "argocd-controller",
					"and it keeps everything else it applied")
				require.Empty(t, owners(t, d, markerPath...))
				for _, mf := range d.ManagedFields {
					require.NotEqual(t, live.FieldManager, mf.Manager, "the tool's manager owns nothing")
				}
			},
		},
		{
			name: "merged, and GitOps synced a higher value Git took since: released", state: scm.Merged,
			git: live.GitValues{Fraction: "0.60", VLLM: map[string]string{"vllm": "0.54"}},
			meddle: func(t *testing.T, w workload) {
				w.fraction, w.args = "0.60", []string{"--model", "Qwen/Qwen2.5-7B", "--gpu-memory-utilization=0.54", "--max-model-len", "8192"}
				c.applyAs(t, w, "argocd-controller", true)
			},
			want: live.Released, detail: "merged and the live values are Git's, at least the tool's: marker removed",
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
				require.Equal(t, before.Spec.Template, d.Spec.Template, "releasing does not roll")
				require.Equal(t, "0.60", d.Spec.Template.Annotations["gpu-fraction"])
			},
		},
		{
			name: "merged, a person set a value above the tool's that Git does not hold: left", state: scm.Merged,
			git: live.GitValues{Fraction: "0.45", VLLM: map[string]string{"vllm": "0.40"}},
			meddle: func(t *testing.T, w workload) {
				w.fraction, w.args = "0.60", []string{"--model", "Qwen/Qwen2.5-7B", "--gpu-memory-utilization=0.40", "--max-model-len", "8192"}
				c.applyAs(t, w, "kubectl-edit", true)
			},
			want: live.Left, detail: "the live gpu-fraction is 0.60, not the 0.45 the tool applied: someone changed it since",
			check: func(t *testing.T, w workload, _ *appsv1.Deployment) {
				require.Contains(t, c.get(t, w.ns, w.name).Annotations, live.MarkerAnnotation)
			},
		},
		{
			name: "merged but Git holds less: released at the live values, for GitOps to apply Git's", state: scm.Merged,
			git:  live.GitValues{Fraction: "0.40", VLLM: map[string]string{"vllm": "0.36"}},
			want: live.Released, detail: `Git holds gpu-fraction "0.40" below the live 0.45; the GitOps controller applies Git's values once the fields are released: marker removed, fields released to argocd-controller`,
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
				require.Equal(t, before.Spec.Template, d.Spec.Template, "the tool lowers nothing itself")
				require.Equal(t, []string{"argocd-controller"}, owners(t, d, fractionPath...))
			},
		},
		{
			name: "closed unmerged, revert on: back to Git's values", state: scm.Closed, revert: true,
			git:  live.GitValues{Fraction: "0.30", VLLM: map[string]string{"vllm": "0.27"}},
			want: live.Reverted, detail: "reverted to Git's values, marker removed",
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
				require.NotEqual(t, before.Spec.Template, d.Spec.Template, "reverting rolls: the pod template changed")
				require.Equal(t, "0.30", d.Spec.Template.Annotations["gpu-fraction"])
				require.Equal(t, vllmArgs, d.Spec.Template.Spec.Containers[0].Args)
				require.NotContains(t, owners(t, d, fractionPath...), live.FieldManager)
			},
		},
		{
			name: "closed unmerged, revert off: left and said", state: scm.Closed,
			git:  live.GitValues{Fraction: "0.30", VLLM: map[string]string{"vllm": "0.27"}},
			want: live.Left, detail: "was closed unmerged; the live change (gpu-fraction 0.30 → 0.45) is left (`--live-revert-closed` reverts it)",
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.Equal(t, "0.45", d.Spec.Template.Annotations["gpu-fraction"])
				require.Contains(t, d.Annotations, live.MarkerAnnotation)
			},
		},
		{
			name: "closed, revert on, Git raised since by another pull request: reverted to Git's value now, not the marker's", state: scm.Closed, revert: true,
			git:  live.GitValues{Fraction: "0.40", VLLM: map[string]string{"vllm": "0.36"}},
			want: live.Reverted, detail: "reverted to Git's values, marker removed",
			check: func(t *testing.T, w workload, _ *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
				require.Equal(t, "0.40", d.Spec.Template.Annotations["gpu-fraction"], "not the marker's old 0.30")
				require.Equal(t, "--gpu-memory-utilization=0.36", d.Spec.Template.Spec.Containers[0].Args[2])
			},
		},
		{
			name: "closed, revert on, Git now at or above the live values: released, not reverted", state: scm.Closed, revert: true,
			git:  live.GitValues{Fraction: "0.60", VLLM: map[string]string{"vllm": "0.54"}},
			want: live.Released, detail: "Git now holds at least the live values: marker removed",
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
				require.Equal(t, before.Spec.Template, d.Spec.Template, "no roll: GitOps brings Git's higher value")
			},
		},
		{
			name: "closed, a revert to Git's value now that died before its release: the release is finished", state: scm.Closed, revert: true,
			git:    live.GitValues{Fraction: "0.40", VLLM: map[string]string{"vllm": "0.36"}},
			meddle: func(t *testing.T, w workload) { c.halfRevert(t, w, "0.40", withFlag036) },
			want:   live.Released, detail: "the live values are Git's: marker removed",
			check: func(t *testing.T, w workload, _ *appsv1.Deployment) {
				require.NotContains(t, c.get(t, w.ns, w.name).Annotations, live.MarkerAnnotation)
			},
		},
		{
			name: "closed, a revert that died before its release: the release is finished", state: scm.Closed, revert: true,
			git:    live.GitValues{Fraction: "0.30", VLLM: map[string]string{"vllm": "0.27"}},
			meddle: func(t *testing.T, w workload) { c.halfRevert(t, w, "0.30", vllmArgs) },
			want:   live.Released, detail: "was closed unmerged and the live values are Git's: marker removed",
			check: func(t *testing.T, w workload, before *appsv1.Deployment) {
				d := c.get(t, w.ns, w.name)
				require.NotContains(t, d.Annotations, live.MarkerAnnotation)
				require.Equal(t, before.Spec.Template, d.Spec.Template, "finishing the release does not roll")
				require.Equal(t, "0.30", d.Spec.Template.Annotations["gpu-fraction"])
				for _, mf := range d.ManagedFields {
					require.NotEqual(t, live.FieldManager, mf.Manager, "the tool's manager owns nothing")
				}
			},
		},
		{
			name: "changed by someone since: left, even with revert on", state: scm.Closed, revert: true,
			git: live.GitValues{Fraction: "0.30", VLLM: map[string]string{"vllm": "0.27"}},
			meddle: func(t *testing.T, w workload) {
				w.fraction, w.args = "0.50", vllmArgs
				c.applyAs(t, w, "kubectl-edit", true)
			},
			want: live.Left, detail: "the live gpu-fraction is 0.50, not the 0.45 the tool applied: someone changed it since",
			check: func(t *testing.T, w workload, _ *appsv1.Deployment) {
				require.Equal(t, "0.50", c.get(t, w.ns, w.name).Spec.Template.Annotations["gpu-fraction"])
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := workload{ns: "inference", name: "w" + string(rune('a'+i)), fraction: "0.30", args: vllmArgs}
			c.create(t, w, "argocd-controller")
			pr, err := prs.Open(ctx(t), scm.NewPullRequest{Branch: "gpu-rightsizing/inference/" + w.name, Base: "main", Title: "t", Body: "b"})
			require.NoError(t, err)
			tg := target(w)
			tg.PullRequest, tg.Number, tg.Branch = pr.URL, pr.Number, pr.Branch
			o := live.Options{Namespaces: []string{"inference"}, MaxChanges: 1, Force: true, RevertClosed: tt.revert, Now: now}
			res, err := live.NewApplier(c.c, o).Apply(ctx(t), tg)
			require.NoError(t, err)
			require.Equal(t, live.Applied, res.Outcome, res.Detail)
			if tt.meddle != nil {
				tt.meddle(t, w)
			}
			require.NoError(t, prs.SetState(pr.Number, tt.state, ""))
			before := c.get(t, w.ns, w.name)

			// Only this case's Deployment is looked at: the namespace holds
			// the other cases' too.
			var got *live.Result
			results, err := live.NewApplier(c.c, o).Reconcile(ctx(t), prs, func(ns, name string) (live.GitValues, bool) {
				return tt.git, ns == w.ns && name == w.name
			})
			require.NoError(t, err)
			for i := range results {
				if results[i].Name == w.name {
					got = &results[i]
				}
			}
			require.NotNil(t, got, "%+v", results)
			require.Equal(t, tt.want, got.Outcome, got.Detail)
			require.Contains(t, got.Detail, tt.detail)
			tt.check(t, w, before)
		})
	}
}

// TestNamespacesRejected: an empty namespace name (client-go's "every
// namespace") or a repeated one stops Apply and Reconcile before anything
// is read, on a real API server where a marked Deployment waits in a
// namespace that was not allowed.
func TestNamespacesRejected(t *testing.T) {
	c := startCluster(t, "admin")
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	w := workload{ns: "staging", name: "elsewhere", fraction: "0.30", args: vllmArgs}
	c.create(t, w, "argocd-controller")
	pr, err := prs.Open(ctx(t), scm.NewPullRequest{Branch: "gpu-rightsizing/staging/elsewhere", Base: "main", Title: "t", Body: "b"})
	require.NoError(t, err)
	tg := target(w)
	tg.PullRequest, tg.Number, tg.Branch = pr.URL, pr.Number, pr.Branch
	res, err := live.NewApplier(c.c, live.Options{Namespaces: []string{"staging"}, MaxChanges: 1, Force: true, Now: now}).Apply(ctx(t), tg)
	require.NoError(t, err)
	require.Equal(t, live.Applied, res.Outcome, res.Detail)
	require.NoError(t, prs.SetState(pr.Number, scm.Merged, ""))
	git := func(string, string) (live.GitValues, bool) {
		return live.GitValues{Fraction: "0.45", VLLM: map[string]string{"vllm": "0.40"}}, true
	}
	for _, tt := range []struct {
		name string
		ns   []string
		err  string
	}{
		{"empty: every namespace", []string{"inference", ""}, "namespace 2 is empty"},
		{"blank", []string{" "}, "namespace 1 is empty"},
		{"repeated", []string{"inference", "inference"}, "namespace inference is named twice"},
		{"none", nil, "no namespace allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := live.NewApplier(c.c, live.Options{Namespaces: tt.ns, MaxChanges: 1, Force: true, RevertClosed: true, Now: now})
			results, err := a.Reconcile(ctx(t), prs, git)
			require.ErrorContains(t, err, tt.err)
			require.Empty(t, results)
			_, err = a.Apply(ctx(t), target(workload{ns: "inference", name: "x"}))
			require.ErrorContains(t, err, tt.err)
			require.Contains(t, c.get(t, w.ns, w.name).Annotations, live.MarkerAnnotation, "staging's marker is untouched")
		})
	}
}

var withFlag036 = []string{"--model", "Qwen/Qwen2.5-7B", "--gpu-memory-utilization=0.36", "--max-model-len", "8192"}

// halfRevert does what the revert's first patch does, under the tool's
// manager: the live values set to fraction and args, the marker kept; a
// run that died then never let go of them.
func (c testCluster) halfRevert(t *testing.T, w workload, fraction string, args []string) {
	t.Helper()
	d := c.get(t, w.ns, w.name)
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": w.name, "namespace": w.ns, "annotations": map[string]string{live.MarkerAnnotation: d.Annotations[live.MarkerAnnotation]}},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{"gpu-fraction": fraction}},
			"spec":     map[string]any{"containers": []map[string]any{{"name": "vllm", "args": args}}},
		}},
	})
	require.NoError(t, err)
	path := fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/%s?fieldManager=%s", w.ns, w.name, live.FieldManager)
	code, out := c.s.Do(t, kubeenv.Admin, http.MethodPatch, path, body, "application/apply-patch+yaml")
	require.Equal(t, http.StatusOK, code, "%s", out)
}

// TestReleaseHandsBack: the hand-off back to Git is clean, on a real API
// server. The release gives the fields back to the manager that applied
// them before the live change, so when Git later drops the field, that
// manager's next apply prunes it. A Deployment nobody applied (created or
// updated with client-side tools) has no such manager: the fields go to
// the handoff manager, and a client-side update that removes the field
// still removes it, as such tools prune.
func TestReleaseHandsBack(t *testing.T) {
	c := startCluster(t, "admin")
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	o := live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}
	cycle := func(t *testing.T, w workload) *appsv1.Deployment {
		t.Helper()
		pr, err := prs.Open(ctx(t), scm.NewPullRequest{Branch: "gpu-rightsizing/inference/" + w.name, Base: "main", Title: "t", Body: "b"})
		require.NoError(t, err)
		tg := target(w)
		tg.VLLM, tg.PullRequest, tg.Number, tg.Branch = nil, pr.URL, pr.Number, pr.Branch
		res, err := live.NewApplier(c.c, o).Apply(ctx(t), tg)
		require.NoError(t, err)
		require.Equal(t, live.Applied, res.Outcome, res.Detail)
		require.NoError(t, prs.SetState(pr.Number, scm.Merged, ""))
		results, err := live.NewApplier(c.c, o).Reconcile(ctx(t), prs, func(_, name string) (live.GitValues, bool) {
			return live.GitValues{Fraction: "0.45"}, name == w.name
		})
		require.NoError(t, err)
		for _, r := range results {
			if r.Name == w.name {
				require.Equal(t, live.Released, r.Outcome, r.Detail)
			}
		}
		return c.get(t, w.ns, w.name)
	}
	dropAnnotation := func(w workload) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(w.manifest(), &m))
		delete(m["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any), "annotations")
		body, err := json.Marshal(m)
		require.NoError(t, err)
		return body
	}

	t.Run("applied by a GitOps controller", func(t *testing.T) {
		w := workload{ns: "inference", name: "applied", fraction: "0.30"}
		c.create(t, w, "argocd-controller")
		d := cycle(t, w)
		require.Equal(t, "0.45", d.Spec.Template.Annotations["gpu-fraction"])
		require.Equal(t, []string{"argocd-controller"}, owners(t, d, fractionPath...), "the field is the GitOps controller's again")
		for _, mf := range d.ManagedFields {
			require.NotEqual(t, live.HandoffManager, mf.Manager, "nobody else holds a share")
		}

		// Git drops the annotation; the controller's next apply prunes it.
		path := fmt.Sprintf("/apis/apps/v1/namespaces/%s/deployments/%s?fieldManager=argocd-controller&force=true", w.ns, w.name)
		code, out := c.s.Do(t, kubeenv.Admin, http.MethodPatch, path, dropAnnotation(w), "application/apply-patch+yaml")
		require.Equal(t, http.StatusOK, code, "%s", out)
		require.NotContains(t, c.get(t, w.ns, w.name).Spec.Template.Annotations, "gpu-fraction", "pruned")
	})

	t.Run("created with a client-side tool", func(t *testing.T) {
		w := workload{ns: "inference", name: "created", fraction: "0.30"}
		code, out := c.s.Do(t, kubeenv.Admin, http.MethodPost, "/apis/apps/v1/namespaces/inference/deployments?fieldManager=kubectl-client-side-apply", w.manifest(), "")
		require.Equal(t, http.StatusCreated, code, "%s", out)
		d := cycle(t, w)
		require.Equal(t, []string{live.HandoffManager}, owners(t, d, fractionPath...), "no manager applied it before: the handoff manager keeps it")

		// kubectl apply's three-way patch from a manifest without the
		// annotation deletes it, whoever owns it.
		patch := []byte(`{"spec":{"template":{"metadata":{"annotations":{"gpu-fraction":null}}}}}`)
		path := "/apis/apps/v1/namespaces/inference/deployments/created?fieldManager=kubectl-client-side-apply"
		code, out = c.s.Do(t, kubeenv.Admin, http.MethodPatch, path, patch, "application/strategic-merge-patch+json")
		require.Equal(t, http.StatusOK, code, "%s", out)
		require.NotContains(t, c.get(t, w.ns, w.name).Spec.Template.Annotations, "gpu-fraction", "removed")
	})
}

// TestReconcileSkipsKindsItMayNotList: a user that may read and patch
// Deployments only reconciles those; the other kinds, served (a
// StatefulSet) or not (no LeaderWorkerSet CRD here), hold no live change
// of the tool's, which reads an object before it applies to it, and are
// skipped, not failed (docs/live.md, RBAC).
func TestReconcileSkipsKindsItMayNotList(t *testing.T) {
	c := startCluster(t, "admin", testenvUser("deployer"))
	c.s.InstallArgoRolloutCRD(t)
	c.s.Apply(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deployments, namespace: inference}
rules:
  - apiGroups: ["apps"]
    resources: ["deployments"]
    verbs: ["get", "list", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer, namespace: inference}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployments}
subjects: [{kind: User, name: deployer, apiGroup: rbac.authorization.k8s.io}]
`))
	prs, err := scm.NewLocal(t.TempDir())
	require.NoError(t, err)
	o := live.Options{Namespaces: []string{"inference"}, MaxChanges: 5, Force: true, Now: now}
	results, err := live.NewApplier(client(t, c.s, "deployer"), o).Reconcile(ctx(t), prs, func(string, string) (live.GitValues, bool) {
		return live.GitValues{}, false
	})
	require.NoError(t, err)
	require.Empty(t, results)
}
