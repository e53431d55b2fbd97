#!/usr/bin/env bash
# Installs the programs the tests run for real, when they are missing:
# Prometheus's promtool and server (Debian's prometheus package) and git.
# Idempotent; needs root or sudo only when something is missing.
set -euo pipefail

need=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v git >/dev/null 2>&1 || need+=(git)
((${#need[@]} == 0)) && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "installing ${need[*]} (Debian packages) for the tests" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y --no-install-recommends "${need[@]}"; then
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends "${need[@]}"
fi
