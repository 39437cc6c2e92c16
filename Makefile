# wonderful-matrices-go. `make test` is the test command CI runs (README).
SHELL := /bin/bash
GO ?= go
export PATH := $(PATH):/usr/local/go/bin

.PHONY: browser-deps test deps check test-purego test-openblas bench bench-openblas fmt reproduce notebooks notebook-deps findings fuzz slurm-test bench-peer

## test: format and vet checks, the pure-Go and the OpenBLAS builds, all tests (wm serve's page in headless Chromium among them), every notebook executed
test: deps browser-deps check test-purego test-openblas slurm-test notebooks

## deps: Debian's OpenBLAS for the `openblas` build tag (installs it when missing)
deps:
	@if ! dpkg -s libopenblas-dev >/dev/null 2>&1; then \
		echo "installing libopenblas-dev"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas-dev >/dev/null; \
	fi

## browser-deps: Debian's chromium, which the test of wm serve's page drives headless (installs it when missing)
browser-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "installing chromium"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	CGO_ENABLED=0 $(GO) build ./...

test-purego:
	WM_BROWSER_TEST=1 $(GO) test -count=1 ./...

test-openblas:
	$(GO) test -count=1 -tags openblas ./ops/ ./layers/ ./graph/ ./cmd/... ./experiments/... ./plots/...

## bench: one benchmark per op and per architecture, forward and forward+backward, pure Go and OpenBLAS
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./ops/ ./graph/

bench-openblas:
	$(GO) test -run '^$$' -bench . -benchmem -tags openblas ./ops/ ./graph/

## bench-peer: wm bench (OpenBLAS build) beside the PyTorch peer (Debian's python3-torch, and libjemalloc2 for the peer's allocator, installed when missing), written to the committed report for this kind of host (`wm bench-host docs`: the one made on the same processor, cores and OpenBLAS kernels, or docs/bench-<processor>-<N>cores.md for a first one; BENCH_REPORT=F names another); it stops at once if the BLAS rate is more than 10% below or above that report's (HOST_LIKE=F checks against F instead, HOST_LIKE= against nothing); ROUNDS=N above a finished report's rounds, with the build that made it, adds only the rounds it lacks
BENCH_REPORT ?=
HOST_LIKE ?= auto
ROUNDS ?= 5
bench-peer: deps
	@if ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || ! /sbin/ldconfig -p | grep -q 'libjemalloc.so.2 '; then \
		echo "installing python3-torch and libjemalloc2"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch libjemalloc2 >/dev/null; \
	fi
	@report='$(BENCH_REPORT)'; \
	if [ -z "$$report" ]; then report=$$($(GO) run -tags openblas ./cmd/wm bench-host docs) || exit 1; fi; \
	like='$(HOST_LIKE)'; if [ "$$like" = auto ]; then like=; if [ -f "$$report" ]; then like=$$report; fi; fi; \
	set -x; $(GO) run -tags openblas ./cmd/wm bench --reps 8 --rounds $(ROUNDS) --out "$$report" --resume $${like:+--host-like "$$like"}

fmt:
	gofmt -w .

## slurm-test: a one-node Slurm cluster on loopback (Debian's slurm and munge), a tiny sweep submitted to it, the aggregated table checked; the cluster is stopped after
slurm-test:
	bash scripts/slurm-local.sh
	$(GO) test -count=1 -run '^TestSweepOnSlurm$$' -v ./cmd/wmcli/ ; rc=$$?; bash scripts/slurm-local.sh stop; exit $$rc

## fuzz: run each fuzz target for FUZZTIME (default 30s); seed corpora are in each package's testdata/fuzz
FUZZTIME ?= 30s
FUZZ_TARGETS := ./graph/:FuzzParsePattern ./graph/:FuzzParseConfig ./graph/:FuzzLoadCheckpoint \
	./experiments/data/:FuzzLoadBPE ./experiments/data/:FuzzLoadCorpus ./experiments/train/:FuzzReadMetrics
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "fuzzing $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg || exit 1; \
	done

## findings: judge the papers' claims against the results under RESULTS (default results/): RESULTS/findings.md
RESULTS ?= results
findings:
	$(GO) run ./cmd/wm findings $(RESULTS)

## reproduce: run EXPERIMENT (default table1) at PRESET (default small) with OpenBLAS into results/, then print its table
EXPERIMENT ?= table1
PRESET ?= small
reproduce: deps
	$(GO) run -tags openblas ./cmd/wm run $(EXPERIMENT) --preset $(PRESET) --out results --resume

## notebooks: execute every GoNB notebook in notebooks/ headlessly, in place (outputs kept); a failing cell fails (nbconvert for a compile error, nbcheck for a program that panics or exits non-zero)
NB_CACHE := $(CURDIR)/.cache/notebooks
NB_ENV := PATH="$(NB_CACHE)/bin:$$PATH" JUPYTER_DATA_DIR="$(NB_CACHE)/jupyter"
notebooks: notebook-deps
	@for nb in notebooks/*.ipynb; do \
		echo "executing $$nb"; \
		if ! $(NB_ENV) /usr/bin/jupyter nbconvert --to notebook --execute --inplace \
			--ExecutePreprocessor.timeout=900 "$$nb" > "$(NB_CACHE)/last.log" 2>&1; then \
			grep -v '^[IW][0-9]\{4\} ' "$(NB_CACHE)/last.log" | tail -n 60; \
			echo "notebook $$nb failed (full log: $(NB_CACHE)/last.log)"; exit 1; \
		fi; \
		"$(NB_CACHE)/bin/nbcheck" "$$nb" || exit 1; \
	done

## notebook-deps: Debian's Jupyter (nbconvert, client, nbclient); GoNB v0.11.1, goimports and nbcheck (a cell whose program fails) built from notebooks/tools; the kernel installed under .cache
notebook-deps:
	@if ! dpkg -s jupyter-nbconvert jupyter-client python3-nbclient >/dev/null 2>&1; then \
		echo "installing jupyter-nbconvert jupyter-client python3-nbclient"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jupyter-nbconvert jupyter-client python3-nbclient >/dev/null; \
	fi
	@mkdir -p "$(NB_CACHE)/bin" "$(NB_CACHE)/jupyter"
	cd notebooks/tools && $(GO) test -count=1 ./nbcheck/ && GOBIN="$(NB_CACHE)/bin" $(GO) install github.com/janpfeifer/gonb golang.org/x/tools/cmd/goimports ./nbcheck
	@$(NB_ENV) gonb --install --force_deps >/dev/null 2>&1 || { echo "gonb --install failed"; $(NB_ENV) gonb --install --force_deps; exit 1; }
