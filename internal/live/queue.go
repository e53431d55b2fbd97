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

// QueueCheck is what a workload's KAI queue, and its parents, say about
// an upsize.
type QueueCheck struct {
	Queue string
	// Requested is what the queue's workloads ask for now, and After
	// what they would ask for with the upsize, in GPUs: pods × the pod's
	// request as KAI counts it (kai.PodShare), from the workloads' specs,
	// of every kind sized (queueKinds).
	Requested, After float64
	// Over are the bounds of the queue and of its parents that the
	// upsize would break, as KAI's scheduler checks them
	// (kai.Queues.Over): each parent holds its children's workloads too.
	Over []kai.Breach
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

// Exceeds reports whether the upsize would take the queue, or a parent,
// past its GPU quota or limit: KAI places a job only within every limit,
// and a non-preemptible one (inference) only within every quota, so the
// new pods could stay Pending.
func (q QueueCheck) Exceeds() bool {
	return q.Note == "" && len(q.Over) > 0
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
		var over []string
		for _, b := range q.Over {
			if b.Queue == q.Queue {
				over = append(over, fmt.Sprintf("its GPU %s of %s", b.Bound, gpus(b.Of)))
			} else {
				over = append(over, fmt.Sprintf("the GPU %s of %s of its parent queue %s (%s GPUs with its children)", b.Bound, gpus(b.Of), b.Queue, gpus(b.After)))
			}
		}
		return fmt.Sprintf("KAI queue %s: the upsize takes its workloads (in %s) from %s to %s GPUs%s, over %s: KAI runs pods only within every limit, and non-preemptible ones within every quota, so new pods could stay Pending",
			q.Queue, strings.Join(q.Namespaces, ", "), gpus(q.Requested), gpus(q.After), uncounted, strings.Join(over, " and "))
	}
	return ""
}

// gpus writes an amount of GPU on KAI's grid, away from binary error.
func gpus(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// CheckQueue reads the KAI queue of the workload kind namespace/name (a
// kind the editor sizes; a DynamoGraphDeployment's service by its
// workload name), its parents, and what the workloads charged to each in
// namespaces request, and works out what they would request with the
// workload's sized pods at a gpu-fraction of newGPUs (times the pod's
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
	queues, note, err := c.queues(ctx, q.Queue)
	if note != "" || err != nil {
		q.Note = note
		return q, err
	}
	held := map[string]float64{}
	for j, ch := range all {
		for _, p := range ch.pods {
			now := p.count * p.gpus
			held[ch.queue] += now
			if ch.queue != q.Queue {
				continue
			}
			q.Requested += now
			per := p.gpus
			if j == i && p.sized {
				// newGPUs is the fraction of each device: KAI charges it
				// once per device, as it does the current one.
				per = newGPUs * float64(p.devices)
			}
			q.After += p.count * per
		}
	}
	q.Over = queues.Over(q.Queue, held, q.After-q.Requested, kai.NonPreemptible(kind, ""))
	return q, nil
}

// queues reads every KAI queue, as the scheduler bounds them (a parent's
// holding counts its children's). Where the tool may list none, or the
// list lacks leaf, it gets leaf and its parents one by one, so that a
// missing or forbidden queue is said in the server's words. note says
// why the queue could not be checked.
func (c *Client) queues(ctx context.Context, leaf string) (kai.Queues, string, error) {
	list, err := cluster.ReadQueues(ctx, c.dyn)
	var fe *cluster.FieldError
	switch {
	case err == nil:
		if qs := cluster.Capacities(list); qs[leaf].Name == leaf {
			return qs, "", nil
		}
	case errors.As(err, &fe):
		return nil, fmt.Sprintf("KAI queues: %v: the quotas and limits were not checked", err), nil
	case !apierrors.IsForbidden(err):
		return nil, "", apiError("list", "queues.scheduling.run.ai", "", err)
	}
	qs := kai.Queues{}
	for name := leaf; name != "" && qs[name].Name == ""; {
		cq, err := cluster.ReadQueue(ctx, c.dyn, name)
		switch {
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			return nil, fmt.Sprintf("KAI queue %s could not be read (%s): its quota and limit were not checked", name, serverMessage(err)), nil
		case errors.As(err, &fe):
			return nil, fmt.Sprintf("KAI queue %s: %v: its quota and limit were not checked", name, err), nil
		case err != nil:
			return nil, "", apiError("get", "queues.scheduling.run.ai", "", err)
		}
		qs[name] = cq.Capacity()
		name = cq.Parent
	}
	return qs, "", nil
}

// podGPUs is one pod's GPU request as KAI counts it (kai.PodShare): the
// fraction in two places times its devices, or the whole GPUs of its
// containers' limits; 0 for a request KAI would refuse, or gpu-memory,
// whose share of a card the check does not know.
func podGPUs(t *corev1.PodTemplateSpec) float64 {
	s, ok, err := kai.PodShare(t.Annotations, wholeGPUs(t))
	if err != nil || !ok {
		return 0
	}
	return s.GPUs()
}

// devices is how many devices a pod's fraction is charged on:
// gpu-fraction-num-devices, 1 when unset or not what KAI accepts.
func devices(t *corev1.PodTemplateSpec) int {
	s, ok, err := kai.PodShare(t.Annotations, wholeGPUs(t))
	if err != nil || !ok || s.Devices < 1 {
		return 1
	}
	return s.Devices
}

// wholeGPUs is the nvidia.com/gpu the pod's containers ask for.
func wholeGPUs(t *corev1.PodTemplateSpec) int64 {
	var whole int64
	for _, c := range t.Spec.Containers {
		q := c.Resources.Limits[corev1.ResourceName(kai.GPUResource)]
		whole += q.Value()
	}
	return whole
}
