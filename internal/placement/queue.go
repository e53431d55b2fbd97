package placement

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/consolidate"
)

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
		q, err := cluster.ReadQueue(ctx, dyn, name)
		var fe *cluster.FieldError
		switch {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			notes = append(notes, fmt.Sprintf("KAI queue %s could not be read (%v): its quota is not checked", name, err))
			continue
		case errors.As(err, &fe):
			notes = append(notes, fmt.Sprintf("KAI queue %s: %v: its quota is not checked", name, err))
			continue
		case err != nil:
			return out, notes, fmt.Errorf("get queue %s: %w", name, err)
		}
		// No quota is read as unlimited, as -1 is.
		out = append(out, consolidate.Queue{Name: name, Quota: q.GPU.Quota.Or(-1)})
	}
	return out, notes, nil
}
