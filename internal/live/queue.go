package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// QueueCheck is what a workload's KAI queue says about an upsize.
type QueueCheck struct {
	Queue string
	// Quota is the queue's GPU quota; negative when unlimited.
	Quota float64
	// Requested is what the queue's workloads ask for now, and After
	// what they would ask for with the upsize, in GPUs: pods × the pod's
	// request, from the workloads' specs, of every kind sized
	// (queueKinds).
	Requested, After float64
	// Namespaces are where the workloads were counted: the ones the tool
	// may read, so a lower bound when the queue spans others.
	Namespaces []string
	// Uncounted are the kinds that could not be listed (forbidden), so
	// a lower bound too; a kind the cluster does not serve has nothing
	// to count.
	Uncounted []string
	// Note says why the queue could not be checked; the check is then
	// silent, not fatal.
	Note string
}

// Exceeds reports whether the upsize would take the queue over its
// quota: KAI places non-preemptible pods (inference) only within quota,
// so the new pods could stay Pending.
func (q QueueCheck) Exceeds() bool {
	return q.Note == "" && q.Quota >= 0 && kai.Above(q.After, q.Quota)
}

// Warning is the sentence for the decision and the pull request, "" when
// there is nothing to warn of.
func (q QueueCheck) Warning() string {
	switch {
	case q.Note != "":
		return q.Note
	case q.Exceeds():
		uncounted := ""
		if len(q.Uncounted) > 0 {
			uncounted = " (not counted, as they may not be listed: " + strings.Join(q.Uncounted, ", ") + ")"
		}
		return fmt.Sprintf("KAI queue %s: the upsize takes its workloads (in %s) from %s to %s GPUs%s, over its GPU quota of %s: non-preemptible pods run only within quota, so new pods could stay Pending",
			q.Queue, strings.Join(q.Namespaces, ", "), gpus(q.Requested), gpus(q.After), uncounted, gpus(q.Quota))
	}
	return ""
}

// gpus writes an amount of GPU on KAI's grid, away from binary error.
func gpus(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// CheckQueue reads the KAI queue of the workload kind namespace/name (a
// kind the editor sizes; a DynamoGraphDeployment's service by its
// workload name) and what the workloads charged to it in namespaces
// request, and works out what they would request with the workload's
// sized pods at a gpu-fraction of newGPUs (times the pod's
// gpu-fraction-num-devices). No pods are read: a workload's spec (pods ×
// request) is what the queue will have to hold once it has rolled, and
// needs no RBAC on pods.
func (c *Client) CheckQueue(ctx context.Context, kind, namespace, name string, newGPUs float64, namespaces []string) (QueueCheck, error) {
	q := QueueCheck{Namespaces: namespaces}
	var all []charge
	for _, ns := range namespaces {
		cs, skipped, err := c.charges(ctx, ns)
		if err != nil {
			return QueueCheck{}, err
		}
		all = append(all, cs...)
		for _, s := range skipped {
			if !slices.Contains(q.Uncounted, s) {
				q.Uncounted = append(q.Uncounted, s)
			}
		}
	}
	i := slices.IndexFunc(all, func(ch charge) bool { return ch.kind == kind && ch.namespace == namespace && ch.name == name })
	if i < 0 {
		// Not in the cluster (yet), or not listed: no queue to charge,
		// nothing to warn of.
		return QueueCheck{}, nil
	}
	if q.Queue = all[i].queue; q.Queue == "" {
		return QueueCheck{}, nil
	}
	cq, err := cluster.ReadQueue(ctx, c.dyn, q.Queue)
	var fe *cluster.FieldError
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		q.Note = fmt.Sprintf("KAI queue %s could not be read (%s): its quota was not checked", q.Queue, serverMessage(err))
		return q, nil
	case errors.As(err, &fe):
		q.Note = fmt.Sprintf("KAI queue %s: %v: its quota was not checked", q.Queue, err)
		return q, nil
	case err != nil:
		return q, apiError("get", "queues.scheduling.run.ai", "", err)
	}
	// No quota is read as unlimited, as -1 is.
	q.Quota = cq.GPU.Quota.Or(-1)
	for j, ch := range all {
		if ch.queue != q.Queue {
			continue
		}
		for _, p := range ch.pods {
			q.Requested += p.count * p.gpus
			per := p.gpus
			if j == i && p.sized {
				// newGPUs is the fraction of each device: KAI charges it
				// once per device, as it does the current one.
				per = newGPUs * float64(p.devices)
			}
			q.After += p.count * per
		}
	}
	return q, nil
}

// podGPUs is one pod's GPU request as KAI counts it: the fraction times
// its devices, or the whole GPUs of its containers' limits.
func podGPUs(t *corev1.PodTemplateSpec) float64 {
	if f, err := kai.ParseFraction(t.Annotations[kai.FractionAnnotation]); err == nil {
		return f * float64(devices(t))
	}
	var whole int64
	for _, c := range t.Spec.Containers {
		q := c.Resources.Limits[corev1.ResourceName(kai.GPUResource)]
		whole += q.Value()
	}
	return float64(whole)
}

// devices is how many devices a fractional pod takes the fraction of:
// gpu-fraction-num-devices, 1 when unset or not a positive number.
func devices(t *corev1.PodTemplateSpec) int {
	if v, err := strconv.Atoi(t.Annotations[kai.NumDevicesAnnotation]); err == nil && v > 0 {
		return v
	}
	return 1
}
