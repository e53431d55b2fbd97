package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/fastpath"
	"github.com/gpu-rightsizing/recommender/internal/live"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// liveFlags are run's settings of the live fast path (docs/design.md §7, docs/live.md).
type liveFlags struct {
	Enabled      bool
	MaxChanges   int
	Namespaces   []string
	Force        bool
	RevertClosed bool
	Kubeconfig   string
}

func (l *liveFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&l.Enabled, "live", false, "apply urgent upsizes to the live workloads at once (Deployments, StatefulSets, Rollouts, LeaderWorkerSets), where the policy sets gitops.liveUpsize (docs/live.md)")
	fs.IntVar(&l.MaxChanges, "live-max-changes", 3, "make at most this many live changes per run")
	fs.StringArrayVar(&l.Namespaces, "live-namespaces", nil, "change live only workloads in this `namespace` (repeatable; required with --live)")
	fs.BoolVar(&l.Force, "live-force-conflicts", false, "take a field another field manager owns (server-side apply's force) instead of reporting the conflict")
	fs.BoolVar(&l.RevertClosed, "live-revert-closed", false, "revert a live change to Git's value when its pull request is closed unmerged")
	fs.StringVar(&l.Kubeconfig, "kubeconfig", "", "reach the cluster with this kubeconfig `file` (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)")
}

func (l *liveFlags) check() error {
	if l.MaxChanges < 0 {
		return config.FlagErrorf("`--live-max-changes` must be 0 or more, got %d", l.MaxChanges)
	}
	if len(l.Namespaces) > 0 {
		if err := live.CheckNamespaces(l.Namespaces); err != nil {
			return config.FlagErrorf("`--live-namespaces`: %v", err)
		}
	}
	if !l.Enabled {
		return nil
	}
	if len(l.Namespaces) == 0 {
		return config.FlagErrorf("`--live` needs `--live-namespaces`: the namespaces whose workloads may be changed live")
	}
	return nil
}

// prepare starts the live stage of a run, nil when --live is off.
func (l *liveFlags) prepare(ctx context.Context, p *plan.Plan, dryRun bool, now func() time.Time) (*fastpath.Stage, error) {
	if !l.Enabled {
		return nil, nil
	}
	return fastpath.Prepare(ctx, p, fastpath.Options{Namespaces: l.Namespaces, MaxChanges: l.MaxChanges, Force: l.Force,
		RevertClosed: l.RevertClosed, Kubeconfig: l.Kubeconfig, DryRun: dryRun, Now: now})
}
