package workload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Sentinel errors. Refusals and problems wrap one of them, so callers can
// classify with errors.Is.
var (
	// ErrUnsupportedKind: the workload kind cannot be edited.
	ErrUnsupportedKind = errors.New("unsupported workload kind")
	// ErrNotFound: the workload is not in the inventory or its file.
	ErrNotFound = errors.New("workload not found")
	// ErrAmbiguous: the workload is defined more than once.
	ErrAmbiguous = errors.New("workload defined more than once")
	// ErrInvalidValue: the value to write is not acceptable for the field.
	ErrInvalidValue = errors.New("invalid value")
	// ErrKVCacheBytes: the container sets --kv-cache-memory-bytes, which
	// makes vLLM ignore --gpu-memory-utilization; it is left alone.
	ErrKVCacheBytes = errors.New("--kv-cache-memory-bytes is set, so vLLM ignores --gpu-memory-utilization")
	// ErrNoVLLMCommand: a vLLM container has no command line the flag can
	// be added to.
	ErrNoVLLMCommand = errors.New("no vLLM command line to add --gpu-memory-utilization to")
	// ErrSeveralGPUContainers: more than one container (or an init
	// container and a container) requests nvidia.com/gpu, and the op needs
	// one: a fraction reaches one container only.
	ErrSeveralGPUContainers = errors.New("several containers request nvidia.com/gpu; a fraction reaches one container only")
	// ErrNotGPUContainer: a vLLM container that does not get the pod's
	// GPU; its --gpu-memory-utilization is left alone.
	ErrNotGPUContainer = errors.New("not the container that gets the pod's GPU")
	// ErrGroupMismatch: the pod templates of a group (a LeaderWorkerSet's
	// leader and workers) ask for different GPUs, so one size does not
	// fit them; the workload is left alone.
	ErrGroupMismatch = errors.New("the pod templates of a group ask for different GPUs")
	// ErrUnsizedPods: the object runs other pods with the ones that are
	// sized (an InferenceService's multi-node workers or canaries), and
	// they ask for GPUs: sizing some of them alone would be wrong, so the
	// workload is left alone.
	ErrUnsizedPods = errors.New("other pods of the object ask for GPUs and are not sized")
	// ErrObjectAnnotation: one of KAI's annotations is on an object whose
	// controller gives its own annotations to all of its pods (an
	// InferenceService's to every component's); it is read, not edited.
	ErrObjectAnnotation = errors.New("KAI's annotation is on the object, which gives it to all of its pods")
	// ErrServiceAnnotation: one of KAI's annotations is in a Dynamo
	// service's own annotations, which reach its pods in one of the
	// operator's modes only; it is read, not edited.
	ErrServiceAnnotation = errors.New("KAI's annotation is in a Dynamo service's annotations, which reach its pods under Grove only")
	// ErrTemplateElsewhere: an edit of a workload whose pod template is
	// another object's (a Rollout's spec.workloadRef) would change the
	// workload's own object, which is not the document its edits go to.
	ErrTemplateElsewhere = errors.New("the workload's pod template is another object's")
	// ErrInvalidName: a metadata.name or metadata.namespace that
	// Kubernetes would refuse; the workload is not read.
	ErrInvalidName = errors.New("not a valid Kubernetes name")
)

// Problem is a file or document that was skipped. As an error it is the
// located.Error at its file and line, which errors.As finds like any
// other located problem.
type Problem struct {
	File string // slash-separated, relative to the root
	Line int    // 0 when unknown
	Err  error
}

func (p Problem) Error() string { return p.asLocated().Error() }
func (p Problem) Unwrap() error { return p.asLocated() }

func (p Problem) asLocated() *located.Error {
	return &located.Error{File: p.File, Line: p.Line, Err: p.Err}
}

// Workload is one workload found in a file.
type Workload struct {
	// Ref is the identity. Namespace is metadata.namespace, "" when
	// absent: the caller decides the default.
	Ref usage.Ref
	// File is slash-separated and relative to the root.
	File string
	// Line is where the document starts.
	Line int
	// Template, when set, is the object whose pod template the workload
	// runs and whose document its edits change: the Deployment an Argo
	// Rollout's spec.workloadRef names (FollowRefs). File and Line are
	// then that object's, and everything read but Ref, Labels and Queue.
	Template usage.Ref

	Labels         map[string]string // metadata.labels
	PodLabels      map[string]string // <template>.metadata.labels
	PodAnnotations map[string]string // <template>.metadata.annotations
	SchedulerName  string            // <template>.spec.schedulerName
	// Queue is the kai.scheduler/queue label: the workload's own label
	// first, then the pod template's (what KAI does).
	Queue      string
	GPU        GPU
	Containers []Container // <template>.spec.containers, not initContainers
	// Component is an InferenceService's spec.predictor.name, which KServe
	// puts in its predictor's name (<isvc>-<name>-predictor); "" when
	// unset or of another kind.
	Component string
}

