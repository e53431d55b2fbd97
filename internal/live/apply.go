package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// Target is one urgent upsize, as Git and the decision see it.
type Target struct {
	Namespace, Name string
	// Kind is one of kindOf's: nothing else is changed live, and never a
	// bare pod.
	Kind string
	// Fraction is the gpu-fraction in Git (Old) and recommended (New).
	Fraction Values
	// VLLM is set when the Git edit changes --gpu-memory-utilization.
	VLLM *VLLMValues
	// Ceiling and MaxPercent are the rules' bounds, checked again here:
	// New ≤ Ceiling and New ≤ Old × MaxPercent/100 (on the 0.01 grid);
	// 0 is the policy's default (1 GPU, 200%), not no bound.
	Ceiling    float64
	MaxPercent int
	Reason     string
	// PullRequest, Number and Branch are the pull request that carries
	// the change into Git; a live change is never made without one.
	PullRequest string
	Number      int
	Branch      string
}

func (t Target) String() string { return t.Namespace + "/" + t.Name }

// Options bound what live changes may do.
type Options struct {
	// Namespaces are the only namespaces changed live.
	Namespaces []string
	// MaxChanges caps the live changes of one run; 0 means none.
	MaxChanges int
	// Force takes a field another manager owns (server-side apply's
	// force): without it, such a conflict is reported and nothing changes.
	Force bool
	// RevertClosed reverts a live change whose pull request was closed
	// unmerged to Git's value; without it, the change is left and reported.
	RevertClosed bool
	DryRun       bool
	Now          func() time.Time
}

// Outcome is what happened to one live change.
type Outcome string

const (
	Applied    Outcome = "applied"
	WouldApply Outcome = "would apply"
	// Conflict: another field manager owns a field; nothing changed.
	Conflict Outcome = "conflict"
	// Left: the live object is not what the tool expected (someone
	// changed it, or it already holds as much); nothing changed.
	Left Outcome = "left"
	// Refused: a safety rule forbids the change.
	Refused Outcome = "refused"
	Capped  Outcome = "capped"
	Failed  Outcome = "failed"
	// Pending: the change's pull request is still open.
	Pending      Outcome = "pending"
	Released     Outcome = "released"
	WouldRelease Outcome = "would release"
	Reverted     Outcome = "reverted"
	WouldRevert  Outcome = "would revert"
)

// Result is one Deployment's outcome.
type Result struct {
	Namespace, Name string
	Outcome         Outcome
	// Fields says what changed (or would): "gpu-fraction 0.30 → 0.45".
	Fields []string
	Detail string
	// Warnings are for the decision and the pull request, e.g. a queue
	// over quota.
	Warnings []string
	// Generation is the object's metadata.generation after a change: it
	// moves when the pod template changed, i.e. the workload rolls.
	Generation int64
}

// Applier makes one run's live changes.
type Applier struct {
	c       *Client
	o       Options
	applied int
	// bad is why o cannot be used; every call then returns it.
	bad error
}

// NewApplier makes live changes through c within o. Options whose
// namespaces are not valid make every Apply and Reconcile return the
// error CheckNamespaces gives.
func NewApplier(c *Client, o Options) *Applier {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Applier{c: c, o: o, bad: CheckNamespaces(o.Namespaces)}
}

// CheckNamespaces rejects an empty or repeated namespace name: client-go
// reads "" as every namespace, which would take live changes far beyond
// the ones allowed.
func CheckNamespaces(namespaces []string) error {
	if len(namespaces) == 0 {
		return errors.New("live: no namespace allowed")
	}
	seen := map[string]bool{}
	for i, ns := range namespaces {
		switch {
		case strings.TrimSpace(ns) == "":
			return fmt.Errorf("live: namespace %d is empty: an empty namespace would mean every namespace", i+1)
		case seen[ns]:
			return fmt.Errorf("live: namespace %s is named twice", ns)
		}
		seen[ns] = true
	}
	return nil
}

