// Package live is the emergency fast path of docs/design.md §7: an urgent upsize
// applied to the live workload at once (a Deployment, StatefulSet, Argo
// Rollout, LeaderWorkerSet, KServe InferenceService, or one service of an
// NVIDIA Dynamo graph), by server-side apply under the
// tool's own field manager, while its pull request catches Git up. It owns
// only the fields it changes (the pod template's gpu-fraction annotation,
// and the vLLM container's args when the Git edit changes
// --gpu-memory-utilization), never downsizes, never goes beyond the rules,
// reports another manager's field instead of taking it unless told to,
// and marks every change on the object so that a later run can let go
// of it once Git holds it, or revert it when its pull request was closed.
//
// It is one job in about 2,600 lines: one live change, from its apply to
// its release. Every kind it applies to shares the safety rules, the
// marker and the reconcile.
package live

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Names the tool writes into the cluster.
const (
	// FieldManager owns the fields of a live change: Argo CD's
	// ignoreDifferences.managedFieldsManagers names it.
	FieldManager = "gpu-rightsizing-recommender"
	// HandoffManager keeps the value of a released field that no manager
	// had applied before the live change (the marker's Owners is empty):
	// once Git holds a live change, FieldManager lets go of it, and this
	// manager, which no GitOps set-up ignores, keeps the field from being
	// deleted with it. Fields some manager had applied go back to it.
	HandoffManager = "gpu-rightsizing-recommender-handoff"
	// MarkerAnnotation, on the Deployment's own metadata (not the pod
	// template's, which would roll it again), holds what a live change did
	// as JSON.
	MarkerAnnotation = "gpu-rightsizing.dev/live-upsize"
)

// ErrForbidden is wrapped by every error of a request RBAC refused.
var ErrForbidden = errors.New("forbidden")

// Client talks to one cluster.
type Client struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// NewClient connects to the cluster cfg describes.
func NewClient(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = FieldManager
	}
	// client-go's default of 5 requests a second would make each upsize
	// (three or four requests) wait on the client's own limiter; a run
	// makes a few dozen requests at most, and the server's priority and
	// fairness still bounds them.
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 100
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Client{kube: kube, dyn: dyn}, nil
}

// RESTConfig is the cluster to talk to: the kubeconfig file when one is
// named, else the pod's service account (in-cluster).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no kubeconfig given and not in a cluster (%w): set `--kubeconfig`", err)
	}
	return cfg, nil
}

// apiError names the request a server refused: "patch deployments in
// namespace inference: forbidden: ...", so that a missing RBAC rule reads
// as one.
func apiError(verb, resource, namespace string, err error) error {
	where := verb + " " + resource
	if namespace != "" {
		where += " in namespace " + namespace
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s: %w: %s", where, ErrForbidden, serverMessage(err))
	}
	return fmt.Errorf("%s: %w", where, err)
}

// serverMessage is the status message of an API error without the
// reason client-go repeats in front of it.
func serverMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return strings.TrimSpace(err.Error())
}
