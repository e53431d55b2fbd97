#!/usr/bin/env bash
# The GitOps loop on a laptop, no cluster: a real etcd and kube-apiserver,
# a git server, and Flux's real source-, kustomize- and helm-controller
# (built once by scripts/install-test-deps.sh), all on 127.0.0.1. The
# recommender opens pull requests on a fake GitHub backed by that git
# server, a reviewer merges them, Flux applies main, and the live
# Deployments show the new values. It is the plain-manifest case of
# TestGitOpsLoop (internal/run/gitops_test.go), narrated.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-test-deps.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/run.test" ./internal/run
cd internal/run
RECOMMENDER_DEMO=1 RECOMMENDER_TEST_STRICT=1 "$dir/run.test" -test.run '^TestGitOpsLoop$/^plain_manifests$' -test.count=1
