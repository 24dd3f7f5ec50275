package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

// Ways to run skiff as the benchmark's client (-skiff-via).
const (
	viaService = "service" // `skiff service`, driven by `skiff import` and `skiff connect --tun` over its socket
	viaRun     = "run"     // `skiff run --tun`, the core in one process
)

// svcRuns numbers the services started, for their private directories.
var svcRuns int

// startSkiffService starts `skiff service` as root in the client namespace,
// then, as a client of its socket, imports the server's link and connects
// in TUN mode: the process users run. It fills c's process, socket and TUN
// device, and the service's idle RSS, read before anything connects.
func (b *bench) startSkiffService(ctx context.Context, c *client, proto, link string) error {
	svcRuns++
	// The TUN state file is /run/skiff/tun-state.json, machine-wide: a
	// private tmpfs there (ip netns exec gives the process a mount
	// namespace of its own).
	wrap := b.topo.inClient("sh", "-c", `mkdir -p /run/skiff && mount -t tmpfs -o size=1m,mode=0700 tunbench /run/skiff && exec "$0" "$@"`)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	svc, err := harness.StartSkiffService(sctx, "skiff-service-"+proto, b.skiffBin,
		filepath.Join(b.dir, fmt.Sprintf("service-%d", svcRuns)), append([]string{"ip"}, wrap...)...)
	if err != nil {
		return err
	}
	c.p, c.socket = svc.Process, svc.Socket
	fail := func(err error) error {
		c.p.Stop()
		return fmt.Errorf("%w\n--- skiff service output ---\n%s", err, tail(c.p.Output(), 30))
	}
	if err := sleep(ctx, time.Second); err != nil {
		return fail(err)
	}
	c.idleMiB, _ = measure.MemMiB(c.p.Pid(), "VmRSS")
	st, err := svc.Connect(sctx, link, "--tun")
	if err != nil {
		return fail(err)
	}
	c.tunDev = st.TUN
	return nil
}

// windowIdle starts the window, skiff-window, as a client of c's service
// on a virtual display (Xvfb), lets it settle and returns its RSS in MiB.
func (b *bench) windowIdle(ctx context.Context, c *client, settle time.Duration) (float64, error) {
	win, err := harness.WindowBinary()
	if err != nil {
		return 0, err
	}
	display := fmt.Sprintf(":%d", 90+os.Getpid()%100)
	x, err := harness.StartProcess("xvfb", "Xvfb", display, "-screen", "0", "1024x768x24", "-nolisten", "tcp", "-noreset")
	if err != nil {
		return 0, fmt.Errorf("Xvfb (make deps installs it): %w", err)
	}
	defer x.Stop()
	if err := sleep(ctx, time.Second); err != nil {
		return 0, err
	}
	home := filepath.Join(b.dir, "window-home-"+strconv.Itoa(svcRuns))
	if err := os.MkdirAll(home, 0o700); err != nil {
		return 0, err
	}
	w, err := harness.StartProcess("skiff-window", "env", "DISPLAY="+display, "HOME="+home, "SKIFF_CONFIG_DIR="+home,
		"SKIFF_NO_TRAY=1", "LIBGL_ALWAYS_SOFTWARE=1", win, "--socket", c.socket)
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	if err := waitText(ctx, w, "a client of the service", 30*time.Second); err != nil {
		return 0, err
	}
	if err := sleep(ctx, settle); err != nil {
		return 0, err
	}
	return measure.MemMiB(w.Pid(), "VmRSS")
}
