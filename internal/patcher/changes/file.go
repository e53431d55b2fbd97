// Package changes holds the files an edit changed, apart from how the
// edit was made: each File's bytes before and after, the fields changed
// in it and the splices between the two. It renders a File as a unified
// diff, to the byte as go-difflib does (diff.go), and writes files over
// a checkout safely (write.go): each checked against the bytes it was
// made from, written beside and renamed, all or nothing with WriteAll.
// It knows files, not workloads: the editors of plain files,
// kustomizations and values files all report in it.
package changes

import (
	"errors"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// ErrChangedOnDisk: a file to write is no longer what the edit was made
// from; it is not overwritten.
var ErrChangedOnDisk = errors.New("the file changed since it was read")

// File is one changed file.
type File struct {
	Path     string // slash-separated, relative to the root
	Old, New []byte
	// Created: the file is new (Old is nil), e.g. a strategic-merge patch
	// added to a kustomization.
	Created bool
	Changes []Change
	// Splices turn Old into New: each replaces Old[Off:Off+Len] with Text.
	// They are sorted and do not overlap.
	Splices []splice.Splice
}

// Change is one field changed on one workload.
type Change struct {
	Workload usage.Ref
	// Field is a YAML path, e.g. spec.template.metadata.annotations.gpu-fraction
	// or spec.template.spec.containers[vllm].args.
	Field string
	// Old and New are the values; Old is "" for an addition, New for a
	// removal.
	Old, New string
	Reason   string
	// Definition is the File of the Edit that asked for the change: which
	// definition of the workload (its plain file, root kustomization or
	// release) it was made for, when one workload has several (one per
	// cluster that deploys it).
	Definition string
}
