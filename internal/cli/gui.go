//go:build cgo

package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"

	fyneapp "fyne.io/fyne/v2/app"

	"github.com/skiffvpn/skiff/app"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
	"github.com/skiffvpn/skiff/internal/procs"
)

// runGUI implements `skiff gui` (and skiff without arguments): the window
// with the core in the same process, and the subscriptions refreshed in the
// background.
func runGUI(args []string, _ io.Reader, _, stderr io.Writer) (code int) {
	fs := flag.NewFlagSet("gui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("config-dir", "", "profile directory (default: $"+profile.EnvConfigDir+" or the OS config dir)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var lv slog.LevelVar
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "skiff gui: --log-level: %v\n", err)
		return 2
	}
	store, err := profile.Open(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "skiff gui: %v\n", err)
		return 1
	}
	if _, err := store.Load(); err != nil {
		var cerr *profile.CorruptError
		if !errors.As(err, &cerr) {
			fmt.Fprintf(stderr, "skiff gui: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "skiff gui: warning: %v\n", err)
	}
	if runtime.GOOS == "linux" && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(stderr, "skiff: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are empty); use `skiff run` for the core without a window")
		return 1
	}
	// GLFW panics when the display cannot be opened after all: say so
	// instead of a stack trace.
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "skiff: the window could not be opened: %v; use `skiff run` for the core without a window\n", r)
			code = 1
		}
	}()
	ctrl := core.NewController(core.Options{LogOutput: stderr, LogLevel: &lv})
	fa := fyneapp.NewWithID(app.ID)
	ui, err := app.New(fa, app.Options{Controller: ctrl, Store: store})
	if err != nil {
		fmt.Fprintf(stderr, "skiff gui: %v\n", err)
		return 1
	}
	log := ctrl.Logger()
	ref := &subscription.Refresher{
		Store: store,
		Logf:  func(format string, a ...any) { log.Info(fmt.Sprintf(format, a...)) },
		OnRefresh: func(string, *subscription.Result, error) {
			ui.ProfileChanged()
		},
	}
	ref.Start(ui.Context())
	// One P while one is enough (package procs says why).
	stopProcs := procs.Start(ui.Context(), procs.DefaultPolicy(), log)
	ui.Window().ShowAndRun()
	stopProcs()
	ref.Stop()
	ui.Close()
	return 0
}
