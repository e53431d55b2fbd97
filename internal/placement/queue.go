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
	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// ReadQueues gets the KAI Queue of every queue the pods name, and of
// each one's parents, once each, as KAI's scheduler bounds them
// (cluster.Queue.Capacity): KAI checks a job against its queue and every
// parent, what each holds with its children's pods (kai.Queues.Over). A
// queue the reader may not get, or that does not exist, is noted and
// left out, so that nothing it would bound is checked.
func ReadQueues(ctx context.Context, dyn dynamic.Interface, pods []consolidate.Pod) (kai.Queues, []string, error) {
	var names []string
	for _, p := range pods {
		if p.Queue != "" {
			names = append(names, p.Queue)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := kai.Queues{}
	var notes []string
	tried := map[string]bool{}
	for len(names) > 0 {
		name := names[0]
		names = names[1:]
		if tried[name] {
			continue
		}
		tried[name] = true
		q, err := cluster.ReadQueue(ctx, dyn, name)
		var fe *cluster.FieldError
		switch {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			notes = append(notes, fmt.Sprintf("KAI queue %s could not be read (%v): its quota and limit are not checked", name, err))
			continue
		case errors.As(err, &fe):
			notes = append(notes, fmt.Sprintf("KAI queue %s: %v: its quota and limit are not checked", name, err))
			continue
		case err != nil:
			return out, notes, fmt.Errorf("get queue %s: %w", name, err)
		}
		out[name] = q.Capacity()
		if q.Parent != "" {
			names = append(names, q.Parent)
		}
	}
	return out, notes, nil
}
