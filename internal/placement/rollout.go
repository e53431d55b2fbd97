package placement

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// readRollouts gets the Deployment or StatefulSet of each GPU pod's
// workload, once each, for the rollout its upsize would take: maxSurge
// and maxUnavailable scaled to the replicas as the Deployment controller
// scales them (and kube-state-metrics reports them), Recreate as every
// pod down at once, a StatefulSet one pod at a time. A workload the
// reader may not get, or that is gone, is noted and left unchecked.
// queues holds each workload's own kai.scheduler/queue label, which KAI
// reads before its pods' (KAI v0.17.0, podgrouper default_grouper.go
// CalcPodGroupQueue: the top owner's label, then the pod's).
func readRollouts(ctx context.Context, kube kubernetes.Interface, pods []consolidate.Pod) (rollouts []consolidate.Rollout, queues map[usage.Ref]string, notes []string, err error) {
	out := []consolidate.Rollout{}
	queues = map[usage.Ref]string{}
	seen := map[usage.Ref]bool{}
	for _, p := range pods {
		w := p.Workload
		if seen[w] || (w.Kind != "Deployment" && w.Kind != "StatefulSet") {
			continue
		}
		seen[w] = true
		ro, queue, bad, err := rolloutOf(ctx, kube, w)
		if queue != "" {
			queues[w] = queue
		}
		switch {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			notes = append(notes, fmt.Sprintf("%s %s/%s could not be read (%v): the room its rollout needs is not checked", w.Kind, w.Namespace, w.Name, err))
		case err != nil:
			return out, queues, notes, err
		case bad != "":
			notes = append(notes, bad)
		default:
			out = append(out, ro)
		}
	}
	sortRollouts(out)
	return out, queues, notes, nil
}

// rolloutOf reads one workload's rollout and its own queue label; bad
// says why its spec could not be read as one (the API server validates
// it, so only a server that does not could send one).
func rolloutOf(ctx context.Context, kube kubernetes.Interface, w usage.Ref) (ro consolidate.Rollout, queue, bad string, err error) {
	if w.Kind == "StatefulSet" {
		sts, err := kube.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err != nil {
			return ro, "", "", fmt.Errorf("get statefulset %s/%s: %w", w.Namespace, w.Name, err)
		}
		return consolidate.OnePodAtATime(w, int(replicas(sts.Spec.Replicas))), sts.Labels[kai.QueueLabel], "", nil
	}
	d, err := kube.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil {
		return ro, "", "", fmt.Errorf("get deployment %s/%s: %w", w.Namespace, w.Name, err)
	}
	queue = d.Labels[kai.QueueLabel]
	n := int(replicas(d.Spec.Replicas))
	ro = consolidate.Rollout{Workload: w, Replicas: n, MaxSurge: consolidate.Count(0), MaxUnavailable: consolidate.Percent(100)}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return ro, queue, "", nil
	}
	surge, unavailable := intstr.FromString("25%"), intstr.FromString("25%")
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			unavailable = *ru.MaxUnavailable
		}
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(&surge, n, true)
	if err != nil {
		return ro, queue, fmt.Sprintf("deployment %s/%s: maxSurge: %v: the room its rollout needs is not checked", w.Namespace, w.Name, err), nil
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(&unavailable, n, false)
	if err != nil {
		return ro, queue, fmt.Sprintf("deployment %s/%s: maxUnavailable: %v: the room its rollout needs is not checked", w.Namespace, w.Name, err), nil
	}
	ro.MaxSurge, ro.MaxUnavailable = consolidate.Count(s), consolidate.Count(u)
	return ro, queue, "", nil
}

// replicas is spec.replicas, 1 when unset as the API server defaults it.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
