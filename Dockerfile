# syntax=docker/dockerfile:1
# The recommender's image: a static binary on distroless, run as non-root.
# `make image` builds it; `make build` builds the same binary without Docker
# (the flags below and the Makefile's GO_BUILD_FLAGS must agree: a test checks).

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
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

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/recommender /usr/local/bin/recommender
# distroless' nonroot user; the chart's runAsUser is the same.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/recommender"]
CMD ["--help"]
