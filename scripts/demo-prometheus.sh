#!/usr/bin/env bash
# Plans the quickstart repository against a real Prometheus: backfills
# examples/quickstart/metrics.om with promtool into a temporary TSDB, serves
# it on a free 127.0.0.1 port (nothing is scraped), runs `recommender plan`
# against it with any extra arguments passed through, and always stops the
# server and removes the directory on exit. The same steps as
# internal/testenv.StartPrometheus.
#
# Usage: scripts/demo-prometheus.sh [extra plan flags...]
# DEMO_KEEP=1 keeps the server running until Ctrl-C, to query it by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

recording=examples/quickstart/metrics.om
at=2026-11-30T12:00:00Z

for tool in prometheus promtool curl; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "demo-prometheus: $tool not found (run \`make test-deps\` for prometheus and promtool)" >&2
		exit 1
	}
done

work=$(mktemp -d "${TMPDIR:-/tmp}/demo-prometheus.XXXXXX")
pid=""
stop() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		# Give it 5 s to shut down cleanly, then kill it.
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap stop EXIT
# Turn signals into an exit so that the EXIT trap runs.
trap 'exit 130' INT
trap 'exit 143' TERM

if ! promtool tsdb create-blocks-from openmetrics "$recording" "$work/data" >"$work/promtool.log" 2>&1; then
	echo "demo-prometheus: promtool could not backfill $recording:" >&2
	cat "$work/promtool.log" >&2
	exit 1
fi

cat >"$work/prometheus.yml" <<'EOF'
# Nothing is scraped: the server serves only the backfilled recording.
global:
  scrape_interval: 1m
scrape_configs: []
EOF

# A port found free can be taken before prometheus binds it: try a few.
free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 40000))
		# Nothing answers a connection to a free port.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	echo "demo-prometheus: no free port found on 127.0.0.1" >&2
	return 1
}

url=""
for attempt in 1 2 3 4; do
	port=$(free_port)
	prometheus \
		--config.file="$work/prometheus.yml" \
		--storage.tsdb.path="$work/data" \
		--web.listen-address="127.0.0.1:$port" \
		--storage.tsdb.retention.time=100y \
		>"$work/prometheus.log" 2>&1 &
	pid=$!
	# Ready within 30 s, or the reason it is not.
	for _ in $(seq 300); do
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		# Ready, and ours: not another server that won the port.
		if curl -sf -o /dev/null "http://127.0.0.1:$port/-/ready" &&
			curl -sf "http://127.0.0.1:$port/api/v1/status/flags" | grep -qF "\"$work/data\""; then
			url="http://127.0.0.1:$port"
			break
		fi
		sleep 0.1
	done
	[ -n "$url" ] && break
	if ! kill -0 "$pid" 2>/dev/null && grep -q 'address already in use' "$work/prometheus.log" && [ "$attempt" -lt 4 ]; then
		wait "$pid" 2>/dev/null || true
		pid=""
		continue
	fi
	echo "demo-prometheus: prometheus did not become ready on 127.0.0.1:$port; its log ends:" >&2
	tail -n 30 "$work/prometheus.log" >&2
	exit 1
done

echo "demo-prometheus: Prometheus serving $recording at $url (TSDB in $work)" >&2
if [ -n "${DEMO_KEEP:-}" ]; then
	echo "demo-prometheus: DEMO_KEEP is set; Ctrl-C stops the server" >&2
	wait "$pid"
	exit 0
fi
go run ./cmd/recommender plan --repo examples/quickstart --prometheus-url "$url" --at "$at" "$@"
