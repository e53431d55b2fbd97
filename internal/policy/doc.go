// Package policy reads the policy files kept in a repository: Kubex's
// ClusterAutomationStrategy, ProactivePolicy and ReactivePolicy, and the
// project's own GpuConsolidationPolicy.
//
// Decoding is strict and every problem names its file, line, column and
// field. A policy that fails to load governs nothing, so what it would
// have governed is left alone. Governance says which engine.Rules govern a
// workload, or the cause it is left alone.
package policy
