#!/usr/bin/env bash
# Installs the programs the tests run for real, when they are missing:
# Prometheus's promtool and server (Debian's prometheus package), git,
# OpenSSH's server, etcd (Debian's etcd-server package), and kube-apiserver,
# built once from hack/kube-apiserver into a cache outside the work tree.
# Idempotent; needs root or sudo only when a Debian package is missing.
set -euo pipefail

need=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v git >/dev/null 2>&1 || need+=(git)
# sshd serves repositories over SSH for the SSH clone and push tests.
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
# etcd stores what the tests' kube-apiserver serves.
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
# sshd run as root needs its privilege separation directory, which only
# a booted system's tmpfiles creates.
if [ "$(id -u)" -eq 0 ] && [ ! -d /run/sshd ]; then install -d -m 0755 /run/sshd; fi

if ((${#need[@]} > 0)); then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	echo "installing ${need[*]} (Debian packages) for the tests" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! $sudo apt-get install -y --no-install-recommends "${need[@]}"; then
		$sudo apt-get update
		$sudo apt-get install -y --no-install-recommends "${need[@]}"
	fi
fi

# kube-apiserver: internal/testenv looks for it at this path unless
# RECOMMENDER_KUBE_APISERVER names another binary.
version=v1.34.4
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${RECOMMENDER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-rightsizing-recommender}
bin=$cache/kube-apiserver-$version/kube-apiserver
if [ -n "${RECOMMENDER_KUBE_APISERVER:-}" ] || [ -x "$bin" ]; then
	exit 0
fi
mkdir -p "$(dirname "$bin")"
echo "building kube-apiserver $version into $bin (once; about 12 minutes on 2 cores)" >&2
# Build beside the final path and rename, so an interrupted build never
# leaves a binary that looks finished.
tmp=$(mktemp "$bin.XXXXXX")
trap 'rm -f "$tmp"' EXIT
trap 'rm -f "$tmp"; exit 130' INT TERM HUP
start=$SECONDS
(
	cd "$root/hack/kube-apiserver"
	CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$tmp" \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34" \
		.
)
chmod 0755 "$tmp"
mv -f "$tmp" "$bin"
trap - EXIT INT TERM HUP
echo "built kube-apiserver in $((SECONDS - start))s" >&2
