#!/usr/bin/env bash
# Makes the fresh data of docs/backtest/protocol.md: the ServeGen clients no
# earlier trace file holds, active in at least 10 % of their windows, their
# GPU demand derived by the traces' documented model, unchanged
# (docs/backtest/traces.md). It runs the traces' own scripts and checks the
# result's sha256.
# Usage: scripts/fresh-traces.sh SERVEGEN TRACES_DIR OUT_DIR
#   SERVEGEN   a checkout of github.com/alibaba/ServeGen, or its bare git
#              directory, at f891d1189eb32b3868dfc443800c4150548c282a
#   TRACES_DIR the traces of docs/backtest/traces.md, with scripts/ and raw/
set -euo pipefail
servegen=${1:?ServeGen checkout or git directory}
traces=$(cd "${2:?traces directory}" && pwd)
out=${3:?output directory}
want=e4e76dd1bfb9649454a135ef1934efe589705f483f37233e9b57935dcfd4d114
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every client of the language and reasoning models; multimodal clients
# have no token counts the model can read.
python3 "$traces/scripts/extract_servegen.py" --servegen-dir "$servegen" \
	--categories language,reason --min-active 0 --out "$tmp/all.csv.gz"
# Those not in the LLM file, with a request rate above 0 in at least 10 %
# of their windows.
zcat "$traces/usage_derived_llm.csv.gz" | awk -F, 'NR > 1 { print $1 }' | sort -u >"$tmp/used"
zcat "$tmp/all.csv.gz" | awk -F, 'NR > 1 { n[$1]++; if ($3 > 0) a[$1]++ }
	END { for (w in n) if (a[w] >= 0.1 * n[w]) print w }' | sort | comm -23 - "$tmp/used" >"$tmp/fresh"
zcat "$tmp/all.csv.gz" | awk -F, 'NR == FNR { keep[$1] = 1; next } FNR == 1 || ($1 in keep)' "$tmp/fresh" - |
	gzip -n >"$tmp/windows.csv.gz"
# The demand model reads the Azure traces from raw/ wherever it runs; its
# two Azure workloads are not fresh and are dropped.
mkdir "$tmp/derive"
ln -s "$traces/raw" "$tmp/derive/raw"
(cd "$tmp/derive" && python3 "$traces/scripts/derive_llm_demand.py" --servegen ../windows.csv.gz --out usage.csv.gz)
zcat "$tmp/derive/usage.csv.gz" | grep -v '^azure2023-' >"$out/usage_fresh_servegen.csv"
got=$(sha256sum "$out/usage_fresh_servegen.csv" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	echo "fresh-traces: $out/usage_fresh_servegen.csv has sha256 $got, not the protocol's $want" >&2
	exit 1
fi
echo "$out/usage_fresh_servegen.csv: $(wc -l <"$tmp/fresh") workloads, sha256 $got"