// Apply applies one upsize to its live workload, if every rule allows.
// Only an error that stops the run (a cancelled ctx) is returned; what
// happened to the workload, failures included, is the result. The rules
// are decided by admit, refuseKind and planObject, which read nothing;
// Apply reads the live object and the queue between them, and writes.
func (a *Applier) Apply(ctx context.Context, t Target) (Result, error) {
	res := Result{Namespace: t.Namespace, Name: t.Name}
	if a.bad != nil {
		return res, a.bad
	}
	set := func(o Outcome, format string, args ...any) (Result, error) {
		res.Outcome, res.Detail = o, fmt.Sprintf(format, args...)
		return res, ctx.Err()
	}
	if why := admit(t, a.o); why != "" {
		return set(Refused, "%s", why)
	}
	k, _ := kindOf(t.Kind)
	dep, err := a.c.get(ctx, k, t.Namespace, t.Name)
	if _, ok := errors.AsType[*notOneService](err); ok {
		return set(Refused, "%v, so the live fast path refuses it; it waits for its pull request", err)
	}
	if err != nil {
		return set(Failed, "%v", err)
	}
	if why := refuseKind(dep); why != "" {
		return set(Refused, "%s", why)
	}
	p := planObject(t, dep)
	res.Fields, res.Warnings = p.fields, p.warnings
	if p.stop != "" {
		return set(p.outcome, "%s", p.stop)
	}
	if refused := a.checkQueue(ctx, t, &res); refused != "" {
		return set(Refused, "not applied live: %s", refused)
	}
	if a.o.MaxChanges <= 0 || a.applied >= a.o.MaxChanges {
		return set(Capped, "at the cap of %d live changes per run", a.o.MaxChanges)
	}
	m := p.marker
	m.At = a.o.Now().UTC()
	if a.o.DryRun {
		a.applied++
		return set(WouldApply, "would apply by server-side apply as %s%s", FieldManager, forced(a.o.Force))
	}
	patch, err := applyPatch(dep, t.Fraction.New, m.VLLM, p.args, &m)
	if err != nil {
		return set(Failed, "%v", err)
	}
	out, err := a.c.patch(ctx, dep, patch, FieldManager, &a.o.Force)
	if err != nil {
		if owners := conflicts(err); owners != "" {
			return set(Conflict, "%s; not forced (`--live-force-conflicts` takes it)", owners)
		}
		return set(Failed, "%v", err)
	}
	a.applied++
	res.Generation = out.meta.Generation
	return set(Applied, "applied by server-side apply as %s%s; generation %d → %d", FieldManager, forced(a.o.Force), dep.meta.Generation, out.meta.Generation)
}

// checkQueue adds the KAI queue's warnings to res, and says why the
// upsize is refused when it would take the queue over its quota.
func (a *Applier) checkQueue(ctx context.Context, t Target, res *Result) string {
	newF, _ := kai.ParseFraction(t.Fraction.New)
	qc, err := a.c.CheckQueue(ctx, t.Kind, t.Namespace, t.Name, newF, a.o.Namespaces)
	if err != nil {
		res.Warnings = append(res.Warnings, err.Error())
	}
	if w := qc.Warning(); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	if qc.Exceeds() {
		return qc.Warning()
	}
	return ""
}

// admit says why t is never applied live, whatever the cluster holds: ""
// when it may be.
func admit(t Target, o Options) string {
	if _, ok := kindOf(t.Kind); !ok {
		return fmt.Sprintf("a %s is never changed live: %s", t.Kind, liveKinds)
	}
	if !slices.Contains(o.Namespaces, t.Namespace) {
		return fmt.Sprintf("namespace %s is not one live changes may touch (%s)", t.Namespace, strings.Join(o.Namespaces, ", "))
	}
	if t.PullRequest == "" && !o.DryRun {
		return "no pull request carries the change into Git, so it is not made live"
	}
	newF, err := kai.ParseFraction(t.Fraction.New)
	if err != nil {
		return fmt.Sprintf("only a gpu-fraction is changed live: %v", err)
	}
	oldF, err := kai.ParseFraction(t.Fraction.Old)
	if err != nil {
		return fmt.Sprintf("only a gpu-fraction is changed live: Git's value: %v", err)
	}
	return t.bounds(oldF, newF)
}

// livePlan is what planLive decides for one admitted upsize.
type livePlan struct {
	// stop, when not "", is why nothing is applied, with its outcome.
	stop    string
	outcome Outcome
	fields  []string
	// warnings are for the decision and the pull request.
	warnings []string
	// args are the vLLM container's whole args to own, nil when not.
	args []string
	// marker is the marker to write, but for its time.
	marker Marker
}

// planLive is planObject of a live Deployment.
func planLive(t Target, dep *appsv1.Deployment) livePlan {
	return planObject(t, deploymentObject(dep))
}