// GPU is the GPU request of a workload as KAI reads it.
type GPU struct {
	Fraction     float64 // gpu-fraction parsed; 0 when absent or invalid (KAI wants 0 < f < 1)
	FractionText string  // raw gpu-fraction annotation
	MemoryMiB    int64   // gpu-memory annotation
	NumDevices   int     // gpu-fraction-num-devices; 1 when absent
	// Whole is the pod's nvidia.com/gpu as Kubernetes counts it: the sum
	// over containers, or the largest init container when that is more; a
	// container counts the larger of its limit and request.
	Whole int64
	// WholeContainers names the containers, then the init containers, that
	// request nvidia.com/gpu. A fraction reaches one container only, so
	// RemoveWholeGPUs refuses when there are several.
	WholeContainers []string
	// Container names the container the GPU goes to, as KAI reads the pod:
	// the one named by gpu-fraction-container-name; else the only container
	// or init container that requests nvidia.com/gpu; else the first
	// container (where KAI puts gpu-fraction and gpu-memory). It is "" when
	// several request nvidia.com/gpu, the named one is missing or there
	// are no containers, and an index when the container has no name.
	Container string
	// Err is set when an nvidia.com/gpu limit or request is written
	// through an alias, an anchor or a merge key: Whole reads through it,
	// but RemoveWholeGPUs and SetWholeGPUs refuse to edit it (splice.ErrAlias,
	// which Err wraps). Leave such a workload alone.
	Err error
	// FractionErr is set when gpu-fraction, gpu-memory or
	// gpu-fraction-num-devices is present but not what KAI accepts: empty,
	// null, a sequence or mapping, not a plain number, or written through
	// an alias or a << merge key (the editor would change other places
	// too). It names the line. The fields above then read as if the
	// annotation were absent, so leave such a workload alone rather than
	// take it for one without a GPU request.
	FractionErr error
}

// Container is one container of the pod template.
type Container struct {
	Name, Image string
	// VLLM is true when the image names vllm, or command/args run
	// `vllm serve` or `vllm.entrypoints` (also inside sh -c strings).
	VLLM bool
	// GPUMemoryUtilization is the current --gpu-memory-utilization value
	// in any spelling, "" when absent; of several, the last, which is the
	// one vLLM uses.
	GPUMemoryUtilization string
	// KVCacheMemoryBytes is true when --kv-cache-memory-bytes is set: vLLM
	// then ignores the utilization flag.
	KVCacheMemoryBytes bool
}

// Edit is every change wanted on one workload. It is atomic: if any of its
// Ops cannot be applied exactly, none is.
type Edit struct {
	Workload usage.Ref
	// File, when set, picks the definition in that file (slash-separated,
	// relative to the root) when the inventory has the same Ref in several
	// files, e.g. a base and a patch. Empty means the Ref must be unique.
	File   string
	Reason string // one line, carried into every Change
	Ops    []Op
}

// Result is what Apply would change. It is never nil on success; a result
// with no Files means nothing to change.
type Result struct {
	Files   []changes.File // only files whose bytes changed, sorted by Path
	Refused []Refusal      // edits refused, with why; a refused edit changes nothing
	Notes   []Note         // things left alone on purpose, without a changes.Change
}

// Changed reports whether any file would change.
func (r *Result) Changed() bool { return len(r.Files) > 0 }

// Refusal is an edit that was not applied.
type Refusal struct {
	Workload usage.Ref
	File     string
	Err      error // names file:line and the field; wraps a sentinel
}

func (r Refusal) Error() string { return r.Workload.String() + ": " + r.Err.Error() }
func (r Refusal) Unwrap() error { return r.Err }

// Note is something an Op deliberately left alone, e.g. a vLLM container
// whose --kv-cache-memory-bytes makes --gpu-memory-utilization moot. As
// an error it is the located.Error at its file, line and field.
type Note struct {
	Workload usage.Ref
	File     string
	Line     int
	Field    string
	Err      error
}

func (n Note) Error() string { return n.asLocated().Error() }
func (n Note) Unwrap() error { return n.asLocated() }

func (n Note) asLocated() *located.Error {
	return &located.Error{File: n.File, Line: n.Line, Field: n.Field, Err: n.Err}
}

// Found is what one origin, or the plain files, make of the checkout.
type Found struct {
	Workloads   []Workload
	Unsupported []Unsupported
	Problems    []Problem
}

// Where is the workload's file and line, or only the file for a workload
// a kustomization builds (its build has no line in the repository).
func (w Workload) Where() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d", w.File, w.Line)
	}
	return w.File
}

// EachFile runs fn(0) … fn(n-1) on as many goroutines as the process
// may run at once: files are independent, and parsing them is the cost
// of reading a large repository. fn must touch only what belongs to its
// i. The error is ctx's, when it is cancelled before all are done.
func EachFile(ctx context.Context, n int, fn func(i int)) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			fn(i)
		}
		return nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}
