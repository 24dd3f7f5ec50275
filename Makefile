# Skiff's make targets. On a fresh Debian/Ubuntu machine, as root (or with
# sudo in front as a user):
#   make run    build skiff, skiff-tray and skiff-window and open the window
#   make test   install what is needed, vet, unit tests, cross builds, end-to-end tests
# Day to day: unit, e2e (E2E_RUN=...), ci. Other targets: build, package,
# bench, fuzz, cross, deps.

SHELL := /bin/bash
GO ?= go

# Debian packages the app and the tests need: a C toolchain and the GL/X11
# headers for the Fyne desktop app; iproute2 and nftables for the TUN tests;
# curl and openssl for manual checks; Xvfb, Mesa, xdotool, xclip and ImageMagick
# for the GUI tests; Noto CJK, so that Chinese and Japanese node names are
# drawn (Fyne falls back to a system font per character); simple-obfs and
# shadowsocks-v2ray-plugin are the Shadowsocks plugin servers the
# end-to-end tests put in front of sing-box. dbus, dconf-cli, libglib2.0-bin
# and gsettings-desktop-schemas: the system proxy tests set GNOME's proxy
# in a D-Bus session of their own; libkf5config-bin (kwriteconfig5) KDE's.
# openssh-server: the SSH outbound's tests start their own sshd on loopback.

# What `make package` and its tests need: the mingw-w64 C compiler (the
# Windows build links Fyne through cgo) and its windres, NSIS for the
# installer, rpm/lintian/AppStream/desktop-file-utils to check the
# packages, Wine to run the Windows build, debootstrap for the fresh-root
# install test. Defined before DEB_PACKAGES, whose := expands it at once
# (defined after, it was empty there and `make deps` skipped them all).
PACKAGE_DEB_PACKAGES := gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 nsis rpm lintian \
	appstream desktop-file-utils xz-utils wine64 debootstrap
BUILD_DEB_PACKAGES := gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev \
	libxinerama-dev libxi-dev libxxf86vm-dev
DEB_PACKAGES := $(BUILD_DEB_PACKAGES) iproute2 nftables curl openssl \
	xvfb libgl1-mesa-dri xdotool xclip imagemagick fonts-noto-cjk simple-obfs shadowsocks-v2ray-plugin \
	dbus dconf-cli libglib2.0-bin gsettings-desktop-schemas libkf5config-bin openssh-server \
	$(PACKAGE_DEB_PACKAGES)

