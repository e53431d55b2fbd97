// Package consolidate is the functional core of a GpuConsolidationPolicy
// (docs/design.md §8): for one pool of GPU nodes it packs the pods' GPU shares as
// they will be once the open pull requests merge, with KAI's placement
// rules, and says how many GPUs the pool needs now and after, which
// under-used nodes could be drained and by which moves. It reports; it
// never evicts, and it reads nothing: the nodes, the pods and the
// recommendations come in as values, so that the same inputs always give
// the same report.
package consolidate

import (
	"fmt"
	"math"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// full is one GPU in steps of KAI's grid. KAI accounts a portion as
// math.Round(portion*100) hundredths, so packing in whole steps makes "a
// device holds at most one GPU" an integer comparison, with the float
// tolerance applied once, where a share becomes steps.
const full = 100

// Share is a pod's GPU request as KAI places it: Per of each of Devices
// GPUs, all on one node. A gpu-fraction pod has Per below 1 and Devices
// its gpu-fraction-num-devices; a whole-GPU pod has Per 1.
type Share struct {
	Per     float64 `json:"per"`
	Devices int     `json:"devices"`
}

// Fraction is a gpu-fraction request over numDevices devices.
func Fraction(f float64, numDevices int) Share { return Share{Per: f, Devices: numDevices} }

// Whole is an nvidia.com/gpu request of n GPUs.
func Whole(n int) Share { return Share{Per: 1, Devices: n} }

// Valid reports whether KAI could hold the share: a positive amount of
// at least one device.
func (s Share) Valid() bool { return s.Per > 0 && !math.IsInf(s.Per, 1) && s.Devices >= 1 }

// Whole reports whether the share takes whole devices.
func (s Share) Whole() bool { return s.steps() == full }

// GPUs is the share in GPUs, on KAI's grid.
func (s Share) GPUs() float64 { return float64(s.steps()*s.devices()) / full }

func (s Share) String() string {
	switch {
	case s.Whole() && s.devices() == 1:
		return "1 GPU"
	case s.Whole():
		return fmt.Sprintf("%d GPUs", s.devices())
	case s.devices() > 1:
		return fmt.Sprintf("%d×%s", s.devices(), kai.FormatFraction(float64(s.steps())/full))
	}
	return kai.FormatFraction(float64(s.steps()) / full)
}

// steps is the share of each device in grid steps, rounded up: a share
// between two steps is counted as the larger, so that a fit found here is
// one KAI would also find. An invalid share counts as one step and is
// noted by Evaluate.
func (s Share) steps() int {
	switch {
	case !(s.Per > 0):
		return 1
	case s.Per >= 1:
		return full
	}
	return min(full, max(1, int(math.Round(kai.CeilFraction(s.Per)*full))))
}

func (s Share) devices() int { return max(1, s.Devices) }

// Node is a GPU node as the pool sees it.
type Node struct {
	Name   string
	Labels map[string]string
	GPUs   int
	// Model is the GPU product (e.g. the nvidia.com/gpu.product label); a
	// fraction of one model is not a fraction of another, so a pool that
	// mixes models is noted.
	Model string
}

// Pod is a pod holding GPU share on a node.
type Pod struct {
	Namespace, Name string
	// Workload owns the pod; its recommendation resizes it.
	Workload usage.Ref
	Node     string
	// Devices are the indexes of the node's GPUs the pod holds, one per
	// device of its share, when known; nil when not, and the pod is then
	// placed on its node as KAI's bin packing would.
	Devices []int
	Share   Share
	// Queue is the KAI queue the pod is charged to (its
	// kai.scheduler/queue label), "" when unknown.
	Queue string
}

// Key names the pod in a report.
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

// Placement is what is running: the nodes and the GPU pods on them.
type Placement struct {
	Nodes []Node
	Pods  []Pod
	// Rollouts say how the workloads' controllers replace their pods, for
	// the rollout room of an upsize; a workload without one is not
	// checked, and its upsize says so.
	Rollouts []Rollout
	// Queues are the KAI queues' GPU quotas and limits, by name, parents
	// included.
	Queues kai.Queues
}

// Selector picks a pool's nodes by their labels. A policy's node selector
// (*policy.LabelSelector) is one: the caller passes it, so this package
// needs nothing of the policy loader.
type Selector interface {
	Matches(labels map[string]string) bool
}

// Policy is what a GpuConsolidationPolicy asks.
type Policy struct {
	Name  string
	Nodes Selector
	// ThresholdPercent is the candidate rule: a node whose GPUs are used
	// below this percent is a candidate to drain. The caller applies the
	// policy's default; 0 makes no node a candidate.
	ThresholdPercent int
}

// Constraint is a scheduling rule the report does not model: a drain it
// calls possible fits by GPU share, and may still be refused by one of
// these.
type Constraint string

const (
	NodeAffinity     Constraint = "node affinity and nodeSelector of the pods"
	PodAffinity      Constraint = "pod affinity, anti-affinity and topology spread"
	Taints           Constraint = "taints and tolerations"
	Topology         Constraint = "KAI topology-aware placement (NVLink and rack domains)"
	NodeResources    Constraint = "CPU, memory and other resources of the nodes"
	Queues           Constraint = "KAI queues: quotas, priority, reclaim and preemption"
	Gangs            Constraint = "gang scheduling of pod groups"
	GPUMemory        Constraint = "GPU memory: a share is counted as compute, gpu-memory as its fraction of the card"
	DisruptionBudget Constraint = "PodDisruptionBudgets and rollout timing"
	PlacementPolicy  Constraint = "KAI's own bin-pack or spread choice when it places the moved pods"
)

// Unmodelled lists what the report leaves out, as the Kubex guide lists
// its own consolidation's limits: a reader must see them beside every
// drain.
func Unmodelled() []Constraint {
	return []Constraint{NodeAffinity, PodAffinity, Taints, Topology, NodeResources,
		Queues, Gangs, GPUMemory, DisruptionBudget, PlacementPolicy}
}
