#!/usr/bin/env bash
# Replays the shared traces through the guide's policies, the recommended
# ones and the baselines, in the scenarios BENCHMARKS.md reports.
# Usage: scripts/backtest.sh TRACES_DIR OUT_DIR
set -euo pipefail
traces=${1:?traces directory}
out=${2:?output directory}
for f in usage.csv usage_derived_llm.csv.gz; do
	[ -f "$traces/$f" ] || { echo "backtest: $traces/$f not found (set TRACES=dir)" >&2; exit 1; }
done
policies=(--policies kubex-guide=examples/quickstart/policies --policies recommended=examples/policies/recommended.yaml)

run() {
	local name=$1
	shift
	echo "== $name: $*"
	go run ./cmd/recommender backtest "${policies[@]}" --out "$out/$name" "$@"
	echo
}
# Real: Alibaba GenTD26, one day of 133 diffusion-serving pods.
run gentd26-from-one-gpu --traces "$traces/usage.csv" --start 1
run gentd26-from-half-gpu --traces "$traces/usage.csv" --start 0.5
# The same job every 15 minutes: what a shorter schedule buys, and what
# it costs in pull requests opened and updated.
run gentd26-from-half-gpu-every-15m --traces "$traces/usage.csv" --start 0.5 --cadence 15m
# Derived: LLM serving demand modelled from request traces (14 days).
run llm-fitting-one-gpu --traces "$traces/usage_derived_llm.csv.gz" --max-peak 100 --start 1
run llm-fitting-one-gpu-every-15m --traces "$traces/usage_derived_llm.csv.gz" --max-peak 100 --start 1 --cadence 15m
run llm-all --traces "$traces/usage_derived_llm.csv.gz" --start 1 --plot servegen-m-small-c002

# BENCHMARKS.md shows each scenario's results.md between
# "<!-- backtest-results NAME -->" and "<!-- /backtest-results -->", and
# its verdicts.md between "<!-- backtest-verdicts NAME -->" and
# "<!-- /backtest-verdicts -->"; TestBenchmarksMatchResults
# (internal/backtest) checks that they agree.
if [ "$out" = docs/backtest ]; then
	tmp=$(mktemp)
	awk -v dir="$out" '
		/^<!-- \/backtest-(results|verdicts) -->$/ { skip = 0 }
		!skip { print }
		/^<!-- backtest-(results|verdicts) [^ ]+ -->$/ {
			kind = $2
			sub(/^backtest-/, "", kind)
			f = dir "/" $3 "/" kind ".md"
			while ((getline line < f) > 0) print line
			close(f)
			skip = 1
		}' BENCHMARKS.md >"$tmp"
	mv "$tmp" BENCHMARKS.md
fi
