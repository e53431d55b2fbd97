package workload

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// WorkloadRef is an Argo Rollout's spec.workloadRef (argoproj.io/v1alpha1
// ObjectRef, Argo Rollouts v1.9.1): the object whose pod template the
// Rollout runs instead of a spec.template of its own. Argo takes a
// Deployment, a ReplicaSet or a PodTemplate there; the editor follows a
// Deployment of the same namespace that the repository holds.
type WorkloadRef struct {
	APIVersion, Kind, Name string
	// ScaleDown is what Argo does to a referenced Deployment's own pods:
	// never (the default), onsuccess or progressively.
	ScaleDown string
}

// readWorkloadRef reads root's spec.workloadRef, nil when it has none.
func readWorkloadRef(root *yaml.Node) *WorkloadRef {
	n := splice.Lookup(root, "spec", "workloadRef")
	if n == nil {
		return nil
	}
	return &WorkloadRef{APIVersion: splice.Str(n, "apiVersion"), Kind: splice.Str(n, "kind"), Name: splice.Str(n, "name"),
		ScaleDown: splice.Str(n, "scaleDown")}
}

// deployment reports whether r names an apps Deployment, the only kind
// whose template is followed.
func (r WorkloadRef) deployment() bool {
	g, _, _ := strings.Cut(r.APIVersion, "/")
	return r.Kind == "Deployment" && (g == "apps" || g == "extensions") && r.Name != ""
}

func (r WorkloadRef) String() string {
	return fmt.Sprintf("%s %s (%s)", r.Kind, r.Name, r.APIVersion)
}

// FollowRefs makes each Rollout of us whose spec.workloadRef names a
// Deployment of ws (same name, same metadata.namespace, absent on both
// counting as the same) a workload of its own: the Rollout, read from
// that Deployment's pod template, its edits going into the Deployment's
// document (Workload.Template). Argo's controller runs the Rollout's pods
// from that template, in ReplicaSets the Rollout owns, and scales the
// Deployment's own pods down as scaleDown says, or never; so the
// Deployment is not a workload of its own any more: sizing it on its own
// usage would size the same template twice. Every other Rollout with a
// spec.workloadRef stays unsupported, its Why saying what is missing.
// The order of each slice is kept; neither is changed in place.
func FollowRefs(ws []Workload, us []Unsupported) ([]Workload, []Unsupported) {
	if !slices.ContainsFunc(us, func(u Unsupported) bool { return u.WorkloadRef != nil }) {
		// The common case: nothing to follow, nothing to copy.
		return ws, us
	}
	us = slices.Clone(us)
	deployments := map[string][]int{}
	for i, w := range ws {
		if w.Ref.Kind == "Deployment" {
			deployments[w.Ref.Name] = append(deployments[w.Ref.Name], i)
		}
	}
	// Rollouts by the Deployment they would run: two of them make one
	// template serve both, and neither is sized.
	users := map[int][]usage.Ref{}
	target := make([]int, len(us))
	for j, u := range us {
		target[j] = -1
		if u.WorkloadRef == nil {
			continue
		}
		i, why := referenced(ws, deployments, u)
		if why != "" {
			us[j].Why = why
			continue
		}
		target[j] = i
		users[i] = append(users[i], u.Ref)
	}
	var outU []Unsupported
	follows := map[int]Workload{}
	for j, u := range us {
		i := target[j]
		switch {
		case i < 0:
			outU = append(outU, u)
		case len(users[i]) > 1:
			u.Why = fmt.Sprintf("spec.workloadRef names %s, whose pod template %s too (%s): sizing it for one would size it for all",
				ws[i].Ref, rolloutList(users[i], u.Ref), ws[i].Where())
			outU = append(outU, u)
		default:
			follows[i] = asRollout(u, ws[i])
		}
	}
	outW := make([]Workload, 0, len(ws))
	for i, w := range ws {
		if r, ok := follows[i]; ok {
			w = r
		}
		outW = append(outW, w)
	}
	return outW, outU
}

// referenced returns the index in ws of the Deployment u's
// spec.workloadRef names, or why it is not followed.
func referenced(ws []Workload, deployments map[string][]int, u Unsupported) (int, string) {
	r := *u.WorkloadRef
	if !r.deployment() {
		return -1, fmt.Sprintf("spec.workloadRef names %s: only a Deployment's (apps/v1) pod template is followed, so it is not sized", r)
	}
	var same []int
	var elsewhere []string
	for _, i := range deployments[r.Name] {
		if ws[i].Ref.Namespace == u.Ref.Namespace {
			same = append(same, i)
		} else {
			elsewhere = append(elsewhere, namespaceOf(ws[i].Ref))
		}
	}
	switch {
	case len(same) == 1:
		return same[0], ""
	case len(same) > 1:
		where := make([]string, len(same))
		for k, i := range same {
			where[k] = ws[i].Where()
		}
		return -1, fmt.Sprintf("spec.workloadRef names Deployment %s, which the repository defines %d times (%s): which one is deployed is not known",
			r.Name, len(same), strings.Join(where, ", "))
	case len(elsewhere) > 0:
		slices.Sort(elsewhere)
		return -1, fmt.Sprintf("spec.workloadRef names Deployment %s, which the repository has in namespace %s only, not in %s: Argo reads it from the Rollout's namespace",
			r.Name, strings.Join(slices.Compact(elsewhere), ", "), namespaceOf(u.Ref))
	}
	return -1, fmt.Sprintf("spec.workloadRef names Deployment %s, which is not in the repository: its pod template cannot be edited here", r.Name)
}

// namespaceOf names a namespace in a reason, the absent one too.
func namespaceOf(r usage.Ref) string {
	if r.Namespace == "" {
		return "(none given)"
	}
	return r.Namespace
}

// rolloutList says which Rollouts other than self run a template too.
func rolloutList(rs []usage.Ref, self usage.Ref) string {
	var out []string
	for _, r := range rs {
		if r != self {
			out = append(out, r.Name)
		}
	}
	if len(out) == 1 {
		return "Rollout " + out[0] + " runs"
	}
	return "Rollouts " + strings.Join(out, ", ") + " run"
}

// asRollout is Rollout u as a workload whose pods run Deployment d's
// template: the pods' fields and GPU request are d's, the identity and
// the object's own labels the Rollout's. KAI reads the queue label of the
// pods' top owner, the Rollout, before the pods'.
func asRollout(u Unsupported, d Workload) Workload {
	w := d
	w.Ref = u.Ref
	w.Template = d.Ref
	w.Labels = u.Labels
	w.Queue = w.Labels[kai.QueueLabel]
	if w.Queue == "" {
		w.Queue = w.PodLabels[kai.QueueLabel]
	}
	return w
}

// ObjectOp reports whether op edits the workload object itself rather
// than its pods (SetWorkloadLabel): for a Rollout whose template is a
// Deployment's, that object is not the document its edits go to.
func ObjectOp(op Op) bool {
	_, ok := op.(setWorkloadLabel)
	return ok
}
