// Package patcher finds GPU workloads in the YAML files of a repository
// checkout and edits them with the smallest possible change.
//
// Edits never re-serialise a file. Each Op locates its nodes by parsing
// its document's text (from one --- to the next) with yaml.NewDecoder and
// navigating with kyaml, then splices new bytes into the original text at
// those positions. The same change is applied with kyaml to a parsed copy
// of the document (the expected tree); after splicing, the document is
// parsed again and compared with its expected tree, and its comments with
// the original's:
// every comment outside what an op removes must still be there, in order
// (an op removes the whole lines of a deleted block entry, and from a flow
// mapping only the entry and one comma). Any difference refuses the edit
// and leaves the file as it was (DESIGN §10, invariant 2); once every edit
// of a file is done, the whole file is parsed and compared once more.
// Comments, key
// order, quoting, indentation, blank lines, trailing whitespace, document
// separators, CRLF line endings, a byte order mark and a missing final
// newline all survive, because those bytes are never touched.
//
// The package takes a directory and returns values: it never talks to git,
// the network or a cluster, and it writes only when Result.Write is called.
package patcher

import (
	"errors"
	"fmt"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Sentinel errors. Refusals and problems wrap one of them, so callers can
// classify with errors.Is.
var (
	// ErrInvalidYAML: the file does not parse.
	ErrInvalidYAML = splice.ErrInvalidYAML
	// ErrConflictMarkers: the file contains git merge-conflict markers.
	ErrConflictMarkers = splice.ErrConflictMarkers
	// ErrDuplicateKey: a mapping of the edited document has a key twice.
	ErrDuplicateKey = splice.ErrDuplicateKey
	// ErrAlias: an anchor, alias or merge key lies on the edit path.
	ErrAlias = splice.ErrAlias
	// ErrTemplate: the value is written through a Helm/Go template.
	ErrTemplate = splice.ErrTemplate
	// ErrUnsupported: the source has a shape the editor does not handle
	// safely (odd line breaks, a key sharing its line with a dash, ...).
	ErrUnsupported = splice.ErrUnsupported
	// ErrVerify: after splicing, the file did not parse to exactly the
	// intended result.
	ErrVerify = splice.ErrVerify
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
	// ErrOutsideRoot: a symlink leads outside the checkout.
	ErrOutsideRoot = checkout.ErrOutsideRoot
	// ErrChangedOnDisk: a file to write is no longer what the edit was
	// made from; it is not overwritten.
	ErrChangedOnDisk = errors.New("the file changed since it was read")
	// ErrInvalidName: a metadata.name or metadata.namespace that
	// Kubernetes would refuse; the workload is not read.
	ErrInvalidName = errors.New("not a valid Kubernetes name")
)

// Inventory is what Discover found.
type Inventory struct {
	// Workloads are sorted by File, then position in the file.
	Workloads []Workload
	// Problems are files that could not be read or parsed, and documents
	// that could not be understood. They are not fatal.
	Problems []Problem
	// Unsupported are the objects that ask for GPUs, or own pods, in a
	// kind the tool does not size: reported, never passed over.
	Unsupported []Unsupported

	// Unreleased are the directories of the charts of the checkout that
	// no Argo CD Application, Flux HelmRelease or helmCharts entry renders:
	// they are not rendered (helm.go says why).
	Unreleased []string

	// origins make workloads other than plain files do: kustomizations,
	// then chart releases. A Workload found in a file an origin owns is
	// edited through it.
	origins []origin
}

// Problem is a file or document that was skipped.
type Problem struct {
	File string // slash-separated, relative to the root
	Line int    // 0 when unknown
	Err  error
}

func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", p.File, p.Line, p.Err)
	}
	return fmt.Sprintf("%s: %v", p.File, p.Err)
}

func (p Problem) Unwrap() error { return p.Err }

// Workload is one workload found in a file.
type Workload struct {
	// Ref is the identity. Namespace is metadata.namespace, "" when
	// absent: the caller decides the default.
	Ref usage.Ref
	// File is slash-separated and relative to the root.
	File string
	// Line is where the document starts.
	Line int

	Labels         map[string]string // metadata.labels
	PodLabels      map[string]string // <template>.metadata.labels
	PodAnnotations map[string]string // <template>.metadata.annotations
	SchedulerName  string            // <template>.spec.schedulerName
	// Queue is the kai.scheduler/queue label: the workload's own label
	// first, then the pod template's (what KAI does).
	Queue      string
	GPU        GPU
	Containers []Container // <template>.spec.containers, not initContainers
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
	// but RemoveWholeGPUs and SetWholeGPUs refuse to edit it (ErrAlias,
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
