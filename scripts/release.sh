#!/bin/sh
# make release: static binaries for linux and darwin on amd64 and arm64,
# an SPDX SBOM of each, the chart packaged with the version as its
# appVersion, checksums.txt over them all, in $DIST (default dist/); then
# the image, when a Docker engine answers. No network beyond the Go module
# cache the build already needs.
#
# VERSION (default: git describe) is stamped into each binary; the
# artifacts are dated by the commit (SOURCE_DATE_EPOCH), so that a release
# made again from the same commit gives the same files.
set -eu
cd "$(dirname "$0")/.."

GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
DIST=${DIST:-dist}
PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"}
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE=${SOURCE:-https://github.com/gpu-rightsizing/recommender}
IMAGE=${IMAGE:-ghcr.io/gpu-rightsizing/recommender:$VERSION}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

rm -rf "$DIST"
mkdir -p "$DIST"
bins=
for p in $PLATFORMS; do
	os=${p%/*}
	arch=${p#*/}
	echo "building $os/$arch" >&2
	# The Makefile's GO_BUILD_FLAGS, as the image's (internal/deploy checks).
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${VERSION}" \
		-o "$DIST/recommender_${VERSION}_${os}_${arch}" ./cmd/recommender
	bins="$bins recommender_${VERSION}_${os}_${arch}"
done
# shellcheck disable=SC2086 # one argument per binary
$GO run ./hack/release -version "$VERSION" -dir "$DIST" -chart charts/recommender -created "$SOURCE_DATE_EPOCH" $bins

if [ "${SKIP_IMAGE:-}" = 1 ]; then
	exit 0
fi
if docker info >/dev/null 2>&1; then
	docker build --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" --build-arg SOURCE="$SOURCE" -t "$IMAGE" .
else
	echo "no Docker engine answers (docker info): the image is not built; the binaries, SBOMs, chart and checksums are in $DIST" >&2
fi
