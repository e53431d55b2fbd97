package live

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// handBackUnstructured is handBack for a kind without a typed client:
// client-go extracts what a manager applied only for its built-in
// types, and a Rollout or a LeaderWorkerSet is a custom resource, so the
// manager's fields are picked out of the object by its managedFields
// entry, as ExtractInto does with a schema.
func (a *Applier) handBackUnstructured(ctx context.Context, o *object, manager, fraction, container string, args []string) error {
	applied, err := extractApplied(o, manager)
	if err != nil {
		return err
	}
	applied["apiVersion"], applied["kind"] = o.k.apiVersion, o.k.kind
	meta, _ := applied["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["name"], meta["namespace"], meta["resourceVersion"] = o.meta.Name, o.meta.Namespace, o.meta.ResourceVersion
	applied["metadata"] = meta
	for _, t := range o.templates {
		if err := unstructured.SetNestedField(applied, fraction, join(t.meta, "annotations", kai.FractionAnnotation)...); err != nil {
			return fmt.Errorf("handing the fields of %s %s/%s back to %s: %w", o.k.kind, o.meta.Namespace, o.meta.Name, manager, err)
		}
	}
	if t := o.holding(container); t != nil && args != nil {
		if err := setArgs(applied, t, container, args); err != nil {
			return fmt.Errorf("handing the fields of %s %s/%s back to %s: %w", o.k.kind, o.meta.Namespace, o.meta.Name, manager, err)
		}
	}
	_, err = a.c.dyn.Resource(o.k.gvr).Namespace(o.meta.Namespace).Apply(ctx, o.meta.Name, &unstructured.Unstructured{Object: applied},
		metav1.ApplyOptions{FieldManager: manager})
	if err != nil {
		return apiError("patch", o.k.gvr.Resource, o.meta.Namespace, fmt.Errorf("handing the fields back to %s: %w", manager, err))
	}
	return nil
}

// setArgs sets the whole args of container in pod template t of obj,
// adding the container by its name when obj has none: args is atomic, so
// the list as it stands.
func setArgs(obj map[string]any, t *podTemplate, container string, args []string) error {
	items := make([]any, 0, len(args))
	for _, a := range args {
		items = append(items, a)
	}
	if t.servingArgs(container) {
		return unstructured.SetNestedSlice(obj, items, join(t.pod, t.serving, "args")...)
	}
	cpath := join(t.pod, "containers")
	list, _, err := unstructured.NestedSlice(obj, cpath...)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list, func(c any) bool { m, ok := c.(map[string]any); return ok && m["name"] == container })
	if i < 0 {
		list = append(list, map[string]any{"name": container})
		i = len(list) - 1
	}
	list[i].(map[string]any)["args"] = items
	return unstructured.SetNestedSlice(obj, list, cpath...)
}

// extractApplied is what manager applied to o: o's fields that the
// manager's apply entry lists, at their live values.
func extractApplied(o *object, manager string) (map[string]any, error) {
	i := slices.IndexFunc(o.meta.ManagedFields, func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == ""
	})
	if i < 0 || o.meta.ManagedFields[i].FieldsV1 == nil {
		return map[string]any{}, nil
	}
	var fields map[string]any
	if err := json.Unmarshal(o.meta.ManagedFields[i].FieldsV1.GetRawBytes(), &fields); err != nil {
		return nil, fmt.Errorf("reading what %s applied to %s %s/%s: %w", manager, o.k.kind, o.meta.Namespace, o.meta.Name, err)
	}
	out, _ := pick(o.u.DeepCopy().Object, fields).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// pick is the part of v that a fieldsV1 node lists: "f:" a map's field,
// "k:" a list's item by its keys, "v:" a set's value, "i:" an item by
// its index; a node with no children is the whole value (an atomic
// field, args among them).
func pick(v any, node map[string]any) any {
	if len(node) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for key, child := range node {
			name, ok := strings.CutPrefix(key, "f:")
			if fv, present := x[name]; ok && present {
				out[name] = pick(fv, asNode(child))
			}
		}
		return out
	case []any:
		var out []any
		for i, item := range x {
			for key, child := range node {
				if keys, ok := itemMatches(i, item, key); ok {
					out = append(out, withKeys(pick(item, asNode(child)), keys))
					break
				}
			}
		}
		return out
	}
	return v
}

func asNode(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// itemMatches reports whether list item i is the one a fieldsV1 key
// names; keys are a "k:" key's fields, which the item keeps.
func itemMatches(i int, item any, key string) (map[string]any, bool) {
	switch {
	case strings.HasPrefix(key, "k:"):
		var keys map[string]any
		m, ok := item.(map[string]any)
		if !ok || json.Unmarshal([]byte(key[2:]), &keys) != nil {
			return nil, false
		}
		for k, want := range keys {
			if !sameJSON(m[k], want) {
				return nil, false
			}
		}
		return keys, true
	case strings.HasPrefix(key, "v:"):
		var want any
		return nil, json.Unmarshal([]byte(key[2:]), &want) == nil && sameJSON(item, want)
	case strings.HasPrefix(key, "i:"):
		n, err := strconv.Atoi(key[2:])
		return nil, err == nil && n == i
	}
	return nil, false
}

// withKeys keeps a list item's key fields, which identify it in an apply.
func withKeys(item any, keys map[string]any) any {
	m, ok := item.(map[string]any)
	if !ok {
		return item
	}
	for k, v := range keys {
		if _, has := m[k]; !has {
			m[k] = v
		}
	}
	return m
}

// sameJSON compares values as JSON, since a key's number decodes as a
// float and the object's as an integer.
func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}
