package kai

import (
	"fmt"
	"math"
	"strconv"
)

// Share is a pod's GPU request as KAI counts it against its queue and
// places it on devices.
type Share struct {
	// Portion is the part of each device: 1 for whole GPUs, the
	// gpu-fraction rounded to two places, or 0 for gpu-memory (Memory
	// then says how much).
	Portion float64
	// Devices is how many devices: the whole GPUs, or
	// gpu-fraction-num-devices (1 when absent).
	Devices int
	// MemoryMiB is a gpu-memory request on each device, in MiB.
	MemoryMiB int64
}

// Whole is a share of n whole GPUs.
func Whole(n int) Share { return Share{Portion: 1, Devices: n} }

// GPUs is the amount a queue is charged: the portion times the devices,
// in KAI's fixed point of two places (gpu_resource_requirment.go,
// getExtendedResourceGpus). A gpu-memory share counts 0 here: KAI turns
// it into a fraction against a node's GPU memory (MemoryGPUs).
func (s Share) GPUs() float64 {
	return float64(int64(math.Round(s.Portion*perGPU))*int64(s.Devices)) / perGPU
}

// MemoryGPUs is a gpu-memory share as a fraction of GPUs on a card of
// cardMiB: each device's part rounded up to two places, as KAI accepts
// it on a node (node_info.go, gpu_sharing_node_info.go), times the
// devices.
func (s Share) MemoryGPUs(cardMiB int64) float64 {
	if s.MemoryMiB <= 0 || cardMiB <= 0 {
		return 0
	}
	per := math.Ceil(float64(s.MemoryMiB)/float64(cardMiB)*perGPU-tolerance) / perGPU
	return per * float64(s.Devices)
}

// PodShare is the GPU request of a pod with these annotations, whose
// containers ask for wholeGPUs of nvidia.com/gpu in all, as KAI v0.17.0
// admits and counts it: the admission webhook's rules
// (pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go)
// and the scheduler's reading (pkg/scheduler/api/pod_info/pod_info.go).
// ok is false for a pod that asks for no GPU; an error is a request KAI's
// webhook refuses, said as it says it.
func PodShare(annotations map[string]string, wholeGPUs int64) (s Share, ok bool, err error) {
	frac, hasFrac := annotations[FractionAnnotation]
	mem, hasMem := annotations[MemoryAnnotation]
	num, hasNum := annotations[NumDevicesAnnotation]
	switch {
	case hasFrac && wholeGPUs > 0:
		return Share{}, false, fmt.Errorf("%s next to %s, which KAI refuses", FractionAnnotation, GPUResource)
	case hasMem && (hasFrac || wholeGPUs > 0):
		return Share{}, false, fmt.Errorf("%s next to %s or %s, which KAI refuses", MemoryAnnotation, FractionAnnotation, GPUResource)
	case hasNum && !hasFrac && !hasMem:
		return Share{}, false, fmt.Errorf("%s without %s or %s, which KAI refuses", NumDevicesAnnotation, FractionAnnotation, MemoryAnnotation)
	case !hasFrac && !hasMem:
		if wholeGPUs <= 0 {
			return Share{}, false, nil
		}
		return Whole(int(wholeGPUs)), true, nil
	}
	s.Devices = 1
	if hasNum {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil || n == 0 || n > math.MaxInt32 {
			return Share{}, false, fmt.Errorf("invalid %s %q: KAI wants a whole number above 0", NumDevicesAnnotation, num)
		}
		s.Devices = int(n)
	}
	if hasMem {
		m, err := strconv.ParseUint(mem, 10, 63)
		if err != nil || m == 0 {
			return Share{}, false, fmt.Errorf("invalid %s %q: KAI wants a whole number of MiB above 0", MemoryAnnotation, mem)
		}
		s.MemoryMiB = int64(m)
		return s, true, nil
	}
	f, err := ParseFraction(frac)
	if err != nil {
		return Share{}, false, err
	}
	s.Portion = math.Round(f*perGPU) / perGPU
	return s, true, nil
}
