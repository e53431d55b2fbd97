#!/usr/bin/env bash
# Judges candidate changes to the recommended policies out of sample
# (BENCHMARKS.md, "Candidates judged out of sample"): each candidate is
# examples/policies/recommended.yaml with one edit, replayed beside it
# with --against recommended, which pairs it with recommended per workload
# on each half of the backtest's split (candidates.md).
# Usage: scripts/backtest-candidates.sh TRACES_DIR OUT_DIR [CANDIDATE...]
set -euo pipefail
traces=${1:?traces directory}
out=${2:?output directory}
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
base=examples/policies/recommended.yaml

edited=$base
# shellcheck source=scripts/policy-edits.sh
. "$(dirname "$0")/policy-edits.sh"

strategy mc10 "minChangePercent: 10"
proactive p99 "computePercentile: 99"
# Memory on a forecast of the next day's peak, at three percentiles of the
# daily peaks: the tune half picks one, the held half judges it.
proactive md90 "memoryDailyPeakPercentile: 90"
proactive md75 "memoryDailyPeakPercentile: 75"
proactive md50 "memoryDailyPeakPercentile: 50"
# The short-history headroom narrowed over a day or a few, not the week:
# the GenTD26 pods live under a day.
proactive cw1d "memoryConfidenceWindow: 1d"
proactive cw2d "memoryConfidenceWindow: 2d"
proactive cw3d "memoryConfidenceWindow: 3d"

all=(mc10 p99 md90 md75 md50 cw1d cw2d cw3d)
names=("${@:-${all[@]}}")
policies=(--protocol docs/backtest/protocol.md --policies recommended="$base")
for v in "${names[@]}"; do
	[ -f "$dir/$v.yaml" ] || { echo "no candidate $v (candidates: ${all[*]})" >&2; exit 2; }
	if cmp -s "$base" "$dir/$v.yaml"; then
		echo "candidate $v did not change the policy" >&2
		exit 1
	fi
	policies+=(--policies "$v=$dir/$v.yaml")
done

run() {
	local name=$1
	shift
	echo "== $name: $*"
	go run ./cmd/recommender backtest "${policies[@]}" --against recommended --out "$out/$name" "$@" >/dev/null
	cat "$out/$name/candidates.md"
	echo
}
run gentd26-from-one-gpu --traces "$traces/usage.csv" --start 1
run gentd26-from-half-gpu --traces "$traces/usage.csv" --start 0.5
run llm-fitting-one-gpu --traces "$traces/usage_derived_llm.csv.gz" --max-peak 100 --start 1
run llm-all --traces "$traces/usage_derived_llm.csv.gz" --start 1
