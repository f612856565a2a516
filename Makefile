# cc-connect build, test and tooling entry points. .ci/run calls `tools`
# then `test`; developers use the same targets.

SHELL := /bin/bash
GO ?= go
NPM ?= npm

# The version stamped into the binary: the nearest tag, else the commit.
# Outside a git checkout it is empty and the binary reads its version from
# the build information instead (cmd/cc-connect/version.go).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION)

# The Claude Code CLI the integration tier pins (internal/testenv finds it
# under .tools/, which .gitignore keeps out of commits).
CLAUDE_VERSION := 2.1.332
TOOLS_DIR := .tools/claude-code
CLAUDE_BIN := $(TOOLS_DIR)/node_modules/.bin/claude

# Config for `make run`.
CONFIG ?= config.example.toml

.DEFAULT_GOAL := build
.PHONY: build release release-check test lint fmt-check vet arch tools bench bench-smoke soak stress test-cli test-cli-latest run clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cc-connect ./cmd/cc-connect

# release cross-builds the binary into dist/cc-connect_<version>_<os>_<arch>.tar.gz,
# each holding the binary, LICENSE, README.md, CHANGELOG.md and the service
# files (contrib/systemd), and writes
# dist/SHA256SUMS. The same commit built with the same Go release gives the
# same bytes: paths are trimmed (-trimpath), nothing of the checkout's git
# state is recorded (-buildvcs=false: the version is stamped instead), cgo
# is off (a static binary, and no C toolchain in the output), and every
# archive entry has the commit's time (SOURCE_DATE_EPOCH), root's ids,
# normalized modes and a sorted place; gzip -n leaves out its own name
# and time. Needs GNU tar. release-check builds it twice.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
release:
	@set -euo pipefail; \
	if [ -z "$(VERSION)" ] || [ -z "$(SOURCE_DATE_EPOCH)" ]; then \
		echo "release: not a git checkout: set VERSION and SOURCE_DATE_EPOCH"; exit 2; fi; \
	tar --version 2>/dev/null | grep -q 'GNU tar' || { echo "release: needs GNU tar (for --sort and --mtime)"; exit 2; }; \
	rm -rf dist && mkdir -p dist; \
	for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=cc-connect_$(VERSION)_$${os}_$${arch}; \
		mkdir dist/$$name; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOAMD64=v1 GOARM64=v8.0 \
			$(GO) build -trimpath -buildvcs=false -ldflags '-s -w $(LDFLAGS)' -o dist/$$name/cc-connect ./cmd/cc-connect; \
		cp LICENSE README.md CHANGELOG.md dist/$$name/ && mkdir -p dist/$$name/contrib && cp -R contrib/systemd dist/$$name/contrib/; \
		tar --sort=name --format=gnu --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
			--mode=u+rwX,go+rX,go-w -C dist -cf - $$name | gzip -9n > dist/$$name.tar.gz; \
		rm -r dist/$$name; \
	done; \
	cd dist && sha256sum -- *.tar.gz > SHA256SUMS && cat SHA256SUMS

# release-check runs `make release` in two copies of this tree committed
# alike (TestReleaseReproducible) and compares the archives. It runs apart
# from the suite: cross-building four targets twice takes minutes on a cold
# cache, which the suite's per-package timeout should not have to hold.
release-check:
	CC_RELEASE_TEST=1 CC_RELEASE_PLATFORMS="$(RELEASE_PLATFORMS)" $(GO) test -count=1 -timeout 40m -run '^TestReleaseReproducible$$' ./cmd/cc-connect/

# test runs the whole suite under the race detector, then checks that the
# release build is reproducible (for this machine's target: the four of a
# release take minutes on a cold cache; `make release-check` builds them
# all), then runs every benchmark once so that benchmarks keep compiling
# and working.
test: tools lint
	$(GO) test -race -count=1 -timeout 15m ./...
	$(MAKE) --no-print-directory release-check RELEASE_PLATFORMS=linux/amd64
	$(MAKE) --no-print-directory bench-smoke

lint: fmt-check vet arch

fmt-check:
	@out="$$(find . -name '*.go' -not -path './.tools/*' -not -path '*/node_modules/*' -not -path './.git/*' -print0 | xargs -0 gofmt -l)"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# arch holds every package, its tests included, to the package map in
# docs/architecture.md ("Packages"), and fails on a type with more methods
# than the limits written there.
arch:
	$(GO) run ./internal/archcheck -methods=enforce

