# wonderful-matrices-go. `make test` is the test command CI runs (README).
SHELL := /bin/bash
GO ?= go
export PATH := $(PATH):/usr/local/go/bin

.PHONY: test deps check test-purego test-openblas bench bench-openblas fmt reproduce

## test: format and vet checks, the pure-Go and the OpenBLAS builds, all tests
test: deps check test-purego test-openblas

## deps: Debian's OpenBLAS for the `openblas` build tag (installs it when missing)
deps:
	@if ! dpkg -s libopenblas-dev >/dev/null 2>&1; then \
		echo "installing libopenblas-dev"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas-dev >/dev/null; \
	fi

check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build ./...

test-purego:
	$(GO) test -count=1 ./...

test-openblas:
	$(GO) test -count=1 -tags openblas ./ops/ ./layers/ ./graph/ ./cmd/...

## bench: one benchmark per op and per architecture, forward and forward+backward, pure Go and OpenBLAS
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./ops/ ./graph/

bench-openblas:
	$(GO) test -run '^$$' -bench . -benchmem -tags openblas ./ops/ ./graph/

fmt:
	gofmt -w .

## reproduce: run EXPERIMENT (default table1) at PRESET (default small) with OpenBLAS into results/, then print its table
EXPERIMENT ?= table1
PRESET ?= small
reproduce: deps
	$(GO) run -tags openblas ./cmd/wm run $(EXPERIMENT) --preset $(PRESET) --out results --resume
