#!/usr/bin/env bash
# Replays one-change variants of the guide policies, to measure each change
# on its own (BENCHMARKS.md, "Improving the default"). Each variant is the
# quickstart's policy file moved to the project's API group, with one edit.
# The live fast path is no variant: every strategy is replayed with and
# without it (BENCHMARKS.md, "Set-up").
# Usage: scripts/backtest-variants.sh TRACES_DIR OUT_DIR
set -euo pipefail
traces=${1:?traces directory}
out=${2:?output directory}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

base=examples/quickstart/policies/kai-gpu-sharing.yaml
guide="$dir/guide.yaml"
sed 's#rightsizing.kubex.ai/v1alpha1#gpu-rightsizing.github.io/v1alpha1#' "$base" >"$guide"

# variant NAME SED-SCRIPT: the guide with one edit.
variant() { sed "$2" "$guide" >"$dir/$1.yaml"; }
# Fields of the strategy go after podEviction; fields of the proactive
# policy before its automationStrategyRef (the first one in the file
# after "kind: ClusterProactivePolicy").
strategy() { variant "$1" "/^  podEviction:/{n;a\\
  gitops:\\
    $2
}"; }
proactive() { variant "$1" "/^kind: ClusterProactivePolicy/,/^  automationStrategyRef:/{/^  automationStrategyRef:/i\\
  $2
}"; }

strategy mc10 "minChangePercent: 10"
proactive p99 "computePercentile: 99"
proactive p95 "computePercentile: 95"
proactive h10 "headroomPercent: 10"
proactive p90 "computePercentile: 90"
proactive mh12 "minHistory: 12h"
variant sb1h 's/metricsWindow: 10m/metricsWindow: 1h/'
variant sb6h 's/metricsWindow: 10m/metricsWindow: 6h/'

policies=()
for v in guide mc10 p99 p95 p90 h10 mh12 sb1h sb6h; do
	if [ "$v" != guide ] && cmp -s "$guide" "$dir/$v.yaml"; then
		echo "variant $v did not change the policy" >&2
		exit 1
	fi
	policies+=(--policies "$v=$dir/$v.yaml")
done

run() {
	local name=$1
	shift
	echo "== $name: $*"
	go run ./cmd/recommender backtest "${policies[@]}" --out "$out/$name" "$@"
	echo
}
run gentd26-from-one-gpu --traces "$traces/usage.csv" --start 1
run gentd26-from-half-gpu --traces "$traces/usage.csv" --start 0.5
run llm-fitting-one-gpu --traces "$traces/usage_derived_llm.csv.gz" --max-peak 100 --start 1
