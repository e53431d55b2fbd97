package main

import (
	"context"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

// registerLive registers run's settings of the live fast path
// (docs/design.md §7, docs/live.md).
func registerLive(fs *pflag.FlagSet, l *run.Live) {
	fs.BoolVar(&l.Enabled, "live", false, "apply urgent upsizes to the live workloads at once (the six sized kinds: Deployments, StatefulSets, Rollouts, LeaderWorkerSets, InferenceServices, Dynamo services), where the policy sets gitops.liveUpsize (docs/live.md)")
	fs.IntVar(&l.MaxChanges, "live-max-changes", 3, "make at most this many live changes per run")
	fs.StringArrayVar(&l.Namespaces, "live-namespaces", nil, "change live only workloads in this `namespace` (repeatable; required with --live)")
	fs.BoolVar(&l.Force, "live-force-conflicts", false, "take a field another field manager owns (server-side apply's force) instead of reporting the conflict")
	fs.BoolVar(&l.RevertClosed, "live-revert-closed", false, "revert a live change to Git's value when its pull request is closed unmerged")
	fs.StringArrayVar(&l.Contexts, "live-context", nil, "reach a cluster of the repository's ClusterMap through a context of the kubeconfig, as `CLUSTER=CONTEXT` (repeatable; docs/clusters.md)")
	fs.StringVar(&l.Kubeconfig, "kubeconfig", "", "reach the cluster with this kubeconfig `file` (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)")
}

// checkLiveContexts is the live path's part of `config validate
// --check-files`, when it names contexts: each is in the kubeconfig, and
// with SCM local, each cluster of the repository's ClusterMap that
// deploys a workload has one. A cluster without would have its urgent
// upsizes refused at run time.
func checkLiveContexts(ctx context.Context, o *runOptions) []error {
	if !o.Live.Enabled || len(o.Live.Contexts) == 0 {
		return nil
	}
	var errs []error
	if err := o.Live.CheckContexts(); err != nil {
		errs = append(errs, err)
	}
	if o.SCM != "local" {
		return errs
	}
	v, err := plan.Validate(ctx, plan.Options{Repo: o.Repo, PolicyPaths: o.PolicyPaths,
		DefaultNamespace: o.DefaultNamespace, Filter: o.Options.Filter})
	if err != nil {
		// `policy validate` says what is wrong with the repository.
		return errs
	}
	var refs []string
	for _, w := range v.Workloads {
		refs = append(refs, w.Ref.String())
	}
	if cs := o.Live.Uncontexted(refs); len(cs) > 0 {
		errs = append(errs, config.FlagErrorf("`--live-context` names no context for cluster %s of the ClusterMap in %s: its urgent upsizes could not go live",
			strings.Join(cs, ", "), o.Repo))
	}
	return errs
}
