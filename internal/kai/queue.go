package kai

import (
	"fmt"
	"math"
	"slices"
)

// Unlimited is the quota or limit of a queue that bounds nothing.
const Unlimited = -1

// Absent is what the scheduler reads for a quota or limit a queue's spec
// leaves out: no GPUs (KAI v0.17.0, queue_info.go getQueueQuota and
// proportion.go createQueueResourceAttrs copy the zero value; the CRD
// sets no default).
const Absent = 0

// Queue is one KAI queue's GPU resources (scheduling.run.ai/v2 Queue,
// spec.resources.gpu), in GPUs. An absent quota or limit is 0, as the
// scheduler reads it (KAI v0.17.0, queue_info.go getQueueQuota, no CRD
// default): no guaranteed GPUs, and no GPUs at all under the limit. Only
// -1 is Unlimited.
type Queue struct {
	Name, Parent string
	Quota, Limit float64
}

// Breach is a queue a request would take past one of its bounds.
type Breach struct {
	Queue string
	// Bound is "limit" or "quota".
	Bound string
	// Of is the bound, After what the queue and its children would hold
	// with the request.
	Of, After float64
}

func (b Breach) String() string {
	return fmt.Sprintf("KAI queue %s: %s GPUs over its %s of %s", b.Queue, gpus(b.After), b.Bound, gpus(b.Of))
}

// gpus writes an amount of GPU on KAI's grid, away from binary error.
func gpus(v float64) string { return FormatFraction(v) }

// Queues are a cluster's KAI queues by name.
type Queues map[string]Queue

// Over returns the bounds that request more GPUs in queue leaf would
// break, from the leaf up through its parents, as KAI's capacity policy
// checks a job (KAI v0.17.0, pkg/scheduler/plugins/proportion/
// capacity_policy: max_allowed_check.go resultsOverLimit for every job,
// quota_check.go resultsWithNonPreemptibleOverQuota for a non-preemptible
// one). held is what each queue's own pods hold now; a queue holds its
// children's too, as the scheduler adds a job to its queue and every
// ancestor. A bound is broken when it is below what the queue would hold
// (equal fits). An inference Deployment's pods are non-preemptible
// (priority class inference, 125, over 100).
func (qs Queues) Over(leaf string, held map[string]float64, more float64, nonPreemptible bool) []Breach {
	if more <= 0 {
		return nil
	}
	var out []Breach
	seen := map[string]bool{}
	for q, ok := qs[leaf]; ok && !seen[q.Name]; q, ok = qs[q.Parent] {
		seen[q.Name] = true
		after := qs.holds(q.Name, held, map[string]bool{}) + more
		if q.Limit != Unlimited && Above(after, q.Limit) {
			out = append(out, Breach{Queue: q.Name, Bound: "limit", Of: q.Limit, After: after})
		}
		if nonPreemptible && q.Quota != Unlimited && Above(after, q.Quota) {
			out = append(out, Breach{Queue: q.Name, Bound: "quota", Of: q.Quota, After: after})
		}
	}
	return out
}

// holds is what queue name and its descendants hold; a cycle in what
// the cluster holds stops at a queue already counted.
func (qs Queues) holds(name string, held map[string]float64, counted map[string]bool) float64 {
	if counted[name] {
		return 0
	}
	counted[name] = true
	total := held[name]
	for _, child := range qs.children(name) {
		total += qs.holds(child, held, counted)
	}
	return math.Round(total*perGPU) / perGPU
}

// children lists the queues whose parent is name, sorted.
func (qs Queues) children(name string) []string {
	var out []string
	for n, q := range qs {
		if q.Parent == name {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Room is how many more GPUs queue leaf can be given before it or a
// parent breaks a bound Over checks: the least of each bound less what
// its queue holds (held as Over reads it); +Inf when no bound applies or
// the queue is unknown.
func (qs Queues) Room(leaf string, held map[string]float64, nonPreemptible bool) float64 {
	room := math.Inf(1)
	seen := map[string]bool{}
	for q, ok := qs[leaf]; ok && !seen[q.Name]; q, ok = qs[q.Parent] {
		seen[q.Name] = true
		holds := qs.holds(q.Name, held, map[string]bool{})
		if q.Limit != Unlimited {
			room = math.Min(room, q.Limit-holds)
		}
		if nonPreemptible && q.Quota != Unlimited {
			room = math.Min(room, q.Quota-holds)
		}
	}
	return room
}

// NonPreemptible reports whether KAI takes the pods of a workload of
// kind, whose pod template names priorityClass ("" when it names none),
// for non-preemptible: a priority of 100 or more. KAI's pod grouper gives
// a Deployment's pods the class inference (125) and any other's train
// (50), unless the pod names its own; of KAI's classes, build (100) and
// inference are non-preemptible (KAI v0.17.0, pkg/common/podgroup/
// preemptible.go, podgrouper deployment_grouper.go). A class KAI does not
// ship is taken as non-preemptible, so that its quota is checked.
func NonPreemptible(kind, priorityClass string) bool {
	switch priorityClass {
	case "":
		return kind == "Deployment"
	case "train":
		return false
	}
	return true
}
