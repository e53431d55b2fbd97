# The first two targets are the README's quickstart.
GO ?= go
PKGS := ./...

.PHONY: build image release demo test demo-prometheus demo-gitops test-deps demo-run demo-fleet demo-clusters lint bench bench-prometheus bench-scale bench-e2e fuzz backtest backtest-variants backtest-candidates

## demo: plan the embedded quickstart repository against its recorded metrics
demo:
	$(GO) run ./cmd/recommender plan --repo examples/quickstart --metrics-file examples/quickstart/metrics.om

## build: the binary the image holds (static, reproducible) in bin/recommender, without Docker
# The Dockerfile's `go build` uses the same flags: internal/deploy checks.
# VERSION is stamped into the binary (`recommender version`): the tag or
# commit of the checkout, or what the caller names.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GO_BUILD_FLAGS := -trimpath -buildvcs=false -ldflags="-s -w -X main.version=${VERSION}"
BIN ?= bin/recommender
build:
	CGO_ENABLED=0 $(GO) build $(GO_BUILD_FLAGS) -o $(BIN) ./cmd/recommender

## image: the container image (needs a Docker engine; IMAGE=name:tag to change)
IMAGE ?= ghcr.io/gpu-rightsizing/recommender:dev
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) -t $(IMAGE) .

## release: binaries for linux and darwin (amd64, arm64), their SPDX SBOMs, the chart packaged, checksums.txt, in dist/; the image when Docker answers
release:
	VERSION=$(VERSION) ./scripts/release.sh

## test: install what the tests run (promtool, git, etcd; kube-apiserver built once into a cache) and run every test
test: test-deps
	RECOMMENDER_TEST_STRICT=1 $(GO) test -race -count=1 $(PKGS)

test-deps:
	./scripts/install-test-deps.sh

## demo-run: open pull requests (as local files) on a git copy of the quickstart, twice
demo-run:
	./scripts/demo-run.sh

## demo-fleet: the fleet report (consolidation, rollout room, noisy neighbours) and the dashboard's body on the quickstart with a recorded pool, no cluster
demo-fleet:
	./scripts/demo-fleet.sh

## demo-clusters: two clusters from one repository, no cluster: the drafted map, the plan per (cluster, workload), a local run's per-cluster branches
demo-clusters:
	./scripts/demo-clusters.sh

## demo-gitops: the whole loop on real Flux, no cluster: run, merge, Flux applies; the Deployments before and after
demo-gitops:
	./scripts/demo-gitops.sh

## demo-prometheus: the demo's plan against a real local Prometheus serving the recording (ARGS=extra plan flags)
demo-prometheus:
	./scripts/demo-prometheus.sh $(ARGS)

## lint: gofmt, go vet, staticcheck and errorlint must be clean, the shape tests (layering, layout, function and package size, the docs' sentence budget) pass, and commit messages follow CONTRIBUTING.md
# errorlint's -errorf: an error formatted into another is wrapped (%w), so
# that errors.Is and errors.As still find it.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)
	$(GO) run codeberg.org/polyfloyd/go-errorlint@v1.9.1 -errorf $(PKGS)
	$(GO) test -count=1 ./internal/arch/
	$(GO) run ./hack/commitcheck

## bench: the benchmarks behind docs/benchmarks/speed.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

## bench-scale: discovery and edits of 10,000 Deployments, plain and as 100 overlays, three rounds each against a bare parse (several minutes)
bench-scale:
	RECOMMENDER_BENCH_SCALE=1 $(GO) test -run '^$$' -bench Scale -benchtime 1x -count=1 ./internal/patcher

## bench-prometheus: the real-server benchmark of docs/benchmarks/speed.md (backfills millions of samples: about 2 min)
bench-prometheus:
	RECOMMENDER_BENCH_PROMETHEUS=1 $(GO) test -run '^$$' -bench BenchmarkPrometheusUsage -benchmem -benchtime 5x -count=1 ./internal/metrics/prometheus

## bench-e2e: the end-to-end stages (plan, recordings, Prometheus, overlays, publishing), each against its limit in the same run, in processes of their own (tens of minutes, gigabytes in $TMPDIR); fails when a ratio lands a quarter from the committed one; BENCH_E2E_WRITE=1 writes the new figures (testdata/bench-e2e.json) and docs/benchmarks/speed.md's tables
# One package at a time (-p 1): each rewrites its own section of
# docs/benchmarks/speed.md, and each stage wants the machine's memory to itself.
BENCH_E2E_PKGS := ./internal/metrics/openmetrics ./internal/metrics/prometheus ./internal/patcher/kustomize ./internal/plan ./cmd/recommender
bench-e2e:
	RECOMMENDER_BENCH_E2E=1 RECOMMENDER_BENCH_E2E_WRITE=$(BENCH_E2E_WRITE) $(GO) test -p 1 -run '^$$' -bench '^BenchmarkE2E' -benchtime 3x -count=1 -timeout 2h $(BENCH_E2E_PKGS)

## backtest: replay the traces of docs/backtest/traces.md (TRACES=dir, FRESH=dir, not in the repository) through the policies and baselines into docs/backtest
backtest:
	@[ -n "$(TRACES)" ] || { echo "make backtest: set TRACES to the directory holding usage.csv and usage_derived_llm.csv.gz, and FRESH to the one holding usage_fresh_servegen.csv (docs/backtest/traces.md says where they come from)" >&2; exit 2; }
	./scripts/backtest.sh $(TRACES) docs/backtest $(FRESH)

## backtest-variants: measure one-change variants of the guide policies (docs/benchmarks/quality.md, History)
backtest-variants:
	@[ -n "$(TRACES)" ] || { echo "make backtest-variants: set TRACES (docs/backtest/traces.md)" >&2; exit 2; }
	./scripts/backtest-variants.sh $(TRACES) $${TMPDIR:-/tmp}/backtest-variants

## backtest-candidates: judge one-edit changes to the recommended policies out of sample, paired with them, into docs/backtest/candidates (docs/benchmarks/quality.md, History)
backtest-candidates:
	@[ -n "$(TRACES)" ] || { echo "make backtest-candidates: set TRACES (docs/backtest/traces.md)" >&2; exit 2; }
	./scripts/backtest-candidates.sh $(TRACES) docs/backtest/candidates

## fuzz: a short run of every fuzz target (FUZZTIME=1m for longer)
FUZZTIME ?= 20s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
		done; \
	done
