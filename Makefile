# msjfarm — developer targets. `make test` is the README's test command and
# what CI runs; it installs the real servers the integration tests need
# (MinIO built once with `go install`, then cached).

GO ?= go
TOOLS ?= $(HOME)/.cache/msjfarm/bin
STATICCHECK_VERSION ?= v0.8.2
# Packages with goroutines, tested again under the race detector.
RACE_PKGS ?= ./storage/... ./coordinator/... ./worker/... ./internal/protocol/... ./internal/gcpace/... ./sdk/... ./results/bundle/...

export MSJFARM_MINIO ?= $(TOOLS)/minio
export MSJFARM_NATS_SERVER ?= $(TOOLS)/nats-server

.PHONY: all build plugins modcache test test-unprivileged test-long test-times lint tools bench bench-smoke bench-compare bench-sizebased pgo fmt proto faults faults-reduced slurm

all: build

build: plugins
	$(GO) build -o bin/msjfarm ./cmd/msjfarm

# One plugin binary per policy family (plugins/<family>/cmd/msjfarm-policy-<family>)
# into bin/plugins/, one `go build` per binary. `msjfarm run` and `msjfarm
# worker` find them with -plugin-path bin/plugins or MSJFARM_PLUGIN_PATH.
plugins:
	@mkdir -p bin/plugins
	for d in plugins/*/cmd/*/; do \
		$(GO) build -pgo=$(CURDIR)/cmd/msjfarm/default.pgo -o bin/plugins/$$(basename $$d) ./$$d || exit 1; \
	done

# Real servers for the integration tests: MinIO (go install, cached),
# nats-server (go install at go.mod's version, cached; apt as a fallback)
# and Debian's chromium for the live page's browser test.
tools:
	bash .ci/install-minio.sh
	bash .ci/install-nats.sh
	@# Chromium is optional outside CI: without it the browser test skips.
	bash .ci/install-chromium.sh || [ "$$MSJFARM_REQUIRE_SERVERS" != 1 ]

# The module cache the offline plugin-author test (e2e, GOPROXY=off) builds
# from. A fresh machine's cache holds only what msjfarm's own build and
# tests download, but a plugin module's `go mod tidy` reads the go.mod of
# every module in its graph (go-spew's, behind go-hclog): without this a
# cold `make test` failed TestPluginAuthorJourney. examples/thirdparty is
# such a module; its `go mod download all` fetches the graph (~5 s). That
# also writes the graph's sums into its go.sum, which is put back, so that
# `make test` leaves the tree as it found it (lint's `go mod tidy -diff`
# fails on the extra sums).
modcache:
	cd examples/thirdparty && cp go.sum go.sum.keep && { $(GO) mod download all; s=$$?; mv go.sum.keep go.sum; exit $$s; }

# The whole suite: unit, statistical validation (default length) and the
# integration tests against real servers (nats-server, MinIO), every package
# once: the concurrent ones (RACE_PKGS) under the race detector only, the
# others without it. Running RACE_PKGS twice, as `go test ./...` and again
# with -race, cost the cold run minutes and found nothing the race run does
# not (no test there depends on the race build; docs/testing.md).
#
# TEST_TIMEOUT is a ceiling per package, not an expectation: on an idle
# machine no package takes 5 minutes, but at a load of 30 to 100 on 2 cores
# e2e and plugins/serverfilling passed go test's default 10 minutes.
TEST_TIMEOUT ?= 30m
test: tools modcache
	$(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -vxF "$$($(GO) list $(RACE_PKGS))")
	$(GO) test -race -timeout $(TEST_TIMEOUT) $(RACE_PKGS)
	bash .ci/sandbox-unprivileged.sh

# The plugin sandbox's own tests again as an ordinary user (nobody), when
# run as root: a worker that is not root confines its plugins by another
# path (a user namespace owning their network and mount namespaces), which
# root's run above does not take. Skipped, saying why, without root or setpriv.
test-unprivileged:
	bash .ci/sandbox-unprivileged.sh

# Longer statistical validation (paper-scale run lengths) and the full
# lengths of the equivalence runs the default suite shortens
# (docs/testing.md).
test-long:
	$(GO) test -tags long -timeout 60m ./...

# Where the suite's time goes: wall and CPU seconds per package and the
# slowest tests (docs/testing.md). TEST_TIMES_ARGS='-tags long -timeout 60m ./...' for
# the long suite.
TEST_TIMES_ARGS ?= -timeout 30m ./...
test-times:
	bash .ci/test-times.sh $(TEST_TIMES_ARGS)

# The fault-injection suite (e2e/faults, docs/faults.md): real nats-server,
# MinIO, a coordinator and two workers, each fault on a fresh farm, compared
# with a fault-free run. The partition faults need root (network
# namespaces) and nftables; without them they are skipped with the reason.
# The table and every process log go to $(FAULTS_OUT).
FAULTS_OUT ?= $(CURDIR)/bin/faults
faults: tools
	MSJFARM_FAULTS_OUT=$(FAULTS_OUT) $(GO) test -tags faults -count=1 -run TestFaults -v -timeout 90m ./e2e/faults/

