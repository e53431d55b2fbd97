#!/usr/bin/env bash
# Replays the shared traces through the guide's policies, the recommended
# ones and the baselines, in the scenarios docs/benchmarks/quality.md reports, under the
# protocol (docs/backtest/protocol.md).
# Usage: scripts/backtest.sh TRACES_DIR OUT_DIR [FRESH_DIR]
#   FRESH_DIR holds usage_fresh_servegen.csv (scripts/fresh-traces.sh);
#   TRACES_DIR by default.
set -euo pipefail
traces=${1:?traces directory}
out=${2:?output directory}
fresh=${3:-$traces}
# The copies the benchmarks were made from (docs/backtest/traces.md).
declare -A want=(
	[usage.csv]=fa4a68bd805b3d3ef87db6d129e3259c6625270729b8653dc819bd4e7e3dab70
	[usage_derived_llm.csv.gz]=09a4824df1a07efb4bd73abf1a9cf99c3ef14732f0a857a2e6051f3af7357dad
	[usage_fresh_servegen.csv]=e4e76dd1bfb9649454a135ef1934efe589705f483f37233e9b57935dcfd4d114
)
for f in usage.csv usage_derived_llm.csv.gz usage_fresh_servegen.csv; do
	dir=$traces
	[ "$f" = usage_fresh_servegen.csv ] && dir=$fresh
	[ -f "$dir/$f" ] || { echo "backtest: $dir/$f not found (set TRACES=dir FRESH=dir; docs/backtest/traces.md)" >&2; exit 1; }
	got=$(sha256sum "$dir/$f" | cut -d' ' -f1)
	if [ "$got" != "${want[$f]}" ]; then
		# The fresh data is scored once, on the file the protocol froze.
		[ "$f" = usage_fresh_servegen.csv ] && { echo "backtest: $dir/$f is not the file the protocol froze (sha256 $got)" >&2; exit 1; }
		echo "backtest: warning: $dir/$f is not the copy docs/benchmarks/quality.md was made from (sha256 $got): the figures will differ" >&2
	fi
done
policies=(--protocol docs/backtest/protocol.md --policies kubex-guide=examples/quickstart/policies --policies recommended=examples/policies/recommended.yaml)
# The risk knob's settings, most cautious first: the frontier
# (docs/backtest/protocol.md).
frontier=()
for r in 1 2 3 4 5 7 10 12 15 20 30 50; do
	frontier+=(--policies "risk-$r=examples/policies/risk/breach-risk-$r.yaml" --frontier "risk-$r")
done

run() {
	local name=$1
	shift
	echo "== $name: $*"
	go run ./cmd/recommender backtest "${policies[@]}" --out "$out/$name" "$@"
	echo
}
# Real: Alibaba GenTD26, one day of 133 diffusion-serving pods.
run gentd26-from-one-gpu "${frontier[@]}" --traces "$traces/usage.csv" --start 1
run gentd26-from-half-gpu "${frontier[@]}" --traces "$traces/usage.csv" --start 0.5
# The same job every 15 minutes: what a shorter schedule buys, and what
# it costs in pull requests opened and updated.
run gentd26-from-half-gpu-every-15m --traces "$traces/usage.csv" --start 0.5 --cadence 15m
# Derived: LLM serving demand modelled from request traces (14 days).
run llm-fitting-one-gpu "${frontier[@]}" --traces "$traces/usage_derived_llm.csv.gz" --max-peak 100 --start 1
run llm-fitting-one-gpu-every-15m --traces "$traces/usage_derived_llm.csv.gz" --max-peak 100 --start 1 --cadence 15m
run llm-all "${frontier[@]}" --traces "$traces/usage_derived_llm.csv.gz" --start 1 --plot servegen-m-small-c002
# Fresh: ServeGen clients no setting has seen, every one held
# (docs/backtest/protocol.md).
# The frontier's settings were chosen on the tune half of the LLM scenario
# each matches.
run fresh-fitting-one-gpu "${frontier[@]}" --frontier-from "$out/llm-fitting-one-gpu/frontier.json" --fresh \
	--traces "$fresh/usage_fresh_servegen.csv" --max-peak 100 --start 1
run fresh-all "${frontier[@]}" --frontier-from "$out/llm-all/frontier.json" --fresh --traces "$fresh/usage_fresh_servegen.csv" --start 1

# docs/benchmarks/quality.md shows each scenario's results.md between
# "<!-- backtest-results NAME -->" and "<!-- /backtest-results -->", its
# verdicts.md between "<!-- backtest-verdicts NAME -->" and
# "<!-- /backtest-verdicts -->", and its frontier.md between
# "<!-- backtest-frontier NAME -->" and "<!-- /backtest-frontier -->";
# TestBenchmarksMatchResults (internal/backtest) checks that they agree;
# TestBenchmarksSummary, that BENCHMARKS.md's summary says what they show
# (go test ./internal/backtest -run TestBenchmarksSummary -update-summary
# rewrites it).
if [ "$out" = docs/backtest ]; then
	tmp=$(mktemp)
	awk -v dir="$out" '
		/^<!-- \/backtest-(results|verdicts|frontier) -->$/ { skip = 0 }
		!skip { print }
		/^<!-- backtest-(results|verdicts|frontier) [^ ]+ -->$/ {
			kind = $2
			sub(/^backtest-/, "", kind)
			f = dir "/" $3 "/" kind ".md"
			while ((getline line < f) > 0) print line
			close(f)
			skip = 1
		}' docs/benchmarks/quality.md >"$tmp"
	mv "$tmp" docs/benchmarks/quality.md
	go test ./internal/backtest -run '^TestBenchmarksSummary$' -count=1 -update-summary
fi
