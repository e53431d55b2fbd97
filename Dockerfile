# syntax=docker/dockerfile:1
# The recommender's image: a static binary on distroless, run as non-root.
# `make image` builds it; `make build` builds the same binary without Docker
# (the flags below and the Makefile's GO_BUILD_FLAGS must agree: a test checks).

# Both base images are pinned by digest: a build of a commit takes the
# images it was tested with, whatever a tag points to later. Where the
# digests come from, and how to move them, is in docs/security.md.
FROM --platform=$BUILDPLATFORM golang:1.26.8@sha256:6c2a5538f964f1c82f97ad14988bf05de100d922d159d0e398b54c7b0ca0c6c9 AS build
WORKDIR /src
# Modules first, so that a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS TARGETARCH
# The version `recommender version` prints: `make image` passes the
# checkout's (docker build --build-arg VERSION=…).
ARG VERSION=dev
# Static (no cgo), reproducible (no paths or VCS stamps), stripped. git is
# not needed at run time: go-git is pure Go.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${VERSION}" -o /out/recommender ./cmd/recommender

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
# The OCI annotations a registry shows and a scanner reads: which release,
# from which source and commit (make image and make release pass them).
ARG VERSION=dev
ARG REVISION=unknown
ARG SOURCE=https://github.com/gpu-rightsizing/recommender
LABEL org.opencontainers.image.title="recommender" \
      org.opencontainers.image.description="Right-size shared GPUs through pull requests" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/recommender /usr/local/bin/recommender
# distroless' nonroot user; the chart's runAsUser is the same.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/recommender"]
CMD ["--help"]