# The reduced form CI runs (~6 minutes on 2 cores): 60 tasks, MinIO down
# 2 minutes instead of 10, a worker cut off NATS 20 s instead of 60.
faults-reduced: tools
	MSJFARM_FAULTS_REDUCED=1 MSJFARM_FAULTS_OUT=$(FAULTS_OUT)-reduced $(GO) test -tags faults -count=1 -run TestFaults -v -timeout 40m ./e2e/faults/

# The Slurm test (e2e/slurm_test.go, deploy/README.md): Debian's Slurm and
# MUNGE (installed by .ci/install-slurm.sh; needs root) configured on
# loopback with two nodes, deploy/slurm/msjfarm-workers.sbatch run through
# allocations against a real nats-server and MinIO — a campaign to
# completion, the end-of-allocation signal, scancel and SIGKILL
# mid-campaign, resumed allocations; and with the coordinator in the batch
# step. About four minutes.
slurm: tools
	bash .ci/install-slurm.sh
	$(GO) test -tags slurm -count=1 -run TestSlurm -v -timeout 15m ./e2e/

lint:
	$(GO) mod tidy -diff
	cd examples/thirdparty && $(GO) mod tidy -diff
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) vet -tags faults ./e2e/faults/
	$(GO) vet -tags slurm ./e2e/
	$(GO) vet -tags long ./...
	# The suite compiles for the other Linux architectures (docs/testing.md).
	GOARCH=arm64 $(GO) vet ./...
	GOARCH=386 $(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# Benchmarks of the engine and every policy (BenchmarkCatalog); the output
# goes to $(BENCH_OUT) too, for benchstat.
BENCH_COUNT ?= 1
BENCH_OUT ?= bench.txt
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x -count $(BENCH_COUNT) -timeout 120m ./sim/ ./plugins/... >$(BENCH_OUT); \
		s=$$?; cat $(BENCH_OUT); exit $$s

# Every benchmark but the engine's and the policies' (make bench: minutes
# each), run once so that one that no longer runs fails CI:
# BenchmarkVerify10k failed for a stop unnoticed (its synthetic campaign
# lacked the checksums export came to require). About 3 minutes.
bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m $$($(GO) list ./... | grep -v -e '/sim$$' -e '/plugins/')

# Before/after benchmarks of two commits (BEFORE, AFTER: any git revision,
# AFTER defaults to HEAD) in alternating pairs, niced, and benchstat's tables
# (docs/testing.md, "Benchmarks before and after"); N pairs, default 6.
AFTER ?= HEAD
bench-compare:
	@test -n "$(BEFORE)" || { echo "usage: make bench-compare BEFORE=<commit> [AFTER=<commit>] [N=6]"; exit 2; }
	bash .ci/bench-pairs.sh $(BEFORE) $(AFTER)

# Issue #35's measurement (.ci/bench-sizebased.sh): the size-based
# ServerFilling and DivisorFilling members against ServerFilling per event,
# and their growth in L at k = 2048, at AFTER (default HEAD) or at BEFORE and
# AFTER in alternation; N rounds (default 6) over COPIES copies of each test
# binary (default 3). Wants a quiet host (docs/testing.md, "Size-based
# members against ServerFilling").
bench-sizebased:
	bash .ci/bench-sizebased.sh "$(BEFORE)" "$(AFTER)"

# The CPU profile behind profile-guided optimisation (PGO): `go build`
# applies cmd/msjfarm/default.pgo to the msjfarm binary by default (and the
# plugins target to every plugin binary). It records the engine and the
# papers' main policies on one-or-all and Borg cell B (BenchmarkCatalog),
# leaving out the policies whose cost per event is quadratic or a knapsack,
# which would otherwise take most of the samples. Regenerate it after a
# change to the engine's or a policy's hot path; docs/design.md ("Speed")
# has what it gains.
PGO_ARRIVALS ?= 300000
PGO_BENCH ?= Catalog/.*/.*/^(fcfs|msf|lsf|msfq|static-quickswap|adaptive-quickswap|serverfilling|serverfilling-srpt|serverfilling-gittins|first-fit|killsmart|killsmart-multiclass|nmsr|balanced-splitting|easy-backfill)$$
pgo:
	@mkdir -p bin
	MSJFARM_BENCH_ARRIVALS=$(PGO_ARRIVALS) $(GO) test -run '^$$' -bench '$(PGO_BENCH)' -benchtime 1x -o bin/builtin.test -cpuprofile bin/pgo.prof ./plugins/builtin/
	cp bin/pgo.prof cmd/msjfarm/default.pgo

fmt:
	gofmt -w $$(git ls-files '*.go')

# Regenerate the plugin wire contract's Go code from internal/wire/proto/policy.proto.
proto:
	bash internal/wire/proto/gen.sh
