package localfile

import (
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Kubeconfig loads the kubeconfig file at path as client-go's loader
// does (its current context; paths in it relative to its directory), read
// within MaxConfig. The files it names (certificates, a token file) are
// read by client-go.
func Kubeconfig(path string) (*rest.Config, error) {
	b, err := Read(path, MaxConfig)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Clusters {
		c.LocationOfOrigin = abs
	}
	for _, a := range cfg.AuthInfos {
		a.LocationOfOrigin = abs
	}
	for _, c := range cfg.Contexts {
		c.LocationOfOrigin = abs
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, err
	}
	return clientcmd.NewNonInteractiveClientConfig(*cfg, cfg.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
}
