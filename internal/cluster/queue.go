package cluster

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// QueueResource is KAI's Queue (scheduling.run.ai/v2, cluster-scoped):
// a function, so that no caller can change which resource is read.
func QueueResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2", Resource: "queues"}
}

// Queue is a KAI Queue as its spec writes it: what its numbers mean
// (which is unlimited, what a pod is charged) is package kai's to say
// (Capacity).
type Queue struct {
	Name string
	// Parent is spec.parentQueue; "" for a top queue.
	Parent string
	// GPU is spec.resources.gpu.
	GPU Resource
}

// Resource is one resource of a queue's spec.resources, with the fields
// of KAI's QueueResource (pkg/apis/scheduling/v2 in NVIDIA/KAI-Scheduler).
type Resource struct {
	Quota           Amount
	Limit           Amount
	OverQuotaWeight Amount
}

// Amount is one number of a queue's spec. Set is false when the spec
// leaves the field out, which is not the same as 0.
type Amount struct {
	Value float64
	Set   bool
}

// Or is the amount, or def when the spec leaves it out.
func (a Amount) Or(def float64) float64 {
	if !a.Set {
		return def
	}
	return a.Value
}

// FieldError is a queue field that holds no number.
type FieldError struct {
	Queue string
	// Field is the field's path, spec.resources.gpu.quota.
	Field string
	// Type is the Go type the field decoded to.
	Type string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s is %s, %s", e.Field, e.Type, errNotNumber)
}

// Unwrap lets errors.Is tell a malformed field from a failed read.
func (e *FieldError) Unwrap() error { return errNotNumber }

// ReadQueue gets the queue name. A get that fails returns client-go's
// error as it is, so that the caller tells a missing or forbidden queue
// (apierrors.IsNotFound, IsForbidden) from a failure, and says which in
// its own words; a field that holds no number is a *FieldError.
func ReadQueue(ctx context.Context, dyn dynamic.Interface, name string) (Queue, error) {
	obj, err := dyn.Resource(QueueResource()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Queue{}, err
	}
	return queueOf(obj)
}

// ReadQueues lists every queue: the parents a queue's capacity depends on
// and the siblings whose pods its parents hold. A list that fails returns
// client-go's error as it is, as ReadQueue does.
func ReadQueues(ctx context.Context, dyn dynamic.Interface) ([]Queue, error) {
	list, err := dyn.Resource(QueueResource()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]Queue, 0, len(list.Items))
	for i := range list.Items {
		q, err := queueOf(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// Capacity is the queue as KAI's scheduler bounds it: a quota or limit
// the spec leaves out is 0, as the scheduler reads it (package kai).
func (q Queue) Capacity() kai.Queue {
	return kai.Queue{Name: q.Name, Parent: q.Parent, Quota: q.GPU.Quota.Or(kai.Absent), Limit: q.GPU.Limit.Or(kai.Absent)}
}

// Capacities are the queues as KAI's scheduler bounds them, by name.
func Capacities(qs []Queue) kai.Queues {
	out := make(kai.Queues, len(qs))
	for _, q := range qs {
		out[q.Name] = q.Capacity()
	}
	return out
}

// queueOf reads a Queue object.
func queueOf(obj *unstructured.Unstructured) (Queue, error) {
	q := Queue{Name: obj.GetName()}
	if p, ok, _ := unstructured.NestedString(obj.Object, "spec", "parentQueue"); ok {
		q.Parent = p
	}
	for _, f := range []struct {
		name string
		to   *Amount
	}{{"quota", &q.GPU.Quota}, {"limit", &q.GPU.Limit}, {"overQuotaWeight", &q.GPU.OverQuotaWeight}} {
		a, err := amount(obj, "spec", "resources", "gpu", f.name)
		if err != nil {
			return Queue{}, err
		}
		*f.to = a
	}
	return q, nil
}

// amount reads the number at path; a path the object does not have (or
// that runs through something other than a map) is an Amount not set.
func amount(obj *unstructured.Unstructured, path ...string) (Amount, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if err != nil || !found {
		return Amount{}, nil //nolint:nilerr // not there: not set
	}
	switch x := v.(type) {
	case int64:
		return Amount{Value: float64(x), Set: true}, nil
	case float64:
		return Amount{Value: x, Set: true}, nil
	}
	return Amount{}, &FieldError{Queue: obj.GetName(), Field: strings.Join(path, "."), Type: fmt.Sprintf("%T", v)}
}
