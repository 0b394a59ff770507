# msjfarm — developer targets. `make test` is the README's test command and
# what CI runs; it installs the real servers the integration tests need
# (MinIO built once with `go install`, then cached).

GO ?= go
TOOLS ?= $(HOME)/.cache/msjfarm/bin
STATICCHECK_VERSION ?= v0.8.2
# Packages with goroutines, tested again under the race detector.
RACE_PKGS ?= ./storage/...

export MSJFARM_MINIO ?= $(TOOLS)/minio

.PHONY: all build test test-long lint tools bench fmt

all: build

build:
	$(GO) build -o bin/msjfarm ./cmd/msjfarm

tools:
	bash .ci/install-minio.sh

# The whole suite: unit, statistical validation (default length) and the
# integration tests against real servers, then the race detector on the
# concurrent packages.
test: tools
	$(GO) test ./...
	$(GO) test -race $(RACE_PKGS)

# Longer statistical validation (paper-scale run lengths).
test-long:
	$(GO) test -tags long -timeout 60m ./...

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./sim/ ./plugins/...

fmt:
	gofmt -w $$(git ls-files '*.go')