# The release's version (FyneApp.toml holds it, for fyne package too) and
# the commit, stamped into the binaries (internal/version).
VERSION ?= $(shell sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
RELEASE ?= $(shell sed -n 's/^ *Build *= *\([0-9]*\)/\1/p' FyneApp.toml)
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
VERSION_LDFLAGS := -X github.com/skiffvpn/skiff/internal/version.version=$(VERSION) \
	-X github.com/skiffvpn/skiff/internal/version.commit=$(COMMIT)
# Extra go build flags of the Linux package's binary; a release may add
# -trimpath -buildmode=pie (CI leaves them off to reuse the tests' build cache).
PKG_GOFLAGS ?=
FYNE ?= $(GO) run fyne.io/tools/cmd/fyne@v1.7.4

# Packages built for the other desktop systems by `make cross` (CGO off):
# all of skiff (the CLI and the service) but the window.
CROSS_PKGS ?= . ./core/... ./tun/... ./app/cli/... ./app/service/... ./app/sysproxy/... ./internal/...
CROSS_OS ?= windows darwin

# Time each Fuzz target runs in `make fuzz`, and in CI's `make fuzz-smoke`.
FUZZTIME ?= 60s
FUZZSMOKE ?= 3s

# Bound of the end-to-end test run.
E2E_TIMEOUT ?= 45m

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps deps-build build test unit e2e ci cross bench bench-tun bench-rules measure-window fuzz fuzz-smoke run demo clean \
	package package-linux package-windows package-test package-test-fresh cjk-font

all: build

# deps installs every Debian package the tests and `make package` need;
# deps-build only what building the app needs (make build, make run).
deps: PKGS = $(DEB_PACKAGES)
deps-build: PKGS = $(BUILD_DEB_PACKAGES)
deps deps-build:
	@missing=""; \
	for p in $(PKGS); do \
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

# Two programs: skiff (the CLI, `skiff run` and the service) is built
# without cgo, so that the service never links Fyne; skiff-window is the
# window (Fyne, cgo). `skiff` without a command starts the skiff-window
# next to it.
build: deps-build
	CGO_ENABLED=0 $(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/skiff .
	CGO_ENABLED=1 $(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/skiff-window ./app/skiff-window
	@# skiff-tray: the tray without the window (no Fyne, no GL; cgo only
	@# on macOS)
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o bin/skiff-tray ./app/skiff-tray

test: deps
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory cross
	cd test && $(GO) vet ./...
	cd test/peers/hysteria && $(GO) vet ./...
	cd test && $(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) ./...
	$(MAKE) --no-print-directory package-test

# Day-to-day targets; `make test` above stays what CI and a fresh machine
# run. unit: vet and the main module's unit tests (with the fuzz seed
# corpora); installs only the build packages, needs no root.
unit: deps-build
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# e2e: the end-to-end tests of the test/ module (root: network namespaces,
# TUN devices); E2E_RUN picks tests by name (go test -run).
E2E_RUN ?= .
e2e: deps
	cd test && $(GO) vet ./...
	cd test && $(GO) test -count=1 -v -timeout $(E2E_TIMEOUT) -run '$(E2E_RUN)' ./...

# ci: a CI-sized pass without root or the end-to-end tests: unit, the
# import graph (.ci/importgraph: at most 8 upward imports, and the one
# folder cycle left, core <-> tun), fuzz smoke, cross builds.
ci: unit
	$(GO) run ./.ci/importgraph -max-upward 8 -max-cycles 1
	$(MAKE) --no-print-directory fuzz-smoke
	$(MAKE) --no-print-directory cross

# The release packages, into dist/: the deb, the rpm and a tar.xz (fyne
# package) for Linux, skiff.exe, skiff-window.exe, skiff-tray.exe and their NSIS installer
# for Windows.
package: package-linux package-windows

package-linux: deps
	@mkdir -p dist/linux
	CGO_ENABLED=0 $(GO) build $(PKG_GOFLAGS) -ldflags "-s -w $(VERSION_LDFLAGS)" -o dist/linux/skiff .
	CGO_ENABLED=1 $(GO) build $(PKG_GOFLAGS) -ldflags "-s -w $(VERSION_LDFLAGS)" -o dist/linux/skiff-window ./app/skiff-window
	CGO_ENABLED=0 $(GO) build $(PKG_GOFLAGS) -ldflags "-s -w $(VERSION_LDFLAGS)" -o dist/linux/skiff-tray ./app/skiff-tray
	./dist/linux/skiff service unit > dist/linux/skiff.service
	cd packaging && $(GO) run ./cmd/skiffpkg linux --repo .. --version $(VERSION) --release $(RELEASE) \
		--date $(SOURCE_DATE_EPOCH) --bin ../dist/linux/skiff --window ../dist/linux/skiff-window \
		--tray ../dist/linux/skiff-tray --unit ../dist/linux/skiff.service --out ../dist
	@# fyne package reads FyneApp.toml from --src, wants Go code there and
	@# writes into it (its metadata file, a bumped Build): a staging
	@# directory with a copy and a stub, never the repository root. It
	@# packs the window (its desktop entry runs skiff-window); skiff is
	@# added beside it, and to the archive's install target.
	rm -rf dist/linux/fyne && mkdir -p dist/linux/fyne && cp dist/linux/skiff-window FyneApp.toml dist/linux/fyne/
	printf 'package main\n\nfunc main() {}\n' > dist/linux/fyne/main.go
	cd dist/linux/fyne && $(FYNE) package -os linux --release --src $(CURDIR)/dist/linux/fyne \
		--executable $(CURDIR)/dist/linux/fyne/skiff-window --icon $(CURDIR)/assets/icon.png --name Skiff \
		--app-id io.github.skiffvpn.skiff --app-version $(VERSION)
	cd dist/linux/fyne && rm -rf x && mkdir x && tar -C x -xJf Skiff.tar.xz && mv x/skiff-window x/skiff && \
		install -m 0755 ../skiff x/skiff/usr/local/bin/skiff && \
		sed -i -e '/^\tsed /!{/bin\/$$(Exec)/{p;s/bin\/$$(Exec)/bin\/skiff/g}}' x/skiff/Makefile && \
		tar -C x --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$(SOURCE_DATE_EPOCH) -cJf Skiff.tar.xz skiff
	mv dist/linux/fyne/Skiff.tar.xz dist/skiff-$(VERSION)-linux-amd64.tar.xz && rm -rf dist/linux/fyne
	@ls -l dist/*.deb dist/*.rpm dist/*.tar.xz

package-windows: deps
	@mkdir -p dist/windows
	@# each executable's icon, version and manifest: a .syso in its main package's folder
	cd packaging && $(GO) run ./cmd/skiffpkg windows-res --repo .. --version $(VERSION) --release $(RELEASE) \
		--commit $(COMMIT) --date $(SOURCE_DATE_EPOCH) --out ../rsrc_windows_amd64.syso --ico ../dist/windows/skiff.ico && \
		$(GO) run ./cmd/skiffpkg windows-res --program skiff-window --repo .. --version $(VERSION) --release $(RELEASE) \
		--commit $(COMMIT) --date $(SOURCE_DATE_EPOCH) --out ../app/skiff-window/rsrc_windows_amd64.syso && \
		$(GO) run ./cmd/skiffpkg windows-res --program skiff-tray --repo .. --version $(VERSION) --release $(RELEASE) \
		--commit $(COMMIT) --date $(SOURCE_DATE_EPOCH) --out ../app/skiff-tray/rsrc_windows_amd64.syso
	@# skiff.exe: the command line and the service, cgo-free, a console
	@# program; skiff-window.exe: the window, cgo through mingw-w64, GUI
	@# subsystem (no console window); skiff-tray.exe: the tray and how
	@# Skiff starts (Start menu, links, login), cgo-free, GUI subsystem
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 \
		$(GO) build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" -o dist/windows/skiff.exe . && \
	CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc \
		$(GO) build -trimpath -ldflags "-H windowsgui -s -w $(VERSION_LDFLAGS)" -o dist/windows/skiff-window.exe ./app/skiff-window && \
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 \
		$(GO) build -trimpath -ldflags "-H windowsgui -s -w $(VERSION_LDFLAGS)" -o dist/windows/skiff-tray.exe ./app/skiff-tray; \
		status=$$?; rm -f rsrc_windows_amd64.syso app/skiff-window/rsrc_windows_amd64.syso app/skiff-tray/rsrc_windows_amd64.syso; exit $$status
	sed 's/$$/\r/' LICENSE > dist/windows/LICENSE.txt
	@# wintun.dll (TUN mode) and Wintun's licence, beside skiff.exe: the
	@# official wintun 0.14.1 amd64 build as nebula v1.9.5 carries it, got
	@# with `go mod download` (the module cache keeps it) and checked against
	@# its pinned SHA-256; any other file fails the build
	@# (packaging/windows/wintun/README.md)
	cd packaging && $(GO) run ./cmd/skiffpkg wintun --go $(GO) --out ../dist/windows
	makensis -V2 -DVERSION=$(VERSION) -DFILEVERSION=$(VERSION).$(RELEASE) -DSRC=$(CURDIR)/dist/windows \
		-DOUT=$(CURDIR)/dist/skiff-$(VERSION)-windows-amd64-setup.exe packaging/windows/skiff.nsi
	@ls -l dist/windows/skiff.exe dist/windows/skiff-window.exe dist/windows/skiff-tray.exe dist/windows/wintun.dll dist/skiff-$(VERSION)-windows-amd64-setup.exe

# Checks of the built packages (metadata, contents, lintian, an install on
# this machine and purge) and the Wine smoke test of the Windows build,
# with the installer: a silent install and uninstall under Wine
# (test/winsmoke TestInstaller).
package-test: package
	cd packaging && $(GO) vet ./... && $(GO) test -count=1 -v ./...
	cd test && SKIFF_SETUP_EXE=$(CURDIR)/dist/skiff-$(VERSION)-windows-amd64-setup.exe $(GO) test -count=1 -v ./winsmoke

# The deb installed the way a user would, into a fresh Debian root made by
# debootstrap (cached in /var/cache/skiff-fresh-root): apt-get must pull
# every runtime dependency. Not in CI (network and minutes).
package-test-fresh: package-linux
	cd packaging && SKIFF_FRESH_ROOT=1 $(GO) test -count=1 -v -run TestFreshRoot -timeout 30m ./linux

cross:
	@for os in $(CROSS_OS); do \
		echo "cross: GOOS=$$os $(CROSS_PKGS)"; \
		GOOS=$$os CGO_ENABLED=0 $(GO) build $(CROSS_PKGS) || exit 1; \
	done

bench: build
	$(MAKE) -C test bench

# What the idle window costs under Xvfb (CPU, wake-ups, RSS; a bare Fyne
# window beside it), with the core in a service: test/out/measure-window.txt.
# Not part of CI. MEASURE_ENV passes SKIFF_MEASURE_BACKEND=local,
# SKIFF_MEASURE_SECONDS, SKIFF_MEASURE_RUNS or SKIFF_MEASURE_BIN.
measure-window:
	cd test && SKIFF_MEASURE=1 $(MEASURE_ENV) go test ./gui -run '^TestMeasure(Tray|Window)$$' -count=1 -v -timeout 40m

# The window's bundled CJK subset (app/window/font), made again from Noto Sans CJK
# (the same bytes from the same fonts-noto-cjk). Not part of CI.
cjk-font:
	$(SUDO) apt-get install -y -q python3-fonttools fonts-noto-cjk
	/usr/bin/python3 app/window/font/subset.py app/window/font/cjk-subset.otf

# TUN mode: skiff --tun against sing-box's tun (gvisor stack) in network
# namespaces, plus 500 connections (root).
bench-tun: build
	$(MAKE) -C test bench-tun

# Rule sets: skiff's load time, matching cost and RSS with bypass-CN sets of
# real sizes, against sing-box loading the same .srs files (not CI).
bench-rules: build
	$(MAKE) -C test bench-rules

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
	./bin/skiff window

# A demo Hysteria2 server on loopback and `skiff run` against it, in the
# foreground: the core without the window.
demo: build
	cd test && $(GO) run ./cmd/demo

clean:
	rm -rf bin dist test/bin test/out
