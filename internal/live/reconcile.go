package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/scm"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		for _, kind := range []string{"Deployment", "StatefulSet", "Rollout", "LeaderWorkerSet", "InferenceService", "DynamoGraphDeployment"} {
			k, _ := kindOf(kind)
			list, err := a.c.list(ctx, k, ns)
			if err != nil {
				// A kind the cluster does not serve (its CRD not installed)
				// or the tool may not read holds no live change of the
				// tool's, which reads an object before it applies to it.
				// (apiError wraps a refusal as ErrForbidden.)
				if kind != "Deployment" && (apierrors.IsNotFound(err) || errors.Is(err, ErrForbidden)) {
					continue
				}
				out = append(out, Result{Namespace: ns, Outcome: Failed, Detail: err.Error()})
				continue
			}
			res, err := a.reconcileAll(ctx, list, prs, git)
			out = append(out, res...)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// reconcileAll reconciles the marked objects of list.
func (a *Applier) reconcileAll(ctx context.Context, list []*object, prs PullRequests, git func(namespace, name string) (GitValues, bool)) ([]Result, error) {
	var out []Result
	for _, dep := range list {
		// Whatever the server answered, only an allowed namespace's
		// object is touched.
		if !slices.Contains(a.o.Namespaces, dep.meta.Namespace) {
			continue
		}
		if _, ok := dep.meta.Annotations[MarkerAnnotation]; !ok {
			continue
		}
		if dep.k.services && dep.service != "" {
			// An earlier service's release or revert changed the graph:
			// read it again, for the resourceVersion the writes send.
			fresh, err := a.c.reread(ctx, dep)
			if err != nil {
				out = append(out, Result{Namespace: dep.meta.Namespace, Name: dep.workload(), Outcome: Failed, Detail: err.Error()})
				continue
			}
			dep = fresh
		}
		res := a.reconcile(ctx, dep, prs, git)
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// seen is what a reconcile observes of one marked Deployment: all that
// decideReconcile needs.
type seen struct {
	marker    Marker
	markerErr error // the marker does not read
	// live and liveVLLM are the live gpu-fraction and, when the marker
	// holds a vLLM change, the flag in its container.
	live, liveVLLM string
	// pr is the marker's pull request; nil when the forge does not have
	// it, or could not be asked (prErr).
	pr    *scm.PullRequest
	prErr error
	// git are the base branch's values; gitOK false when it no longer
	// holds the workload.
	git          GitValues
	gitOK        bool
	revertClosed bool
}

// stepKind is what a reconcile does.
type stepKind int

const (
	stepNothing stepKind = iota // Left, Pending or Failed: nothing is written
	stepRelease                 // the marker goes, the fields go back
	stepRevert                  // Git's values are set, then released
)

// step is decideReconcile's answer: what to do, the outcome it has, and
// what the detail says.
type step struct {
	kind    stepKind
	outcome Outcome // of stepNothing
	// detail is the whole detail of stepNothing; of a release or revert,
	// why it is made ("pull request … merged and Git holds the live
	// values").
	detail string
	// fraction is the value a release keeps or a revert sets; vllm the
	// flag a revert sets in the marker's container.
	fraction, vllm string
	fields         []string
}

// decideReconcile is the life of a live change after it is made, as a
// function of what is seen: docs/live.md's table, every case of which
// TestDecideReconcile holds. It reads nothing and writes nothing.
func decideReconcile(s seen) step {
	leave := func(format string, args ...any) step {
		return step{outcome: Left, detail: fmt.Sprintf(format, args...)}
	}
	if s.markerErr != nil {
		return leave("%v: left for a person", s.markerErr)
	}
	mk := s.marker
	changed := changedSince(s)
	if s.prErr != nil {
		if changed != "" {
			return leave("%s", changed)
		}
		return step{outcome: Failed, detail: fmt.Sprintf("the state of pull request %s: %v", mk.PullRequest, s.prErr)}
	}
	release := func(why string, fraction string) step {
		return step{kind: stepRelease, detail: fmt.Sprintf("pull request %s %s", mk.PullRequest, why), fraction: fraction}
	}
	if changed != "" {
		switch {
		// A revert that died between setting Git's values and letting go
		// of them leaves the marker on Git's old values: the release is
		// what is left to do, else the marker would stay for ever.
		case s.pr != nil && s.pr.State == scm.Closed && holdsGit(s.live, s.liveVLLM, mk, s.git, s.gitOK):
			return release("was closed unmerged and the live values are Git's", s.live)
		// Merged, and GitOps synced a value Git raised since above the
		// tool's: the live values are Git's, nothing to keep alive.
		case s.pr != nil && s.pr.State == scm.Merged && s.gitOK && behind(s.git, mk) == "" &&
			s.live == s.git.Fraction && (mk.VLLM == nil || s.liveVLLM == s.git.VLLM[mk.VLLM.Container]):
			return release("merged and the live values are Git's, at least the tool's", s.live)
		}
		return leave("%s", changed)
	}
	if s.pr == nil {
		return leave("pull request %s (#%d, branch %s) is not found: the live change is left", mk.PullRequest, mk.Number, mk.Branch)
	}
	switch s.pr.State {
	case scm.Open:
		return step{outcome: Pending, detail: fmt.Sprintf("pull request %s is open", mk.PullRequest)}
	case scm.Merged:
		if !s.gitOK {
			return leave("pull request %s merged, but the base branch no longer holds the workload: the live change is left", mk.PullRequest)
		}
		// Merged: Git is the truth again, whatever it holds. When it holds
		// less than the live values (the pull request was lowered before
		// it merged), the fields go back all the same, at the live values:
		// the GitOps controller then applies Git's, as for any other
		// change merged through Git; the tool itself never lowers them.
		why := "merged and Git holds the live values"
		if short := behind(s.git, mk); short != "" {
			why = "merged and Git holds " + short + "; the GitOps controller applies Git's values once the fields are released"
		}
		return release(why, mk.Fraction.New)
	}
	return decideClosed(s)
}

// changedSince says how the live values differ from the ones the tool
// applied, "" when they are still the tool's.
func changedSince(s seen) string {
	mk := s.marker
	switch {
	case s.live != mk.Fraction.New:
		return fmt.Sprintf("the live gpu-fraction is %s, not the %s the tool applied: someone changed it since; the marker is left for a person", s.live, mk.Fraction.New)
	case mk.VLLM != nil && s.liveVLLM != mk.VLLM.New:
		return fmt.Sprintf("container %s: the live --gpu-memory-utilization is %q, not the %s the tool applied: someone changed it since; the marker is left for a person",
			mk.VLLM.Container, s.liveVLLM, mk.VLLM.New)
	}
	return ""
}

// decideClosed is decideReconcile for a pull request a person closed
// unmerged, the live values still the tool's.
func decideClosed(s seen) step {
	mk := s.marker
	leave := func(format string, args ...any) step {
		return step{outcome: Left, detail: fmt.Sprintf(format, args...)}
	}
	if !s.revertClosed {
		return leave("pull request %s was closed unmerged; the live change (gpu-fraction %s → %s) is left (`--live-revert-closed` reverts it)",
			mk.PullRequest, mk.Fraction.Old, mk.Fraction.New)
	}
	// The revert goes to Git's values now, not the marker's old ones:
	// another pull request may have raised them since, and a revert never
	// goes below Git.
	if !s.gitOK {
		return leave("pull request %s was closed unmerged, but the base branch no longer holds the workload: the live change is left", mk.PullRequest)
	}
	if behind(s.git, mk) == "" {
		return step{kind: stepRelease, detail: fmt.Sprintf("pull request %s was closed unmerged and Git now holds at least the live values", mk.PullRequest), fraction: s.live}
	}
	if _, err := kai.ParseFraction(s.git.Fraction); err != nil {
		return leave("pull request %s was closed unmerged, but Git's gpu-fraction %q is not one to revert to: %v", mk.PullRequest, s.git.Fraction, err)
	}
	st := step{kind: stepRevert, detail: fmt.Sprintf("pull request %s was closed unmerged", mk.PullRequest), fraction: s.git.Fraction,
		fields: []string{fmt.Sprintf("gpu-fraction %s → %s", mk.Fraction.New, s.git.Fraction)}}
	if mk.VLLM != nil {
		gv := s.git.VLLM[mk.VLLM.Container]
		if _, err := strconv.ParseFloat(gv, 64); err != nil {
			return leave("pull request %s was closed unmerged, but Git's --gpu-memory-utilization in container %s is %q, not a value to revert to", mk.PullRequest, mk.VLLM.Container, gv)
		}
		st.vllm = gv
		st.fields = append(st.fields, fmt.Sprintf("container %s --gpu-memory-utilization %s → %s", mk.VLLM.Container, mk.VLLM.New, gv))
	}
	return st
}

// reconcile observes one marked Deployment, decides, and does what the
// step says, in dry run only saying it.
func (a *Applier) reconcile(ctx context.Context, dep *object, prs PullRequests, git func(string, string) (GitValues, bool)) Result {
	s := a.observe(ctx, dep, prs, git)
	st := decideReconcile(s)
	res := Result{Namespace: dep.meta.Namespace, Name: dep.workload(), Fields: st.fields}
	set := func(o Outcome, format string, args ...any) Result {
		res.Outcome, res.Detail = o, fmt.Sprintf(format, args...)
		return res
	}
	mk := s.marker
	switch st.kind {
	case stepNothing:
		return set(st.outcome, "%s", st.detail)
	case stepRelease:
		if a.o.DryRun {
			return set(WouldRelease, "%s: would remove the marker and release the fields", st.detail)
		}
		var args []string
		if mk.VLLM != nil {
			args = containerArgs(dep, mk.VLLM.Container)
		}
		to, err := a.release(ctx, dep, mk, st.fraction, args)
		if err != nil {
			return set(Failed, "%v", err)
		}
		return set(Released, "%s: marker removed, fields released to %s", st.detail, to)
	}
	if a.o.DryRun {
		return set(WouldRevert, "%s: would revert to Git's values", st.detail)
	}
	var args []string
	if mk.VLLM != nil {
		args, _ = withFlag(containerArgs(dep, mk.VLLM.Container), st.vllm)
	}
	// Our own manager sets Git's values first (no force: a field someone
	// else took since is theirs), then lets go of them.
	patch, err := applyPatch(dep, st.fraction, mk.VLLM, args, &mk)
	reverted := dep
	if err == nil {
		reverted, err = a.c.patch(ctx, dep, patch, FieldManager, nil)
	}
	if err != nil {
		if owners := conflicts(err); owners != "" {
			return set(Conflict, "revert after pull request %s was closed: %s", mk.PullRequest, owners)
		}
		return set(Failed, "%v", err)
	}
	if _, err := a.release(ctx, reverted, mk, st.fraction, args); err != nil {
		return set(Failed, "%v", err)
	}
	return set(Reverted, "%s: reverted to Git's values, marker removed", st.detail)
}

// observe reads what decideReconcile needs: the marker, the live values,
// the pull request's state and Git's values.
func (a *Applier) observe(ctx context.Context, dep *object, prs PullRequests, git func(string, string) (GitValues, bool)) seen {
	s := seen{revertClosed: a.o.RevertClosed}
	var err error
	// Pod templates that ask for different fractions are not the tool's
	// change, which sets them alike: no marker's value, so the change
	// reads as someone's since.
	if s.live, err = dep.liveFraction(); err != nil {
		s.live = "mixed"
	}
	s.marker, _, s.markerErr = dep.marker()
	if s.markerErr == nil && dep.k.services && len(dep.templates) == 0 {
		s.markerErr = fmt.Errorf("service %s is no longer in the graph, but the marker has an entry for it", dep.service)
	}
	if s.markerErr != nil {
		return s
	}
	if s.marker.VLLM != nil {
		s.liveVLLM = liveVLLM(dep, s.marker.VLLM.Container)
	}
	found, err := prs.Find(ctx, s.marker.Branch)
	if err != nil {
		s.prErr = err
		return s
	}
	if i := slices.IndexFunc(found, func(pr scm.PullRequest) bool { return pr.Number == s.marker.Number }); i >= 0 {
		s.pr = &found[i]
	}
	s.git, s.gitOK = git(dep.meta.Namespace, dep.workload())
	return s
}

// holdsGit reports whether the live values are Git's: the marker's old
// ones, or the base branch's now (ok), which a revert sets.
func holdsGit(live, liveV string, mk Marker, g GitValues, ok bool) bool {
	if live == mk.Fraction.Old && (mk.VLLM == nil || liveV == mk.VLLM.Old) {
		return true
	}
	return ok && live == g.Fraction && (mk.VLLM == nil || liveV == g.VLLM[mk.VLLM.Container])
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

// release lets go of a live change. The fields go back first to the
// managers that applied them before it (the marker's Owners: the GitOps
// controller), as if it had applied these values itself, else to
// HandoffManager; then FieldManager applies nothing, which gives up its
// fields and deletes the one only it held, the marker. Without that
// first step, giving up a field nobody else holds would delete it — the
// GPU request itself. It returns whom the fields went to.
func (a *Applier) release(ctx context.Context, dep *object, mk Marker, fraction string, args []string) (string, error) {
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
			if dep, err = a.c.reread(ctx, dep); err != nil {
				return "", err
			}
		}
		// A graph's services share the handoff manager: it gets what it
		// holds of the others back with this one's, as any manager does.
		if manager != HandoffManager || dep.k.services {
			if err := a.handBack(ctx, dep, manager, fraction, container, args); err != nil {
				return "", err
			}
			continue
		}
		patch, err := applyPatch(dep, fraction, mk.VLLM, args, nil)
		if err != nil {
			return "", err
		}
		if _, err := a.c.patch(ctx, dep, patch, HandoffManager, nil); err != nil {
			return "", err
		}
	}
	if dep.k.services {
		// The tool's own apply to a graph sends its resourceVersion.
		var err error
		if dep, err = a.c.reread(ctx, dep); err != nil {
			return "", err
		}
	}
	empty, err := applyPatch(dep, "", nil, nil, nil)
	if err != nil {
		return "", err
	}
	if _, err := a.c.patch(ctx, dep, empty, FieldManager, nil); err != nil {
		return "", err
	}
	return strings.Join(to, ", "), nil
}
