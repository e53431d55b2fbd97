#!/usr/bin/env bash
# The fleet report on the quickstart, with no cluster: a copy of the
# quickstart with examples/fleet's GpuConsolidationPolicy, and the
# quickstart's recording with what kube-state-metrics and HAMi say of a
# pool of three GPU nodes (examples/fleet/cluster.om). Prints the report
# (consolidation, rollout room, noisy neighbours), then the dashboard's
# body as `run` would keep it. DEMO_KEEP=1 keeps the files.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
[ -n "${DEMO_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

cp -r examples/quickstart/. "$work/repo"
rm "$work/repo/metrics.om"
cp examples/fleet/consolidation.yaml "$work/repo/policies/"
{ sed '/^# EOF$/d' examples/quickstart/metrics.om; cat examples/fleet/cluster.om; } > "$work/fleet.om"

report() { go run ./cmd/recommender report --repo "$work/repo" --metrics-file "$work/fleet.om" --placement metrics "$@"; }
echo "== the fleet report, the placement read from kube-state-metrics' series"
report
echo
echo "== the same as the dashboard's body (report -o markdown)"
report -o markdown