// planObject decides an admitted upsize against the live object: whose
// the live values are (Git's, the tool's own earlier change, or a
// person's), never a downsize, and the vLLM flag's change. It reads
// nothing but dep.
func planObject(t Target, dep *object) livePlan {
	var p livePlan
	stop := func(o Outcome, format string, args ...any) livePlan {
		p.stop, p.outcome = fmt.Sprintf(format, args...), o
		return p
	}
	newF, _ := kai.ParseFraction(t.Fraction.New)
	oldF, _ := kai.ParseFraction(t.Fraction.Old)
	liveText, err := dep.liveFraction()
	if err != nil {
		return stop(Left, "%v", err)
	}
	liveF, err := kai.ParseFraction(liveText)
	if err != nil {
		return stop(Left, "the live %s's gpu-fraction: %v", dep.k.kind, err)
	}
	mk, hasMarker, mkErr := dep.marker()
	if mkErr != nil {
		return stop(Left, "%v: the tool cannot tell whose the live value is", mkErr)
	}
	// The live values are "ours" when an earlier live change made them and
	// nobody changed them since: a further upsize may build on them, and
	// Git's old values stay the marker's.
	ours := hasMarker && mk.Fraction.New == liveText && (mk.VLLM == nil || mk.VLLM.New == liveVLLM(dep, mk.VLLM.Container))
	old := Marker{Fraction: Values{Old: t.Fraction.Old}}
	switch {
	case ours:
		old.Fraction.Old = mk.Fraction.Old
		old.VLLM = mk.VLLM
	case hasMarker:
		// Live values that are not the ones the marker says the tool set
		// were put there by a person since, even when they equal Git's (a
		// manual revert): applying again would undo their decision.
		return stop(Left, "the live gpu-fraction is %s, not the %s of the tool's live change: a person changed it since our live change, so it is left as it is", liveText, mk.Fraction.New)
	case !kai.Same(liveF, oldF):
		return stop(Left, "the live gpu-fraction is %s, Git's %s: someone changed it, so it is left as it is", liveText, t.Fraction.Old)
	}
	if !kai.Above(newF, liveF) {
		return stop(Left, "the live gpu-fraction %s already holds the recommended %s: never downsized", liveText, t.Fraction.New)
	}
	p.fields = append(p.fields, fmt.Sprintf("gpu-fraction %s → %s", liveText, t.Fraction.New))
	vllm, why := p.planVLLM(t, dep, ours, old.VLLM)
	if why != "" {
		return stop(Left, "%s", why)
	}
	p.marker = Marker{Fraction: Values{Old: old.Fraction.Old, New: t.Fraction.New}, VLLM: vllm,
		Reason: t.Reason, PullRequest: t.PullRequest, Number: t.Number, Branch: t.Branch, Owners: priorOwners(dep, vllm)}
	if ours {
		// The fields are the tool's since the first change: its owners
		// are the ones to hand them back to.
		p.marker.Owners = mk.Owners
	}
	return p
}

// planVLLM decides the vLLM flag's live change, when the Git edit changes
// it and the live args hold it: it sets p.args and returns the marker's
// vLLM values, or why the live object is left alone.
func (p *livePlan) planVLLM(t Target, dep *object, ours bool, prev *VLLMValues) (*VLLMValues, string) {
	var vllm *VLLMValues
	if t.VLLM != nil {
		cur := liveVLLM(dep, t.VLLM.Container)
		gitOld := t.VLLM.Old
		if ours && prev != nil {
			gitOld = prev.New
		}
		switch {
		case cur != "" && !dep.holding(t.VLLM.Container).ownsArgs(t.VLLM.Container):
			// Taking the whole list would take every container's fields
			// from the GitOps controller, and conflict with it.
			p.warnings = append(p.warnings, fmt.Sprintf("container %s: its args are in a list server-side apply owns whole (%s.containers): left to the pull request",
				t.VLLM.Container, strings.Join(dep.holding(t.VLLM.Container).pod, ".")))
		case cur == "":
			p.warnings = append(p.warnings, fmt.Sprintf("container %s: --gpu-memory-utilization is not a literal in its args: left to the pull request", t.VLLM.Container))
		case cur != gitOld:
			return nil, fmt.Sprintf("container %s: the live --gpu-memory-utilization is %s, Git's %s: someone changed it, so it is left as it is", t.VLLM.Container, cur, gitOld)
		case lowers(cur, t.VLLM.New):
			// A lower flag gives vLLM less of the GPU: a live change only
			// ever adds, so the drop waits for the pull request, while the
			// fraction may still go up.
			p.warnings = append(p.warnings, fmt.Sprintf("container %s: --gpu-memory-utilization would drop from %s to %s: never lowered live, left to the pull request", t.VLLM.Container, cur, t.VLLM.New))
		case cur != t.VLLM.New:
			p.args, _ = withFlag(containerArgs(dep, t.VLLM.Container), t.VLLM.New)
			first := cur
			if ours && prev != nil {
				first = prev.Old
			}
			vllm = &VLLMValues{Container: t.VLLM.Container, Values: Values{Old: first, New: t.VLLM.New}}
			p.fields = append(p.fields, fmt.Sprintf("container %s --gpu-memory-utilization %s → %s", t.VLLM.Container, cur, t.VLLM.New))
		}
	}
	if vllm == nil && ours && prev != nil {
		// Still ours from before: keep owning it at the value it holds.
		vllm = prev
		p.args = containerArgs(dep, vllm.Container)
	}
	return vllm, ""
}

