#!/usr/bin/env bash
# Installs the programs the tests run for real, when they are missing:
# Prometheus's promtool and server (Debian's prometheus package), its
# Pushgateway (prometheus-pushgateway), git,
# OpenSSH's server, etcd (Debian's etcd-server package), kube-apiserver
# (hack/kube-apiserver), Flux's source-, kustomize- and helm-controller
# (hack/flux) and kube-state-metrics (hack/kube-state-metrics), each built
# once into a cache outside the work tree.
# Idempotent; needs root or sudo only when a Debian package is missing.
set -euo pipefail

need=()
command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v git >/dev/null 2>&1 || need+=(git)
# sshd serves repositories over SSH for the SSH clone and push tests.
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
# etcd stores what the tests' kube-apiserver serves.
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
# The Pushgateway a run pushes its metrics to; the tests start their own on
# a loopback port, so the package's own service does not matter.
command -v prometheus-pushgateway >/dev/null 2>&1 || need+=(prometheus-pushgateway)
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

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${RECOMMENDER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-rightsizing-recommender}

# build NAME VERSION DIR PKG LDFLAGS: builds PKG in the module at DIR into
# $cache/NAME-VERSION/NAME, once. Beside the final path and renamed, so that
# an interrupted build never leaves a binary that looks finished.
build() {
	local name=$1 version=$2 dir=$3 pkg=$4 ldflags=$5
	local bin=$cache/$name-$version/$name
	[ -x "$bin" ] && return 0
	mkdir -p "$(dirname "$bin")"
	echo "building $name $version into $bin (once)" >&2
	local tmp start=$SECONDS
	tmp=$(mktemp "$bin.XXXXXX")
	trap 'rm -f "$tmp"' EXIT
	trap 'rm -f "$tmp"; exit 130' INT TERM HUP
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$tmp" -ldflags "$ldflags" "$pkg")
	chmod 0755 "$tmp"
	mv -f "$tmp" "$bin"
	trap - EXIT INT TERM HUP
	echo "built $name in $((SECONDS - start))s" >&2
}

# kube-apiserver (about 12 minutes on 2 cores): internal/testenv/kubeenv looks for
# it at $cache/kube-apiserver-v1.34.4/ unless RECOMMENDER_KUBE_APISERVER
# names another binary.
version=v1.34.4
if [ -z "${RECOMMENDER_KUBE_APISERVER:-}" ]; then
	build kube-apiserver $version "$root/hack/kube-apiserver" . \
		"-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
fi

# The Flux controllers the GitOps loop tests run (hack/flux; about 5 minutes
# each on 2 cores, less once the first has filled Go's build cache). The
# version is the one each wrapper module requires.
for name in source-controller kustomize-controller helm-controller; do
	dir=$root/hack/flux/$name
	v=$(cd "$dir" && go list -m -f '{{.Version}}' "github.com/fluxcd/$name")
	build "$name" "$v" "$dir" "github.com/fluxcd/$name" "-s -w"
	# Its CRDs, as the module ships them, beside the binary: the tests
	# install these, never a copy of our own.
	crds=$cache/$name-$v/crds
	if [ ! -d "$crds" ]; then
		src=$(cd "$dir" && go mod download -json "github.com/fluxcd/$name@$v" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		tmpd=$(mktemp -d "$crds.XXXXXX")
		cp "$src"/config/crd/bases/*.yaml "$tmpd"/
		chmod 0755 "$tmpd"
		chmod 0644 "$tmpd"/*.yaml
		mv "$tmpd" "$crds"
	fi
done

# kube-state-metrics, whose output the usage tests read (hack/kube-state-metrics).
# The version stamps are the ones its own Makefile sets, so that
# kube_state_metrics_build_info says what it is.
dir=$root/hack/kube-state-metrics
v=$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/kube-state-metrics/v2)
cgo=$(cd "$dir" && go list -m -f '{{.Version}}' k8s.io/client-go)
build kube-state-metrics "$v" "$dir" k8s.io/kube-state-metrics/v2 \
	"-s -w -X github.com/prometheus/common/version.Version=$v -X k8s.io/kube-state-metrics/v2/pkg/app.ClientGoVersion=$cgo"
