package main

import (
	"github.com/spf13/pflag"

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
	fs.StringVar(&l.Kubeconfig, "kubeconfig", "", "reach the cluster with this kubeconfig `file` (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account)")
}
