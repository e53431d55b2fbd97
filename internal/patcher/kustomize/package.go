// Package kustomize finds the workloads kustomizations build and edits
// them where their values are defined. The kustomizations of a checkout
// are indexed and bounded once (no remote reference, no cycle, no
// expansion past the bounds), the roots built in memory with krusty (each
// build, and all of a run's together, within a time bound), and
// every built workload traced to the file and document it came from. An
// edit goes to the patch that sets the field, to the base when every
// overlay that builds it wants the same, or to a new patch, and is proven
// by building every root that reads an edited file again, or, for overlays
// alike but for their namespace, by building one of them.
//
// It is one job in about 2,900 lines: what kustomize builds, traced,
// edited and proven. Placement and proof read the same index of builds,
// and neither is of use without the other.
package kustomize
