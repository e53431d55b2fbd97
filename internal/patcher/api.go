package patcher

import (
	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// The types callers outside the editor name, defined where the editor's
// parts share them (packages workload and changes); aliases, so a value
// is the same on both sides. The editor's own parts and tests use those
// packages directly, its sentinel errors among them.
type (
	Workload  = workload.Workload
	GPU       = workload.GPU
	Container = workload.Container
	Edit      = workload.Edit
	Result    = workload.Result
	Refusal   = workload.Refusal
	Note      = workload.Note
	Problem   = workload.Problem
	File      = changes.File
)

// The Ops, by constructor (workload documents each).

func SetGPUFraction(v string) workload.Op           { return workload.SetGPUFraction(v) }
func SetVLLMMemoryUtilization(v string) workload.Op { return workload.SetVLLMMemoryUtilization(v) }
func SetGPUMemory(mib int64) workload.Op            { return workload.SetGPUMemory(mib) }
func SetSchedulerName(name string) workload.Op      { return workload.SetSchedulerName(name) }
func SetPodLabel(k, v string) workload.Op           { return workload.SetPodLabel(k, v) }
func SetWorkloadLabel(k, v string) workload.Op      { return workload.SetWorkloadLabel(k, v) }
func RemoveWholeGPUs() workload.Op                  { return workload.RemoveWholeGPUs() }
func RemovePodAnnotation(k string) workload.Op      { return workload.RemovePodAnnotation(k) }
func SetWholeGPUs(n int64) workload.Op              { return workload.SetWholeGPUs(n) }

// Kinds are the workload kinds the editor sizes.
func Kinds() []string { return workload.Kinds() }

// WriteAll writes changed files under root, all or nothing (see
// changes.WriteAll).
func WriteAll(root string, files []File) ([]error, bool) { return changes.WriteAll(root, files) }
