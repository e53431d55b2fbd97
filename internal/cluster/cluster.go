// Package cluster is how the tool reaches a Kubernetes API server, and
// what it reads there for more than one stage: KAI's queues.
//
// The connection is found as kubectl, Helm and KRR find it, by
// clientcmd's loading rules. First the kubeconfig a flag names, then the
// files $KUBECONFIG lists, then ~/.kube/config, then the pod's service
// account. A context name picks one of a kubeconfig's contexts, so that
// a map of clusters can name each by its context. Nothing here writes a
// kubeconfig.
package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"

	"github.com/gpu-rightsizing/recommender/internal/localfile"
)

// Options say which cluster to reach.
type Options struct {
	// Kubeconfig is a kubeconfig file (`--kubeconfig`); "" follows
	// $KUBECONFIG, then ~/.kube/config, then the pod's service account.
	Kubeconfig string
	// Context is the kubeconfig's context to use; "" is its
	// current-context.
	Context string
}

// Config is the connection o names, as kubectl would load it.
func Config(o Options) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		// clientcmd fixes the home file when the process starts; this
		// reads $HOME when asked, as the rest of the rules read the
		// environment.
		rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	// kubectl moves a kubeconfig of an old name into place: a
	// recommender run writes no file of the user's.
	rules.MigrationRules = nil
	// A $KUBECONFIG naming no file is told by the error below, not by
	// a klog line on stderr.
	rules.WarnIfAllMissing = false
	// clientcmd reads a kubeconfig whole, whatever it is: each one it
	// would read is first held to localfile's bounds (a regular file of
	// at most MaxConfig), so /dev/zero or a FIFO never reaches it.
	for _, path := range append([]string{rules.ExplicitPath}, rules.Precedence...) {
		if path == "" {
			continue
		}
		if _, err := localfile.Read(path, localfile.MaxConfig); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	cfg, err := cc.ClientConfig()
	switch {
	case err == nil:
		return cfg, nil
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("no kubeconfig given, none in $KUBECONFIG or ~/.kube/config, and not in a cluster (%w): set `--kubeconfig`", rest.ErrNotInCluster)
	case o.Kubeconfig != "":
		return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
	}
	return nil, fmt.Errorf("kubeconfig: %w", err)
}

// Clients are the typed and the dynamic client of the connection cfg.
func Clients(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return kube, dyn, nil
}

// Connect is Config, then Clients.
func Connect(o Options) (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := Config(o)
	if err != nil {
		return nil, nil, err
	}
	return Clients(cfg)
}

// errNotNumber says a queue's field holds something other than a number.
var errNotNumber = errors.New("not a number")
