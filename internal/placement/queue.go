package placement

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
)

// queueResource is KAI's Queue (cluster-scoped).
var queueResource = schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2", Resource: "queues"}

// ReadQueues gets the KAI Queue of every queue the pods name, once each,
// for its GPU quota (spec.resources.gpu.quota; -1 or none is unlimited):
// KAI runs non-preemptible pods, as inference is, only within quota, so a
// rollout's surge pods wait for it. A queue the reader may not get, or
// that does not exist, is noted and left unlimited.
func ReadQueues(ctx context.Context, dyn dynamic.Interface, pods []consolidate.Pod) ([]consolidate.Queue, []string, error) {
	var names []string
	for _, p := range pods {
		if p.Queue != "" {
			names = append(names, p.Queue)
		}
	}
	slices.Sort(names)
	var out []consolidate.Queue
	var notes []string
	for _, name := range slices.Compact(names) {
		obj, err := dyn.Resource(queueResource).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			notes = append(notes, fmt.Sprintf("KAI queue %s could not be read (%v): its quota is not checked", name, err))
			continue
		case err != nil:
			return out, notes, fmt.Errorf("get queue %s: %w", name, err)
		}
		q, err := quota(obj)
		if err != nil {
			notes = append(notes, fmt.Sprintf("KAI queue %s: %v: its quota is not checked", name, err))
			continue
		}
		out = append(out, consolidate.Queue{Name: name, Quota: q})
	}
	return out, notes, nil
}

// quota is spec.resources.gpu.quota in GPUs; -1 when unlimited.
func quota(obj *unstructured.Unstructured) (float64, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", "resources", "gpu", "quota")
	if err != nil || !found {
		return -1, nil //nolint:nilerr // no quota: unlimited
	}
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	}
	return 0, fmt.Errorf("spec.resources.gpu.quota is %T, not a number", v)
}
