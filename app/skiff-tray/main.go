// Command skiff-tray is Skiff's tray icon without the window: a client of
// the service, without Fyne or a GL context (package tray), that starts
// skiff-window, found beside it, when asked to open the window; the window
// ends when it is closed. Without a service the core has nowhere to live
// but the window, so skiff-tray starts skiff-window the usual way (its
// own tray icon, the core inside) and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/app/instance"
	"github.com/skiffvpn/skiff/app/service"
	"github.com/skiffvpn/skiff/app/tray"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/version"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "version") {
		fmt.Fprintln(stdout, "skiff-tray", version.Get())
		return 0
	}
	fs := flag.NewFlagSet("skiff-tray", flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", service.DefaultSocket, "the service's socket")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	win, err := windowPath()
	if err != nil {
		fmt.Fprintf(stderr, "skiff-tray: %v\n", err)
		return 1
	}
	prefsDir, err := profile.DefaultDir()
	if err == nil {
		err = os.MkdirAll(prefsDir, 0o700)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff-tray: %v\n", err)
		return 1
	}
	c := service.NewClient(*socket)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = c.Status(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "skiff-tray: %v; the window runs the core instead\n", err)
		cmd := exec.Command(win, "--socket", *socket)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(stderr, "skiff-tray: starting %s: %v\n", win, err)
			return 1
		}
		return 0
	}
	// One tray per user: a second launch opens the window instead.
	single, err := instance.Acquire(context.Background(), instance.Config{Name: "tray"}, []string{"open"})
	if errors.Is(err, instance.ErrRunning) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff-tray: warning: %v\n", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup // the windows started, reaped
	open := func() error {
		cmd := exec.Command(win, "--socket", *socket, "--tray-process")
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd.Wait()
		}()
		return nil
	}
	if single != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range single.Messages() {
				open()
			}
		}()
	}
	fmt.Fprintf(stderr, "skiff-tray: a client of the service at %s\n", *socket)
	tray.Run(ctx, tray.Options{Backend: c, PrefsDir: prefsDir, Window: open, Logger: log})
	if single != nil {
		single.Close()
	}
	wg.Wait()
	return 0
}

// windowPath is skiff-window beside this executable.
func windowPath() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("finding skiff-tray's own executable: %w", err)
	}
	name := "skiff-window"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(filepath.Dir(exe), name), nil
}
