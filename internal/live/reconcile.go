package live

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/scm"
)

// PullRequests finds pull requests by head branch, in any state: the
// publisher's forge.
type PullRequests interface {
	Find(ctx context.Context, branch string) ([]scm.PullRequest, error)
}

// GitValues are a workload's values on the base branch now.
type GitValues struct {
	Fraction string
	// VLLM is the flag's value by container name.
	VLLM map[string]string
}

// Reconcile looks at every Deployment in the allowed namespaces that
// carries the tool's marker, before new live changes are made: once the
// pull request merged and Git holds at least the live values, the tool
// lets go of the fields (they stay, now Git's); once it was closed
// unmerged, the change is reverted to Git's value when RevertClosed says
// so, else left and reported; a live object someone changed since is
// left, and reported. git gives the base branch's values of a workload,
// ok false when the plan does not hold it.
func (a *Applier) Reconcile(ctx context.Context, prs PullRequests, git func(namespace, name string) (GitValues, bool)) ([]Result, error) {
	if a.bad != nil {
		return nil, a.bad
	}
	var out []Result
	for _, ns := range a.o.Namespaces {
		list, err := a.c.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			out = append(out, Result{Namespace: ns, Outcome: Failed, Detail: apiError("list", "deployments", ns, err).Error()})
			continue
		}
		for i := range list.Items {
			dep := &list.Items[i]
			// Whatever the server answered, only an allowed namespace's
			// Deployment is touched.
			if !slices.Contains(a.o.Namespaces, dep.Namespace) {
				continue
			}
			if _, ok := dep.Annotations[MarkerAnnotation]; !ok {
				continue
			}
			res := a.reconcile(ctx, dep, prs, git)
			if err := ctx.Err(); err != nil {
				return out, err
			}
			out = append(out, res)
		}
	}
	return out, nil
}

