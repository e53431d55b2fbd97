#!/usr/bin/env bash
# Replays one-change variants of the guide policies, to measure each change
# on its own (BENCHMARKS.md, "Improving the default"). Each variant is the
# quickstart's policy file moved to the project's API group with
# gitops.liveUpsize on (so that the "+ live fast path" delivery has a fast
# path to use: the replay honours the policy's setting), and one edit.
# Usage: scripts/backtest-variants.sh TRACES_DIR OUT_DIR
set -euo pipefail
traces=${1:?traces directory}
out=${2:?output directory}
dir=${VARIANTS_DIR:-$(mktemp -d)}
trap 'rm -rf "$dir"' EXIT

base=examples/quickstart/policies/kai-gpu-sharing.yaml
guide="$dir/guide.yaml"
sed -e 's#rightsizing.kubex.ai/v1alpha1#gpu-rightsizing.github.io/v1alpha1#' \
	-e '/^  podEviction:/{n;a\
  gitops:\
    liveUpsize: true
}' "$base" >"$guide"
grep -q 'liveUpsize: true' "$guide" || { echo "could not turn liveUpsize on" >&2; exit 1; }

edited=$guide
# shellcheck source=scripts/policy-edits.sh
. "$(dirname "$0")/policy-edits.sh"

strategy mc10 "minChangePercent: 10"
proactive p99 "computePercentile: 99"
proactive p95 "computePercentile: 95"
proactive p90 "computePercentile: 90"
proactive h10 "headroomPercent: 10"
proactive mh12 "minHistory: 12h"
proactive mh6 "minHistory: 6h"
proactive mw14 "memoryWindow: 14d"
proactive mc100 "memoryConfidenceHeadroomPercent: 100"
proactive mc100mh6 "memoryConfidenceHeadroomPercent: 100" "minHistory: 6h"
proactive mc100mh3 "memoryConfidenceHeadroomPercent: 100" "minHistory: 3h"
proactive mc200mh6 "memoryConfidenceHeadroomPercent: 200" "minHistory: 6h"
proactive recp95 "memoryWindow: 14d" "memoryConfidenceHeadroomPercent: 100" "minHistory: 6h" "computePercentile: 95"
proactive rech15p99 "memoryWindow: 14d" "memoryConfidenceHeadroomPercent: 100" "minHistory: 6h" "headroomPercent: 15" "computePercentile: 99"
variant sb1h 's/metricsWindow: 10m/metricsWindow: 1h/'

names=(guide mc10 p99 p95 p90 h10 mh12 mh6 mw14 mc100 mc100mh6 mc100mh3 mc200mh6 recp95 rech15p99 sb1h)
policies=()
for v in "${names[@]}"; do
	if [ "$v" != guide ] && cmp -s "$guide" "$dir/$v.yaml"; then
		echo "variant $v did not change the policy" >&2
		exit 1
	fi
	policies+=(--policies "$v=$dir/$v.yaml")
done
# The recommended policies themselves, beside their one-change parts.
policies+=(--policies recommended=examples/policies/recommended.yaml)

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
run llm-all --traces "$traces/usage_derived_llm.csv.gz" --start 1