# tools installs the pinned CLI once; a matching copy is left alone.
tools:
	@if [ -x $(CLAUDE_BIN) ] && $(CLAUDE_BIN) --version 2>/dev/null | grep -q '^$(CLAUDE_VERSION) '; then \
		echo "claude $(CLAUDE_VERSION) already installed in $(TOOLS_DIR)"; \
	else \
		mkdir -p $(TOOLS_DIR) && \
		$(NPM) install --prefix $(TOOLS_DIR) --no-audit --no-fund --no-save --no-package-lock \
			--loglevel=error @anthropic-ai/claude-code@$(CLAUDE_VERSION); \
	fi
	@v="$$($(CLAUDE_BIN) --version)"; echo "$(CLAUDE_BIN): $$v"; \
	case "$$v" in "$(CLAUDE_VERSION) "*) ;; *) echo "want claude $(CLAUDE_VERSION)"; exit 1;; esac

# stress runs the whole suite under the race detector three times, then the
# engine and binary packages at GOMAXPROCS 1, 2 and 4, while busy loops of
# its own (one per core) compete for the CPU: the orderings a loaded machine
# produces. Not part of `test`.
STRESS_TIMEOUT ?= 90m
stress: tools
	@hogs=""; for i in $$(seq $$(nproc)); do ( while :; do :; done ) & hogs="$$hogs $$!"; done; \
	trap 'kill $$hogs 2>/dev/null' EXIT; trap 'exit 1' INT TERM; \
	echo "== CPU hogs:$$hogs"; \
	$(GO) test -race -count=3 -timeout $(STRESS_TIMEOUT) ./... && \
	$(GO) test -race -count=1 -cpu 1,2,4 -timeout $(STRESS_TIMEOUT) ./engine/... ./cmd/cc-connect/...

# test-cli runs the real-CLI tier (the tests that drive the claude CLI
# against internal/fakeapi) against one Claude Code release:
#
#	make test-cli VERSION=2.1.330
#
# It installs that release once into .tools/claude-<version> (the pinned
# one is the copy `tools` installs). test-cli-latest does the same for the
# newest release on npm. docs/operations.md lists what was last checked.
CLI_TEST_PKGS := ./agentproc/ ./engine/ ./cmd/cc-connect/ ./artifact/ ./ctxindicator/ ./doctor/ ./internal/livetest/
# Every test that runs the real CLI is named TestRealCLI… (testenv.ClaudeBinary
# fails one that is not), and no other test is.
CLI_TEST_RUN := ^TestRealCLI
test-cli:
	@if [ "$(origin VERSION)" != "command line" ]; then echo "usage: make test-cli VERSION=<claude code version>"; exit 2; fi
	@dir=.tools/claude-$(VERSION); [ "$(VERSION)" = "$(CLAUDE_VERSION)" ] && dir=$(TOOLS_DIR); \
	bin=$$dir/node_modules/.bin/claude; \
	if ! { [ -x $$bin ] && $$bin --version 2>/dev/null | grep -q '^$(VERSION) '; }; then \
		mkdir -p $$dir && \
		$(NPM) install --prefix $$dir --no-audit --no-fund --no-save --no-package-lock \
			--loglevel=error @anthropic-ai/claude-code@$(VERSION) || exit 1; \
	fi; \
	echo "== real-CLI tier against $$($$bin --version) ($$bin)"; \
	CC_CONNECT_CLAUDE_BIN=$$PWD/$$bin CC_CONNECT_CLAUDE_VERSION=$(VERSION) \
		$(GO) test -race -count=1 -timeout 30m -run '$(CLI_TEST_RUN)' $(CLI_TEST_PKGS)

test-cli-latest:
	@v="$$($(NPM) view @anthropic-ai/claude-code version)" && [ -n "$$v" ] && \
	$(MAKE) --no-print-directory test-cli VERSION=$$v

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime=1x -benchmem ./...

# soak kills cc-connect at many random points with messages queued and
# checks that each runs exactly once, in order, through the terminal chat
# and through the fake Slack (20 iterations of each run in `test`); -v
# shows the counts. CC_SOAK_ITERATIONS and CC_SOAK_SEED override;
# CC_CLUSTER_SOAK_KILLS is how many random kills the cluster soak makes
# across three hosts (`test` runs 3 chosen ones: each failover takes
# seconds).
CC_SOAK_ITERATIONS ?= 200
CC_CLUSTER_SOAK_KILLS ?= 100
soak:
	CC_SOAK_ITERATIONS=$(CC_SOAK_ITERATIONS) CC_CLUSTER_SOAK_KILLS=$(CC_CLUSTER_SOAK_KILLS) $(GO) test -count=1 -timeout 60m -v -run '^(TestSoakKillRestart|TestSlackSoakKillRestart|TestClusterSoakKills)$$' ./cmd/cc-connect/

run:
	$(GO) run ./cmd/cc-connect run --config $(CONFIG)

# clean removes build outputs; the installed CLI in .tools/ stays, since
# reinstalling it needs the network.
clean:
	rm -rf bin/ dist/
	rm -f coverage.* *.out *.prof