// lowers reports whether the flag's value next is below cur, or either
// is not a number (then nothing is changed live either).
func lowers(cur, next string) bool {
	c, err := strconv.ParseFloat(cur, 64)
	if err != nil {
		return true
	}
	n, err := strconv.ParseFloat(next, 64)
	return err != nil || kai.Above(c, n)
}

func forced(f bool) string {
	if f {
		return ", forcing conflicts"
	}
	return ""
}

// bounds re-checks the rules the engine already applied: a fraction KAI
// accepts, within the ceiling and the step cap.
// An unset bound is the policy's default, never no bound.
func (t Target) bounds(oldF, newF float64) string {
	ceiling, step := t.Ceiling, t.MaxPercent
	if ceiling <= 0 {
		ceiling = engine.DefaultCeiling
	}
	if step <= 0 {
		step = engine.DefaultMaxPercent
	}
	switch {
	case kai.Above(newF, ceiling):
		return fmt.Sprintf("%s is above the ceiling %s", t.Fraction.New, gpus(ceiling))
	case kai.Above(newF, kai.CeilFraction(oldF*float64(step)/100)):
		return fmt.Sprintf("%s is more than maxPercent %d%% of %s", t.Fraction.New, step, t.Fraction.Old)
	case !kai.Above(newF, oldF):
		return fmt.Sprintf("%s is not above Git's %s: never downsized", t.Fraction.New, t.Fraction.Old)
	}
	return ""
}

// conflicts names the managers of a server-side apply conflict, "" when
// err is not one.
func conflicts(err error) string {
	var st apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &st) || st.Status().Details == nil {
		return ""
	}
	var out []string
	for _, c := range st.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			out = append(out, fmt.Sprintf("%s %s", c.Field, c.Message))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "owned by another field manager: " + strings.Join(out, "; ")
}

// liveVLLM is the flag's value in a container's args, "" when not there.
func liveVLLM(dep *object, container string) string {
	return flagValue(containerArgs(dep, container))
}

func containerArgs(dep *object, container string) []string {
	if t := dep.holding(container); t != nil {
		for _, c := range t.spec.Spec.Containers {
			if c.Name == container {
				return c.Args
			}
		}
	}
	return nil
}

// holding is the pod template whose containers include container, nil
// when none does: the vLLM flag is changed in that template only.
func (o *object) holding(container string) *podTemplate {
	for i := range o.templates {
		if slices.ContainsFunc(o.templates[i].spec.Spec.Containers, func(c corev1.Container) bool { return c.Name == container }) {
			return &o.templates[i]
		}
	}
	return nil
}

// applyPatch is the server-side apply configuration of a live change:
// the object's identity and only the fields the tool owns, the fraction in
// every pod template it sizes and the args in the one that holds the vLLM
// container. A field left out is a field given up, so the marker (nil:
// none) and the args (nil: not owned) are sent exactly when they are to
// stay ours.
func applyPatch(dep *object, fraction string, vllm *VLLMValues, args []string, m *Marker) ([]byte, error) {
	if dep.k.services {
		return servicePatch(dep, fraction, vllm, args, m)
	}
	type container struct {
		Name string   `json:"name"`
		Args []string `json:"args"`
	}
	obj := map[string]any{"apiVersion": dep.k.apiVersion, "kind": dep.k.kind}
	meta := map[string]any{"name": dep.meta.Name, "namespace": dep.meta.Namespace}
	obj["metadata"] = meta
	if m != nil {
		enc, err := m.encode()
		if err != nil {
			return nil, err
		}
		meta["annotations"] = map[string]string{MarkerAnnotation: enc}
	}
	if fraction == "" {
		return json.Marshal(obj)
	}
	var holder *podTemplate
	if vllm != nil && args != nil {
		holder = dep.holding(vllm.Container)
	}
	for _, t := range dep.templates {
		setPath(obj, join(t.meta, "annotations"), map[string]string{kai.FractionAnnotation: fraction})
		switch {
		case holder == nil || !slices.Equal(holder.path, t.path):
		case t.servingArgs(vllm.Container):
			setPath(obj, join(t.pod, t.serving), map[string]any{"args": args})
		default:
			setPath(obj, join(t.pod, "containers"), []container{{Name: vllm.Container, Args: args}})
		}
	}
	return json.Marshal(obj)
}

// setPath sets v at path in obj, making the maps on the way.
func setPath(obj map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = v
}
