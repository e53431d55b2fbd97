package patcher

import (
	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/helm"
	"github.com/gpu-rightsizing/recommender/internal/patcher/kustomize"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// The types callers use, defined where the editor's parts share them
// (packages workload and changes); aliases, so a value is the same on both sides.
type (
	Workload    = workload.Workload
	GPU         = workload.GPU
	Container   = workload.Container
	Edit        = workload.Edit
	Op          = workload.Op
	Result      = workload.Result
	File        = changes.File
	Change      = changes.Change
	Refusal     = workload.Refusal
	Note        = workload.Note
	Problem     = workload.Problem
	Unsupported = workload.Unsupported
	Splice      = splice.Splice
)

// The Ops, by constructor (workload documents each).

func SetGPUFraction(v string) Op           { return workload.SetGPUFraction(v) }
func SetVLLMMemoryUtilization(v string) Op { return workload.SetVLLMMemoryUtilization(v) }
func SetGPUMemory(mib int64) Op            { return workload.SetGPUMemory(mib) }
func SetSchedulerName(name string) Op      { return workload.SetSchedulerName(name) }
func SetPodLabel(k, v string) Op           { return workload.SetPodLabel(k, v) }
func SetWorkloadLabel(k, v string) Op      { return workload.SetWorkloadLabel(k, v) }
func RemoveWholeGPUs() Op                  { return workload.RemoveWholeGPUs() }
func RemovePodAnnotation(k string) Op      { return workload.RemovePodAnnotation(k) }
func SetWholeGPUs(n int64) Op              { return workload.SetWholeGPUs(n) }

// Kinds are the workload kinds the editor sizes.
func Kinds() []string { return workload.Kinds() }

// WriteFile writes one changed file under root (see changes.WriteFile).
func WriteFile(root string, f File) error { return changes.WriteFile(root, f) }

// CheckFile checks that f can be written under root (see changes.CheckFile).
func CheckFile(root string, f File) error { return changes.CheckFile(root, f) }

// WriteFiles writes changed files under root (see changes.WriteFiles).
func WriteFiles(root string, files []File) []error { return changes.WriteFiles(root, files) }

// WriteAll writes changed files under root, all or nothing (see
// changes.WriteAll).
func WriteAll(root string, files []File) ([]error, bool) { return changes.WriteAll(root, files) }

// CheckFiles checks that files can be written under root (see
// changes.CheckFiles).
func CheckFiles(root string, files []File) []error { return changes.CheckFiles(root, files) }

// Sentinel errors. Refusals and problems wrap one of them, so callers can
// classify with errors.Is; each part of the editor defines its own.
var (
	ErrInvalidYAML     = splice.ErrInvalidYAML
	ErrConflictMarkers = splice.ErrConflictMarkers
	ErrDuplicateKey    = splice.ErrDuplicateKey
	ErrAlias           = splice.ErrAlias
	ErrTemplate        = splice.ErrTemplate
	ErrUnsupported     = splice.ErrUnsupported
	ErrVerify          = splice.ErrVerify

	ErrUnsupportedKind      = workload.ErrUnsupportedKind
	ErrNotFound             = workload.ErrNotFound
	ErrAmbiguous            = workload.ErrAmbiguous
	ErrInvalidValue         = workload.ErrInvalidValue
	ErrKVCacheBytes         = workload.ErrKVCacheBytes
	ErrNoVLLMCommand        = workload.ErrNoVLLMCommand
	ErrSeveralGPUContainers = workload.ErrSeveralGPUContainers
	ErrNotGPUContainer      = workload.ErrNotGPUContainer
	ErrOutsideRoot          = checkout.ErrOutsideRoot
	ErrChangedOnDisk        = changes.ErrChangedOnDisk
	ErrInvalidName          = workload.ErrInvalidName
	ErrGroupMismatch        = workload.ErrGroupMismatch
	ErrUnsizedPods          = workload.ErrUnsizedPods
	ErrObjectAnnotation     = workload.ErrObjectAnnotation
	ErrServiceAnnotation    = workload.ErrServiceAnnotation
	ErrTemplateElsewhere    = workload.ErrTemplateElsewhere

	ErrKustomize = kustomize.ErrKustomize
	ErrHelm      = helm.ErrHelm
)
