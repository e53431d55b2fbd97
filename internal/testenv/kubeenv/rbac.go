package kubeenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// rbacObject is what a Role, ClusterRole or one of their bindings says
// that a grant needs.
type rbacObject struct {
	Rules []struct {
		Verbs         []string `json:"verbs"`
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		ResourceNames []string `json:"resourceNames"`
	} `json:"rules"`
	RoleRef struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"subjects"`
}

// access is one request a subject should now be allowed.
type access struct {
	user, namespace, verb, group, resource string
}

// grants are the requests the bindings of objs allow their users through
// the roles objs define: one per rule, its first verb, group and resource.
func grants(objs []*kubeObject) ([]access, error) {
	roles := map[string]*rbacObject{} // by kind and namespace/name
	var bindings []*kubeObject
	for _, o := range objs {
		switch o.meta.Kind {
		case "Role", "ClusterRole":
			var r rbacObject
			if err := json.Unmarshal(o.json, &r); err != nil {
				return nil, fmt.Errorf("%v: %w", o, err)
			}
			roles[o.meta.Kind+" "+o.meta.Metadata.Namespace+"/"+o.meta.Metadata.Name] = &r
		case "RoleBinding", "ClusterRoleBinding":
			bindings = append(bindings, o)
		}
	}
	var out []access
	for _, b := range bindings {
		var rb rbacObject
		if err := json.Unmarshal(b.json, &rb); err != nil {
			return nil, fmt.Errorf("%v: %w", b, err)
		}
		ns := b.meta.Metadata.Namespace
		if rb.RoleRef.Kind == "ClusterRole" {
			ns = ""
		}
		role := roles[rb.RoleRef.Kind+" "+ns+"/"+rb.RoleRef.Name]
		if role == nil {
			continue // a role applied before: granted before, too
		}
		for _, s := range rb.Subjects {
			if s.Kind != "User" {
				continue
			}
			for _, r := range role.Rules {
				if len(r.Verbs) == 0 || len(r.APIGroups) == 0 || len(r.Resources) == 0 || len(r.ResourceNames) > 0 {
					continue // a non-resource URL's rule, or one object's
				}
				out = append(out, access{user: s.Name, namespace: b.meta.Metadata.Namespace, verb: r.Verbs[0], group: r.APIGroups[0], resource: r.Resources[0]})
			}
		}
	}
	return out, nil
}

// waitGranted waits until the server's authorizer allows each of a: the
// RBAC authorizer reads roles and bindings through an informer, so a
// request made right after they are created can still be refused.
func (s *APIServer) waitGranted(ctx context.Context, a []access) error {
	deadline := time.Now().Add(settle)
	for _, g := range a {
		review, err := json.Marshal(map[string]any{
			"apiVersion": "authorization.k8s.io/v1",
			"kind":       "SubjectAccessReview",
			"spec": map[string]any{
				"user": g.user,
				"resourceAttributes": map[string]string{
					"namespace": g.namespace, "verb": g.verb, "group": g.group, "resource": g.resource,
				},
			},
		})
		if err != nil {
			return err
		}
		for {
			status, body, err := s.do(ctx, Admin, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", review, "application/json")
			if err != nil {
				return err
			}
			var answer struct {
				Status struct {
					Allowed bool `json:"allowed"`
				} `json:"status"`
			}
			if status == http.StatusCreated || status == http.StatusOK {
				if err := json.Unmarshal(body, &answer); err != nil {
					return fmt.Errorf("decoding a SubjectAccessReview: %w", err)
				}
			}
			if answer.Status.Allowed {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s may still not %s %s (group %q) in %q after %s: %d %s", g.user, g.verb, g.resource, g.group, g.namespace, settle, status, statusMessage(body))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}
