package main

import (
	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// filterFlags narrow plan and run to some workloads, before any usage is
// read.
type filterFlags struct {
	Namespaces []string
	Selector   string
	Workloads  []string
	Clusters   []string
}

func (ff *filterFlags) register(f *pflag.FlagSet) {
	f.StringArrayVar(&ff.Namespaces, "namespace", nil, "only workloads in this `namespace`, a name or a pattern such as team-* (repeatable)")
	f.StringVar(&ff.Selector, "selector", "", "only workloads whose labels match this label `selector`, e.g. 'team=a,tier in (gpu),!canary'")
	f.StringArrayVar(&ff.Workloads, "workload", nil, "only this workload: `namespace/Kind/name`, namespace/name or name, each part a name or a pattern, after cluster: with a ClusterMap (repeatable)")
	f.StringArrayVar(&ff.Clusters, "cluster", nil, "only the workloads of this `cluster` of the repository's ClusterMap (repeatable): a job per cluster")
}

// filter checks the flags and returns the filter they make; each mistake
// names its flag.
func (ff *filterFlags) filter() (plan.Filter, error) {
	if err := plan.CheckNamespaces(ff.Namespaces); err != nil {
		return plan.Filter{}, config.FlagErrorf("invalid `--namespace`: %w", err)
	}
	if err := plan.CheckWorkloads(ff.Workloads); err != nil {
		return plan.Filter{}, config.FlagErrorf("invalid `--workload`: %w", err)
	}
	if err := plan.CheckClusters(ff.Clusters); err != nil {
		return plan.Filter{}, config.FlagErrorf("invalid `--cluster`: %w", err)
	}
	sel, err := plan.ParseSelector(ff.Selector)
	if err != nil {
		return plan.Filter{}, config.FlagErrorf("invalid `--selector`: %w", err)
	}
	return plan.Filter{Namespaces: ff.Namespaces, Selector: sel, Workloads: ff.Workloads, Clusters: ff.Clusters}, nil
}
