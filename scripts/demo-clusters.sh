#!/usr/bin/env bash
# Two clusters from one repository, with no cluster: examples/clusters
# (Flux's fleet-infra layout and its ClusterMap) and its recording of one
# store holding both clusters under the label `cluster`. Shows the map
# `clusters suggest` drafts, the plan with a row per (cluster, workload),
# then `run --scm local` on a git copy: a branch and a pull request (as
# files) per cluster's change. DEMO_KEEP=1 keeps the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
recommender=${RECOMMENDER:-go run ./cmd/recommender}
metrics=examples/clusters/metrics.om.gz
repo=$(mktemp -d)
[ -n "${DEMO_KEEP:-}" ] || trap 'rm -rf "$repo"' EXIT

echo "== the map clusters suggest drafts from the Flux Kustomizations (clusters.yaml is the one committed)"
$recommender clusters suggest --repo examples/clusters
echo
echo "== the plan: a row per (cluster, workload), each on its own cluster's usage"
$recommender plan --repo examples/clusters --metrics-file "$metrics"
echo

cp -r examples/clusters/. "$repo"
rm "$repo/metrics.om.gz"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=demo -c user.email=demo@example.com commit -q -m "fleet"
echo "== run --scm local: a branch and a pull request per (cluster, workload)"
$recommender run --scm local --repo "$repo" --metrics-file "$metrics" --output table --log-level warn
echo
echo "== each branch and the files it changes"
for branch in $(git -C "$repo" branch --list 'gpu-rightsizing/*' --format '%(refname:short)'); do
	echo "$branch"
	git -C "$repo" diff --name-only main..."$branch" | sed 's/^/    /'
done
echo
echo "== the pull request of prod-us's summarize, its first lines"
grep -l 'branch gpu-rightsizing/prod-us/inference/summarize ' "$repo/.git/gpu-rightsizing/pulls/"*.md | xargs head -n 12
[ -z "${DEMO_KEEP:-}" ] || echo "kept: $repo"
