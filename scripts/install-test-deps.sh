#!/usr/bin/env bash
# Installs the programs the tests run for real, when they are missing:
# Prometheus's promtool and server (Debian's prometheus package), git and
# OpenSSH's server.
# Idempotent; needs root or sudo only when something is missing.
set -euo pipefail

need=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v git >/dev/null 2>&1 || need+=(git)
# sshd serves repositories over SSH for the SSH clone and push tests.
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
# sshd run as root needs its privilege separation directory, which only
# a booted system's tmpfiles creates.
if [ "$(id -u)" -eq 0 ] && [ ! -d /run/sshd ]; then install -d -m 0755 /run/sshd; fi
((${#need[@]} == 0)) && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "installing ${need[*]} (Debian packages) for the tests" >&2
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y --no-install-recommends "${need[@]}"; then
	$sudo apt-get update
	$sudo apt-get install -y --no-install-recommends "${need[@]}"
fi
