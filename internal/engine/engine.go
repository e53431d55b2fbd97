// Package engine is the decision math of docs/design.md §4: from a workload's
// rules, its current GPU request and its usage, one Decision with the
// evidence it rests on. It is pure: it reads no file, calls no server and
// reads no clock, so the same Input always gives the same Decision, in a
// plan, a pull request body or a backtest alike.
package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Form is how a workload asks for GPU.
type Form string

const (
	NoGPU     Form = "none"
	Fraction  Form = "gpu-fraction"
	WholeGPUs Form = "nvidia.com/gpu"
	GPUMemory Form = "gpu-memory"
)

// Allocation is a workload's GPU request.
type Allocation struct {
	Form Form
	// GPUs is the request in GPUs: the fraction, or the whole count; for
	// gpu-memory, MiB over the GPU's memory (0 when that is unknown).
	GPUs float64
	// MiB is the gpu-memory request, in whole MiB.
	MiB int64
}

func (a Allocation) String() string {
	switch a.Form {
	case Fraction:
		return fmt.Sprintf("%.2f", a.GPUs)
	case WholeGPUs:
		if a.GPUs == 1 {
			return "1 GPU"
		}
		return fmt.Sprintf("%g GPUs", a.GPUs)
	case GPUMemory:
		if a.MiB > 0 {
			return fmt.Sprintf("%d MiB", a.MiB)
		}
		return "gpu-memory"
	}
	return "-"
}

// Action is what a decision does.
type Action string

const (
	Upsize    Action = "upsize"
	ScaleBack Action = "scaleBack"
	NoChange  Action = "none"
	Skipped   Action = "skipped"
)

// Changes reports whether the action edits the workload.
func (a Action) Changes() bool { return a == Upsize || a == ScaleBack }

// Input is everything a decision depends on.
type Input struct {
	At      time.Time
	Current Allocation
	Rules   Rules
	Usage   usage.Workload
}

// Decision is the outcome for one workload.
type Decision struct {
	Action      Action
	Current     Allocation
	Recommended Allocation
	// Urgent marks a reactive upsize: pressure now, which may use the live
	// fast path.
	Urgent bool
	// Rule names the rule that decided a change, e.g. "reactive upsize
	// (compute)"; empty when nothing changes.
	Rule string
	// Cause says why nothing changes; empty when something does.
	Cause Cause
	// Evidence holds the numbers the decision rests on.
	Evidence Evidence
}

// Reason says why, with the window and the numbers, for a reviewer. It is
// rendered from the cause and the evidence, here only.
func (d Decision) Reason() string { return reason(d) }

// LeftAlone is the decision for a workload that is not judged at all: out
// of scope, governed by a broken policy, defined twice, or asking for GPU
// in a way the tool does not handle. detail completes the reason.
func LeftAlone(cur Allocation, c Cause, detail string) Decision {
	return Decision{Action: Skipped, Current: cur, Recommended: cur, Cause: c, Evidence: Evidence{Detail: detail}}
}

// Unjudged is the decision for a workload whose usage could not be read:
// nothing changes, and the cause says the data is in doubt, not that the
// allocation fits.
func Unjudged(cur Allocation, c Cause, detail string) Decision {
	return Decision{Action: NoChange, Current: cur, Recommended: cur, Cause: c, Evidence: Evidence{Detail: detail}}
}

// Refused turns a change into no change because its edit could not be
// written; the evidence keeps what it wanted, for the reviewer.
func (d Decision) Refused(why string) Decision {
	if !d.Action.Changes() {
		return d
	}
	wanted := d
	d.Evidence.Wanted = &wanted
	d.Evidence.Detail = why
	d.Action, d.Recommended, d.Urgent, d.Rule, d.Cause = NoChange, d.Current, false, "", CauseEditRefused
	return d
}

// Note records what an edit left alone on purpose, e.g. a vLLM flag that
// --kv-cache-memory-bytes makes moot: the reviewer must know.
func (d Decision) Note(field, why string) Decision {
	d.Evidence.Notes = append(slices.Clip(d.Evidence.Notes), Note{Field: field, Why: why})
	return d
}