func (a *Applier) reconcile(ctx context.Context, dep *appsv1.Deployment, prs PullRequests, git func(string, string) (GitValues, bool)) Result {
	res := Result{Namespace: dep.Namespace, Name: dep.Name}
	set := func(o Outcome, format string, args ...any) Result {
		res.Outcome, res.Detail = o, fmt.Sprintf(format, args...)
		return res
	}
	mk, _, err := markerOf(dep.Annotations)
	if err != nil {
		return set(Left, "%v: left for a person", err)
	}
	live := dep.Spec.Template.Annotations[kai.FractionAnnotation]
	var liveV string
	if mk.VLLM != nil {
		liveV = liveVLLM(dep, mk.VLLM.Container)
	}
	// changed says how the live values differ from the ones the tool
	// applied, "" when they are still the tool's.
	var changed string
	switch {
	case live != mk.Fraction.New:
		changed = fmt.Sprintf("the live gpu-fraction is %s, not the %s the tool applied: someone changed it since; the marker is left for a person", live, mk.Fraction.New)
	case mk.VLLM != nil && liveV != mk.VLLM.New:
		changed = fmt.Sprintf("container %s: the live --gpu-memory-utilization is %q, not the %s the tool applied: someone changed it since; the marker is left for a person",
			mk.VLLM.Container, liveV, mk.VLLM.New)
	}
	found, err := prs.Find(ctx, mk.Branch)
	if err != nil {
		if changed != "" {
			return set(Left, "%s", changed)
		}
		return set(Failed, "the state of pull request %s: %v", mk.PullRequest, err)
	}
	i := slices.IndexFunc(found, func(pr scm.PullRequest) bool { return pr.Number == mk.Number })
	if changed != "" {
		// A revert that died between setting Git's values and letting go
		// of them leaves the marker on Git's old values: the release is
		// what is left to do, else the marker would stay for ever.
		g, ok := git(dep.Namespace, dep.Name)
		if i >= 0 && found[i].State == scm.Closed && holdsGit(live, liveV, mk, g, ok) {
			return a.finish(ctx, dep, mk, live, res, "the live values are Git's")
		}
		// Merged, and GitOps synced a value Git raised since above the
		// tool's: the live values are Git's, nothing to keep alive.
		if i >= 0 && found[i].State == scm.Merged && ok && behind(g, mk) == "" &&
			live == g.Fraction && (mk.VLLM == nil || liveV == g.VLLM[mk.VLLM.Container]) {
			if a.o.DryRun {
				return set(WouldRelease, "pull request %s merged and the live values are Git's, at least the tool's: would remove the marker and release the fields", mk.PullRequest)
			}
			to, err := a.release(ctx, dep, mk, live, liveArgs(dep, mk))
			if err != nil {
				return set(Failed, "%v", err)
			}
			return set(Released, "pull request %s merged and the live values are Git's, at least the tool's: marker removed, fields released to %s", mk.PullRequest, to)
		}
		return set(Left, "%s", changed)
	}
	if i < 0 {
		return set(Left, "pull request %s (#%d, branch %s) is not found: the live change is left", mk.PullRequest, mk.Number, mk.Branch)
	}
	switch found[i].State {
	case scm.Open:
		return set(Pending, "pull request %s is open", mk.PullRequest)
	case scm.Merged:
		g, ok := git(dep.Namespace, dep.Name)
		if !ok {
			return set(Left, "pull request %s merged, but the base branch no longer holds the workload: the live change is left", mk.PullRequest)
		}
		// Merged: Git is the truth again, whatever it holds. When it holds
		// less than the live values (the pull request was lowered before
		// it merged), the fields go back all the same, at the live values:
		// the GitOps controller then applies Git's, as for any other
		// change merged through Git; the tool itself never lowers them.
		why := "Git holds the live values"
		if short := behind(g, mk); short != "" {
			why = "Git holds " + short + "; the GitOps controller applies Git's values once the fields are released"
		}
		if a.o.DryRun {
			return set(WouldRelease, "pull request %s merged and %s: would remove the marker and release the fields", mk.PullRequest, why)
		}
		to, err := a.release(ctx, dep, mk, mk.Fraction.New, liveArgs(dep, mk))
		if err != nil {
			return set(Failed, "%v", err)
		}
		return set(Released, "pull request %s merged and %s: marker removed, fields released to %s", mk.PullRequest, why, to)
	}
	// Closed unmerged: a person declined the change.
	if !a.o.RevertClosed {
		return set(Left, "pull request %s was closed unmerged; the live change (gpu-fraction %s → %s) is left (`--live-revert-closed` reverts it)",
			mk.PullRequest, mk.Fraction.Old, mk.Fraction.New)
	}
	// The revert goes to Git's values now, not the marker's old ones:
	// another pull request may have raised them since, and a revert never
	// goes below Git.
	g, ok := git(dep.Namespace, dep.Name)
	if !ok {
		return set(Left, "pull request %s was closed unmerged, but the base branch no longer holds the workload: the live change is left", mk.PullRequest)
	}
	if behind(g, mk) == "" {
		return a.finish(ctx, dep, mk, live, res, "Git now holds at least the live values")
	}
	if _, err := kai.ParseFraction(g.Fraction); err != nil {
		return set(Left, "pull request %s was closed unmerged, but Git's gpu-fraction %q is not one to revert to: %v", mk.PullRequest, g.Fraction, err)
	}
	res.Fields = append(res.Fields, fmt.Sprintf("gpu-fraction %s → %s", mk.Fraction.New, g.Fraction))
	var args []string
	if mk.VLLM != nil {
		gv := g.VLLM[mk.VLLM.Container]
		if _, err := strconv.ParseFloat(gv, 64); err != nil {
			return set(Left, "pull request %s was closed unmerged, but Git's --gpu-memory-utilization in container %s is %q, not a value to revert to", mk.PullRequest, mk.VLLM.Container, gv)
		}
		args, _ = withFlag(containerArgs(dep, mk.VLLM.Container), gv)
		res.Fields = append(res.Fields, fmt.Sprintf("container %s --gpu-memory-utilization %s → %s", mk.VLLM.Container, mk.VLLM.New, gv))
	}
	if a.o.DryRun {
		return set(WouldRevert, "pull request %s was closed unmerged: would revert to Git's values", mk.PullRequest)
	}
	// Our own manager sets Git's values first (no force: a field someone
	// else took since is theirs), then lets go of them.
	patch, err := applyPatch(dep, g.Fraction, mk.VLLM, args, &mk)
	reverted := dep
	if err == nil {
		reverted, err = a.c.kube.AppsV1().Deployments(dep.Namespace).Patch(ctx, dep.Name, types.ApplyPatchType, patch,
			metav1.PatchOptions{FieldManager: FieldManager})
	}
	if err != nil {
		if owners := conflicts(err); owners != "" {
			return set(Conflict, "revert after pull request %s was closed: %s", mk.PullRequest, owners)
		}
		return set(Failed, "%v", apiError("patch", "deployments", dep.Namespace, err))
	}
	if _, err := a.release(ctx, reverted, mk, g.Fraction, args); err != nil {
		return set(Failed, "%v", err)
	}
	return set(Reverted, "pull request %s was closed unmerged: reverted to Git's values, marker removed", mk.PullRequest)
}

