#!/usr/bin/env bash
# Runs `recommender run --scm local` twice on a git copy of the quickstart:
# the first run opens a branch and a pull request (as files) per changed
# workload, the second writes nothing. DEMO_KEEP=1 keeps the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(mktemp -d)
[ -n "${DEMO_KEEP:-}" ] || trap 'rm -rf "$repo"' EXIT

cp -r examples/quickstart/. "$repo"
rm "$repo/metrics.om"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=demo -c user.email=demo@example.com commit -q -m "quickstart"

run() { go run ./cmd/recommender run --scm local --repo "$repo" --metrics-file examples/quickstart/metrics.om --output table "$@"; }
echo "== first run: a branch and a pull request per changed workload"
run
echo
echo "== second run, same inputs: nothing to write"
run
echo
echo "== branches"
git -C "$repo" branch --list 'gpu-rightsizing/*'
first=$(ls "$repo/.git/gpu-rightsizing/pulls/"*.md | head -1)
echo
echo "== $first"
cat "$first"
[ -z "${DEMO_KEEP:-}" ] || echo "kept: $repo"
