// Command kube-apiserver is the Kubernetes API server of k8s.io/kubernetes
// v1.34.4, built as a module of its own so that the tests of
// internal/testenv/kubeenv can run a real API server without a container runtime
// or a downloaded release. scripts/install-test-deps.sh builds it once into
// a cache outside the work tree; its go.mod stays out of the main module,
// so the main module's build, vet and staticcheck never see it.
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones, as upstream's main does

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