// holdsGit reports whether the live values are Git's: the marker's old
// ones, or the base branch's now (ok), which a revert sets.
func holdsGit(live, liveV string, mk Marker, g GitValues, ok bool) bool {
	if live == mk.Fraction.Old && (mk.VLLM == nil || liveV == mk.VLLM.Old) {
		return true
	}
	return ok && live == g.Fraction && (mk.VLLM == nil || liveV == g.VLLM[mk.VLLM.Container])
}

// finish releases the live values as they are, the marker's pull
// request being closed: why says what makes them safe to let go of.
func (a *Applier) finish(ctx context.Context, dep *appsv1.Deployment, mk Marker, fraction string, res Result, why string) Result {
	if a.o.DryRun {
		res.Outcome, res.Detail = WouldRelease, fmt.Sprintf("pull request %s was closed unmerged and %s: would remove the marker and release the fields", mk.PullRequest, why)
		return res
	}
	to, err := a.release(ctx, dep, mk, fraction, liveArgs(dep, mk))
	if err != nil {
		res.Outcome, res.Detail = Failed, err.Error()
		return res
	}
	res.Outcome, res.Detail = Released, fmt.Sprintf("pull request %s was closed unmerged and %s: marker removed, fields released to %s", mk.PullRequest, why, to)
	return res
}

// behind says how Git falls short of the live values, "" when it holds
// at least them.
func behind(g GitValues, mk Marker) string {
	gf, err := kai.ParseFraction(g.Fraction)
	lf, _ := kai.ParseFraction(mk.Fraction.New)
	if err != nil || kai.Above(lf, gf) {
		return fmt.Sprintf("gpu-fraction %q below the live %s", g.Fraction, mk.Fraction.New)
	}
	if mk.VLLM != nil {
		gv := g.VLLM[mk.VLLM.Container]
		gn, gerr := strconv.ParseFloat(gv, 64)
		ln, _ := strconv.ParseFloat(mk.VLLM.New, 64)
		if gerr != nil || kai.Above(ln, gn) {
			return fmt.Sprintf("--gpu-memory-utilization %q in container %s, below the live %s", gv, mk.VLLM.Container, mk.VLLM.New)
		}
	}
	return ""
}

func liveArgs(dep *appsv1.Deployment, mk Marker) []string {
	if mk.VLLM == nil {
		return nil
	}
	return containerArgs(dep, mk.VLLM.Container)
}

// release lets go of a live change. The fields go back first to the
// managers that applied them before it (the marker's Owners: the GitOps
// controller), as if it had applied these values itself, else to
// HandoffManager; then FieldManager applies nothing, which gives up its
// fields and deletes the one only it held, the marker. Without that
// first step, giving up a field nobody else holds would delete it — the
// GPU request itself. It returns whom the fields went to.
func (a *Applier) release(ctx context.Context, dep *appsv1.Deployment, mk Marker, fraction string, args []string) (string, error) {
	to := releaseTo(dep, mk)
	container := ""
	if mk.VLLM != nil {
		container = mk.VLLM.Container
	}
	for i, manager := range to {
		if i > 0 {
			// Each hand-back changes the object: the next one reads it
			// again, for its resourceVersion.
			var err error
			if dep, err = a.c.kube.AppsV1().Deployments(dep.Namespace).Get(ctx, dep.Name, metav1.GetOptions{}); err != nil {
				return "", apiError("get", "deployments", dep.Namespace, err)
			}
		}
		if manager != HandoffManager {
			if err := a.handBack(ctx, dep, manager, fraction, container, args); err != nil {
				return "", err
			}
			continue
		}
		patch, err := applyPatch(dep, fraction, mk.VLLM, args, nil)
		if err != nil {
			return "", err
		}
		if _, err := a.c.kube.AppsV1().Deployments(dep.Namespace).Patch(ctx, dep.Name, types.ApplyPatchType, patch,
			metav1.PatchOptions{FieldManager: HandoffManager}); err != nil {
			return "", apiError("patch", "deployments", dep.Namespace, err)
		}
	}
	empty, err := applyPatch(dep, "", nil, nil, nil)
	if err != nil {
		return "", err
	}
	if _, err := a.c.kube.AppsV1().Deployments(dep.Namespace).Patch(ctx, dep.Name, types.ApplyPatchType, empty,
		metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return "", apiError("patch", "deployments", dep.Namespace, err)
	}
	return strings.Join(to, ", "), nil
}
