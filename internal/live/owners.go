package live

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// priorOwners are the managers that applied (server-side apply, not an
// update) the fields a live change is about to take: the gpu-fraction
// annotation, and the vLLM container's args when vllm is set. These are
// the GitOps controller that applies the Deployment from Git
// (kustomize-controller, argocd-controller); the release gives the fields
// back to them, so that they own them again exactly as before the live
// change — and prune them when Git drops them.
func priorOwners(dep *object, vllm *VLLMValues) []string {
	var paths [][]string
	for _, t := range dep.templates {
		paths = append(paths, fieldsPath(t.meta, "annotations", kai.FractionAnnotation))
	}
	if t := holdingOf(dep, vllm); t != nil {
		if t.servingArgs(vllm.Container) {
			paths = append(paths, fieldsPath(t.pod, t.serving, "args"))
		} else {
			key, _ := json.Marshal(map[string]string{"name": vllm.Container})
			paths = append(paths, append(fieldsPath(t.pod, "containers"), "k:"+string(key), "f:args"))
		}
	}
	var out []string
	for _, mf := range dep.meta.ManagedFields {
		if mf.Operation != metav1.ManagedFieldsOperationApply || mf.Subresource != "" || mf.FieldsV1 == nil ||
			mf.Manager == FieldManager || mf.Manager == HandoffManager || slices.Contains(out, mf.Manager) {
			continue
		}
		var fields map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if slices.ContainsFunc(paths, func(p []string) bool { return hasField(fields, p) }) {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return out
}

// fieldsPath is the path of a field in a managedFields entry's fieldsV1.
func fieldsPath(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case []string:
			for _, q := range p {
				out = append(out, "f:"+q)
			}
		case string:
			out = append(out, "f:"+p)
		}
	}
	return out
}

// holdingOf is the pod template of dep that holds vllm's container, nil
// when vllm is nil or no template does.
func holdingOf(dep *object, vllm *VLLMValues) *podTemplate {
	if vllm == nil {
		return nil
	}
	return dep.holding(vllm.Container)
}

// hasField reports whether a managedFields entry's fieldsV1 holds path.
func hasField(fields map[string]any, path []string) bool {
	node := fields
	for _, p := range path {
		next, ok := node[p].(map[string]any)
		if !ok {
			return false
		}
		node = next
	}
	return true
}

// appliesNow reports whether manager still has an apply entry on dep: a
// manager that gave up everything since is not one to hand fields to.
func appliesNow(dep *object, manager string) bool {
	return slices.ContainsFunc(dep.meta.ManagedFields, func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == ""
	})
}

// handBack applies, as manager, everything manager owns on dep now plus
// the released fields at the values they hold: the manager then owns
// them again, as if it had applied them itself, and nothing else changes
// (equal values: no conflict, no roll). dep's resourceVersion is sent, so
// that a change made since dep was read fails the apply rather than being
// undone by stale values.
func (a *Applier) handBack(ctx context.Context, obj *object, manager, fraction, container string, args []string) error {
	if obj.dep == nil {
		return a.handBackUnstructured(ctx, obj, manager, fraction, container, args)
	}
	dep := obj.dep
	ac, err := appsv1ac.ExtractDeployment(dep, manager)
	if err != nil {
		return fmt.Errorf("reading what %s applied to deployment %s/%s: %w", manager, dep.Namespace, dep.Name, err)
	}
	ac.WithResourceVersion(dep.ResourceVersion)
	if ac.Spec == nil {
		ac.WithSpec(appsv1ac.DeploymentSpec())
	}
	if ac.Spec.Template == nil {
		ac.Spec.WithTemplate(corev1ac.PodTemplateSpec())
	}
	ac.Spec.Template.WithAnnotations(map[string]string{kai.FractionAnnotation: fraction})
	if args != nil {
		if ac.Spec.Template.Spec == nil {
			ac.Spec.Template.WithSpec(corev1ac.PodSpec())
		}
		i := slices.IndexFunc(ac.Spec.Template.Spec.Containers, func(c corev1ac.ContainerApplyConfiguration) bool {
			return c.Name != nil && *c.Name == container
		})
		if i < 0 {
			ac.Spec.Template.Spec.WithContainers(corev1ac.Container().WithName(container))
			i = len(ac.Spec.Template.Spec.Containers) - 1
		}
		// Args is atomic: the whole list, as it stands.
		ac.Spec.Template.Spec.Containers[i].Args = slices.Clone(args)
	}
	if _, err := a.c.kube.AppsV1().Deployments(dep.Namespace).Apply(ctx, ac, metav1.ApplyOptions{FieldManager: manager}); err != nil {
		return apiError("patch", "deployments", dep.Namespace, fmt.Errorf("handing the fields back to %s: %w", manager, err))
	}
	return nil
}

// releaseTo names who keeps the fields a release gives up: the marker's
// prior owners that still apply to the Deployment, else HandoffManager.
func releaseTo(dep *object, mk Marker) []string {
	var to []string
	for _, o := range mk.Owners {
		if appliesNow(dep, o) {
			to = append(to, o)
		}
	}
	if len(to) == 0 {
		return []string{HandoffManager}
	}
	return to
}
