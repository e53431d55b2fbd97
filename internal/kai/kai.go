// Package kai holds what the NVIDIA KAI scheduler reads from a workload
// and what it accepts there (KAI-Scheduler v0.17, pkg/common/constants and
// its admission webhook): the names of the scheduler, the queue label and
// the GPU-sharing annotations, the 0.01 grid a fraction lives on, which
// GPU request forms exclude each other, a pod's share as KAI counts it
// (PodShare) and a queue's capacity as its scheduler checks it (Queues).
// The decision engine, the plan, the editor, the usage sources, the live
// path and the fleet report all import it, so that these rules are
// written once.
package kai

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// ParseFraction reads a gpu-fraction annotation as KAI's admission webhook
// does: strconv.ParseFloat must read it as a number strictly between 0
// and 1, and resource.ParseQuantity must read it too, so a decimal with
// an optional sign and exponent (0.5, .25, +0.5, 5e-1), never a blank, a
// hex float, an underscore, an infinity or a NaN (KAI v0.17.0,
// pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go,
// validateGpuFractionAnnotation). The value is ParseFloat's; the
// scheduler then counts it rounded to two places (Share).
func ParseFraction(s string) (float64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: it is empty", ErrFraction)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !quantity(s) {
		return 0, fmt.Errorf("%w %q: KAI reads a decimal number, or one in scientific notation, without blanks", ErrFraction, s)
	}
	if !(f > 0 && f < 1) {
		return 0, fmt.Errorf("%w %q: KAI wants a fraction strictly between 0 and 1", ErrFraction, s)
	}
	return f, nil
}

// quantity reports whether s, which strconv.ParseFloat reads, is also a
// Kubernetes quantity: an optional sign, digits with at most one point,
// then optionally e or E and a signed integer. ParseFloat takes more
// (hex floats, underscores in them, infinities, NaN); the quantity
// grammar's other suffixes (Ki, m, k, …) are nothing ParseFloat takes.
func quantity(s string) bool {
	mantissa, exp, hasExp := strings.Cut(strings.Replace(s, "E", "e", 1), "e")
	mantissa = strings.TrimLeft(mantissa, "+-")
	if len(s)-len(strings.TrimLeft(s, "+-")) > 1 || mantissa == "" || strings.Count(mantissa, ".") > 1 ||
		strings.Trim(mantissa, "0123456789.") != "" || strings.Trim(mantissa, ".") == "" {
		return false
	}
	if !hasExp {
		return true
	}
	exp = strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-")
	return exp != "" && strings.Trim(exp, "0123456789") == ""
}

// CanonicalFraction is how the tool writes a fraction it read: on KAI's
// grid with two places, as KAI counts it (0.333 is counted 0.33, 5e-1 is
// 0.50). It is only written where the tool changes the value.
func CanonicalFraction(f float64) string { return FormatFraction(math.Round(f*perGPU) / perGPU) }

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
