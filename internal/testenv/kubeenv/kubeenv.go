// Package kubeenv runs a real Kubernetes control plane for tests: a
// kube-apiserver and etcd (StartAPIServer), with the upstream CRDs the
// recommender reads (KAI's Queue, Argo CD's Application, Argo Rollouts'
// Rollout, LeaderWorkerSet, Dynamo's DynamoGraphDeployment) in testdata/,
// Flux's real source-, kustomize- and helm-controller against it
// (StartFlux), and the real kube-state-metrics (StartKubeStateMetrics),
// whose output the usage tests read. No controller or kubelet runs, so
// CreateNode and CreateWorkload make what they would: a node's capacity,
// a Deployment's ReplicaSet and pods, a StatefulSet's pods, each pod's
// phase. It also holds the GPU workload fixtures the tests share
// (Deployment, testdata/kinds).
//
// Like testenv, a missing program skips the test, or fails it under
// testenv.StrictEnv.
package kubeenv

import (
	"context"
	"net/http"
)

func getCtx(ctx context.Context, client *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}
