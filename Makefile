# Skiff's make targets. On a fresh Debian/Ubuntu machine:
#   sudo make run    build and try skiff against a local demo server
#   sudo make test   install what is needed, vet, unit tests, cross builds, end-to-end tests
# Other targets: build, bench, fuzz, cross, deps.

SHELL := /bin/bash
GO ?= go

# Debian packages the app and the tests need: a C toolchain and the GL/X11
# headers for the Fyne desktop app; iproute2 and nftables for the TUN tests;
# curl and openssl for manual checks; Xvfb, Mesa, xdotool and ImageMagick
# for the GUI tests; Noto CJK, so that Chinese and Japanese node names are
# drawn (Fyne falls back to a system font per character).
DEB_PACKAGES := gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev \
	libxinerama-dev libxi-dev libxxf86vm-dev iproute2 nftables curl openssl \
	xvfb libgl1-mesa-dri xdotool imagemagick fonts-noto-cjk

# Packages built for the other desktop systems by `make cross` (CGO off).
CROSS_PKGS ?= ./core/... ./tun/... ./netstack/... ./internal/...
CROSS_OS ?= windows darwin

# Time each Fuzz target runs in `make fuzz`, and in CI's `make fuzz-smoke`.
FUZZTIME ?= 60s
FUZZSMOKE ?= 3s

# Bound of the end-to-end test run.
E2E_TIMEOUT ?= 45m

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build test unit e2e cross bench bench-tun fuzz fuzz-smoke run demo clean

all: build

deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then \
		echo "deps: all Debian packages present"; \
	else \
		echo "deps: installing$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v $(GO) >/dev/null || { echo "deps: Go is not installed (https://go.dev/dl/, the version in go.mod)"; exit 1; }

build: deps
	$(GO) build -o bin/skiff .

test: deps
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory cross
	cd test && $(GO) vet ./...
	cd test && $(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) ./...

cross:
	@for os in $(CROSS_OS); do \
		echo "cross: GOOS=$$os $(CROSS_PKGS)"; \
		GOOS=$$os CGO_ENABLED=0 $(GO) build $(CROSS_PKGS) || exit 1; \
	done

bench: build
	$(MAKE) -C test bench

# TUN mode: skiff --tun against sing-box's tun (gvisor stack) in network
# namespaces, plus 500 connections (root).
bench-tun: build
	$(MAKE) -C test bench-tun

# Every Fuzz target of the main module, FUZZTIME each, all of them even
# when one fails, ending with a table of target, time, execs/s and result
# (not part of CI: `make fuzz FUZZTIME=30s` takes about 20 minutes).
fuzz:
	.ci/fuzz $(FUZZTIME)

# The short pass of every target that CI runs besides the seed corpora.
fuzz-smoke:
	.ci/fuzz $(FUZZSMOKE)

# The desktop app. Without a display it says so; `make demo` is the
# headless alternative.
run: build
	./bin/skiff

# A demo Hysteria2 server on loopback and `skiff run` against it, in the
# foreground: the core without the window.
demo: build
	cd test && $(GO) run ./cmd/demo

clean:
	rm -rf bin test/bin test/out
