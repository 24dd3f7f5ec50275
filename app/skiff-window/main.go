// Command skiff-window is Skiff's desktop window (Fyne, so it needs cgo).
// It is a program of its own so that skiff — the CLI, `skiff run` and the
// privileged `skiff service` — stays cgo-free and never links or
// initialises Fyne; `skiff` without a command starts this program, found
// next to its own executable (app/cli/window.go).
//
// The window is a client of the service when one runs (the VPN then
// outlives it); without one it runs the core in its own process, for the
// local proxy.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	fyneapp "fyne.io/fyne/v2/app"

	"github.com/skiffvpn/skiff/app/autostart"
	"github.com/skiffvpn/skiff/app/instance"
	"github.com/skiffvpn/skiff/app/service"
	"github.com/skiffvpn/skiff/app/window"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/procs"
	"github.com/skiffvpn/skiff/internal/version"
	"github.com/skiffvpn/skiff/tun/crashwatch"
)

// windowGOGC is the window's GOGC when the core runs in the service.
const windowGOGC = 25

func main() {
	// A TUN run in this process (as root, without the service) starts a
	// copy of this executable as its crash monitor.
	crashwatch.MaybeMonitor()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run opens the window: as a client of the service when one runs, else
// with the core in the same process (and the subscriptions refreshed in
// the background).
func run(args []string, stdout, stderr io.Writer) (code int) {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		fmt.Fprintln(stdout, "skiff-window", version.Get())
		return 0
	}
	fs := flag.NewFlagSet("skiff-window", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("config-dir", "", "profile directory (default: $"+profile.EnvConfigDir+" or the OS config dir)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	socket := fs.String("socket", service.DefaultSocket, "the service's socket")
	fromTray := fs.Bool("tray-process", false, "started by skiff-tray, which keeps the tray icon and the proxy settings: closing the window ends it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var lv slog.LevelVar
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "skiff-window: --log-level: %v\n", err)
		return 2
	}
	if runtime.GOOS == "linux" && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(stderr, "skiff-window: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are empty); use `skiff run` for the core without a window")
		return 1
	}
	// GLFW panics when the display cannot be opened after all: say so
	// instead of a stack trace.
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "skiff-window: the window could not be opened: %v; use `skiff run` for the core without a window\n", r)
			code = 1
		}
	}()
	prefsDir, err := profile.DefaultDir()
	if *dir != "" {
		prefsDir = *dir
	}
	if err == nil {
		err = os.MkdirAll(prefsDir, 0o700)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff-window: %v\n", err)
		return 1
	}
	// One window per user: a later launch hands its arguments (an import
	// link) to the running one, which comes to the front.
	single, err := acquire(prefsDir, *socket, fs.Args())
	switch {
	case errors.Is(err, instance.ErrRunning):
		fmt.Fprintln(stderr, "skiff-window: Skiff's window is open already; it was asked to come to the front")
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "skiff-window: warning: %v; a later launch will open a second window\n", err)
	default:
		defer single.Close()
	}
	// The service when it runs (the VPN then outlives the window), else
	// the core in this process.
	opts := window.Options{PrefsDir: prefsDir}
	if opts.Login, err = autostart.Default(); err != nil {
		fmt.Fprintf(stderr, "skiff-window: warning: %v; Start at login is unavailable\n", err)
	}
	var (
		local *api.Local
		ctrl  *core.Controller
	)
	if *dir == "" {
		c := service.NewClient(*socket)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Status(ctx)
		cancel()
		switch {
		case err == nil:
			opts.Backend, opts.Service = c, true
			opts.TrayProcess = *fromTray
			// The window alone allocates little (a few KiB a second
			// while it shows live figures): a tighter heap goal costs it
			// next to nothing and holds some 6-9 MiB less.
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(windowGOGC)
			}
			defer c.Close()
			fmt.Fprintf(stderr, "skiff-window: a client of the service at %s\n", *socket)
		default:
			fmt.Fprintf(stderr, "skiff-window: %v; the core runs in this window (local proxy only)\n", err)
		}
	}
	if opts.Backend == nil {
		store, err := profile.Open(*dir)
		if err != nil {
			fmt.Fprintf(stderr, "skiff-window: %v\n", err)
			return 1
		}
		if _, err := store.Load(); err != nil {
			var cerr *profile.CorruptError
			if !errors.As(err, &cerr) {
				fmt.Fprintf(stderr, "skiff-window: %v\n", err)
				return 1
			}
			fmt.Fprintf(stderr, "skiff-window: warning: %v\n", err)
		}
		ctrl = core.NewController(core.Options{LogOutput: stderr, LogLevel: &lv})
		local = api.NewLocal(ctrl, store, nil)
		opts.Backend, opts.Logger = local, ctrl.Logger()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: &lv}))
		opts.Logger = log
	}
	fa := fyneapp.NewWithID(window.ID)
	ui, err := window.New(fa, opts)
	if err != nil {
		fmt.Fprintf(stderr, "skiff-window: %v\n", err)
		return 1
	}
	if local != nil {
		// The subscriptions are refreshed on schedule by the core that
		// owns the profile: here, this process.
		local.Start(ui.Context())
		defer local.Close()
	}
	// One P while one is enough (package procs says why), while the core
	// in this process runs; a service's client moves no traffic, and a
	// disconnected window samples nothing.
	governed := make(chan struct{})
	if ctrl != nil {
		events, stop := ctrl.Subscribe(16)
		defer stop()
		go func() {
			defer close(governed)
			procs.Follow(ui.Context(), procs.DefaultPolicy(), log, events, func() bool { return ctrl.Status().State == core.Running })
		}()
	} else {
		close(governed)
	}
	if single != nil {
		go func() {
			for m := range single.Messages() {
				ui.Handoff(m.Args)
			}
		}()
	}
	if args := fs.Args(); len(args) > 0 {
		fa.Lifecycle().SetOnStarted(func() { ui.Handoff(args) })
	}
	ui.Window().ShowAndRun()
	ui.Close()
	<-governed
	return 0
}
