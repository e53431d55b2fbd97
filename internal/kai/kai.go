// Package kai holds what the NVIDIA KAI scheduler reads from a workload
// and what it accepts there (KAI-Scheduler v0.17, pkg/common/constants and
// its admission webhook): the names of the scheduler, the queue label and
// the GPU-sharing annotations, the 0.01 grid a fraction lives on, and which
// GPU request forms exclude each other. The decision engine, the plan and
// the editor all import it, so that these rules are written once.
package kai

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Names KAI reads from a workload.
const (
	// SchedulerName places a pod with KAI.
	SchedulerName = "kai-scheduler"
	// QueueLabel charges a workload to a queue; KAI reads the workload's
	// own label first, then its pod template's.
	QueueLabel = "kai.scheduler/queue"
	// FractionAnnotation asks for part of one GPU, on the pod.
	FractionAnnotation = "gpu-fraction"
	// MemoryAnnotation asks for GPU memory in MiB instead of a fraction.
	MemoryAnnotation = "gpu-memory"
	// NumDevicesAnnotation multiplies a fraction over several devices.
	NumDevicesAnnotation = "gpu-fraction-num-devices"
	// ContainerNameAnnotation names the container a fraction goes to.
	ContainerNameAnnotation = "gpu-fraction-container-name"
	// GPUResource asks for whole GPUs in a container's limits.
	GPUResource = "nvidia.com/gpu"
)

// The fraction grid: KAI keeps two decimals, strictly between 0 and 1.
const (
	Step        = 0.01
	MinFraction = 0.01
	MaxFraction = 0.99
)

// tolerance absorbs binary floating-point error in grid arithmetic, e.g.
// 0.29*100 = 28.999999999999996. It is far below the grid's step.
const tolerance = 1e-9

// perGPU is the number of grid steps in one GPU. Grid arithmetic divides
// by it rather than multiplying by Step, whose binary value is inexact:
// 29 * 0.01 is 0.29000000000000004, 29 / 100.0 is 0.29.
const perGPU = 100

// CeilFraction rounds v up to the grid.
func CeilFraction(v float64) float64 { return math.Ceil(v*perGPU-tolerance) / perGPU }

// FloorFraction rounds v down to the grid.
func FloorFraction(v float64) float64 { return math.Floor(v*perGPU+tolerance) / perGPU }

// CeilGPUs rounds v up to whole GPUs.
func CeilGPUs(v float64) float64 { return math.Ceil(v - tolerance) }

// FloorGPUs rounds v down to whole GPUs.
func FloorGPUs(v float64) float64 { return math.Floor(v + tolerance) }

// ClampFraction holds v to the fractions KAI accepts.
func ClampFraction(v float64) float64 { return math.Max(MinFraction, math.Min(MaxFraction, v)) }

// OnGrid reports whether v is a request KAI keeps exactly: a fraction in
// 0.01 steps below 1, or whole GPUs from 1.
func OnGrid(v float64) bool {
	if v >= 1 {
		return Same(v, math.Round(v))
	}
	return Same(v*perGPU, math.Round(v*perGPU))
}

// Same reports whether two amounts of GPU are equal up to floating-point
// error.
func Same(a, b float64) bool { return math.Abs(a-b) <= tolerance }

// Above reports whether a exceeds b by more than floating-point error.
func Above(a, b float64) bool { return a > b+tolerance }

// FormatFraction writes a fraction as the annotation holds it.
func FormatFraction(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// ErrFraction is wrapped by every error of ParseFraction.
var ErrFraction = errors.New("invalid gpu-fraction")

// ParseFraction reads a gpu-fraction annotation the way KAI's webhook
// does: a plain decimal strictly between 0 and 1. It refuses what Go's
// ParseFloat would take and KAI would not: blanks, signs, exponents, hex
// floats, infinities and underscores.
func ParseFraction(s string) (float64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: it is empty", ErrFraction)
	}
	dot := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
		case c == '.' && !dot:
			dot = true
		default:
			return 0, fmt.Errorf("%w %q: KAI reads a plain decimal, without blanks, signs, exponents or hex", ErrFraction, s)
		}
	}
	if s == "." {
		return 0, fmt.Errorf("%w %q: KAI reads a plain decimal, without blanks, signs, exponents or hex", ErrFraction, s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w %q: KAI reads a plain decimal, without blanks, signs, exponents or hex", ErrFraction, s)
	}
	if f <= 0 || f >= 1 {
		return 0, fmt.Errorf("%w %q: KAI wants a fraction strictly between 0 and 1", ErrFraction, s)
	}
	return f, nil
}

// Request is the GPU request of a pod template as KAI sees it: which of
// the exclusive forms are present.
type Request struct {
	Fraction, Memory, WholeGPUs bool
}

// Conflict says why KAI refuses a request: gpu-fraction next to
// gpu-memory, or either next to nvidia.com/gpu. It is nil when KAI
// accepts the request.
func (r Request) Conflict() error {
	switch {
	case r.Fraction && r.Memory:
		return fmt.Errorf("%s next to %s, which KAI refuses", FractionAnnotation, MemoryAnnotation)
	case r.Fraction && r.WholeGPUs:
		return fmt.Errorf("%s next to %s, which KAI refuses", FractionAnnotation, GPUResource)
	case r.Memory && r.WholeGPUs:
		return fmt.Errorf("%s next to %s, which KAI refuses", MemoryAnnotation, GPUResource)
	}
	return nil
}
