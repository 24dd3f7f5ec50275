// Command skiff-tray is how Skiff starts: the app menu, a deep link, the
// login item and `skiff` without a command all run it, and it decides what
// runs. With a service it is the tray icon, a client of the service without
// Fyne or a GL context (package tray), one per user (a later launch hands
// it "open" and its links); it starts skiff-window, found beside it, to
// show the window, which ends when it is closed. Without a service the
// core has nowhere to live but the window, so skiff-tray becomes
// skiff-window the usual way (its own tray icon, the core inside).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/app/instance"
	"github.com/skiffvpn/skiff/app/service"
	"github.com/skiffvpn/skiff/app/tray"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/selfexe"
	"github.com/skiffvpn/skiff/internal/version"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println("skiff-tray", version.Get())
		return
	}
	win, err := windowPath()
	if err != nil {
		fmt.Fprintf(os.Stderr, "skiff-tray: %v\n", err)
		os.Exit(1)
	}
	os.Exit(run(os.Args[1:], win, os.Stdout, os.Stderr))
}

// run is skiff-tray with win the window's program. It decides, for every
// way Skiff is started, what runs: one tray (this process, a client of the
// service) and at most one window.
func run(args []string, win string, stdout, stderr io.Writer) int {
	l, err := parseLaunch(args, stderr)
	if err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if l.configDir == "" {
		c := service.NewClient(l.socket)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = c.Status(ctx)
		cancel()
		if err == nil {
			defer c.Close()
			return runTray(l, c, win, stdout, stderr, log)
		}
		c.Close()
		fmt.Fprintf(stderr, "skiff-tray: %v; the window runs the core instead\n", err)
	}
	// The window with the core inside, its own tray icon and its own single
	// instance (a second launch raises it): this process becomes it.
	if err := replace(win, l.windowArgs(false, l.links)); err != nil {
		fmt.Fprintf(stderr, "skiff-tray: starting %s: %v\n", win, err)
		return 1
	}
	return 0
}

// runTray shows the tray as a client of the service c until Quit.
func runTray(l launch, c *api.Client, win string, stdout, stderr io.Writer, log *slog.Logger) int {
	prefsDir, err := profile.DefaultDir()
	if err == nil {
		err = os.MkdirAll(prefsDir, 0o700)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff-tray: %v\n", err)
		return 1
	}
	// One tray per user: a later launch hands it "open" and its links.
	single, err := instance.Acquire(context.Background(), instance.Config{Name: "tray"}, l.handoff())
	if errors.Is(err, instance.ErrRunning) {
		fmt.Fprintln(stderr, "skiff-tray: the tray runs already; it was asked to open the window")
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff-tray: warning: %v\n", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := &windows{path: win, l: l, stdout: stdout, stderr: stderr, log: log}
	defer w.wait()
	if single != nil {
		w.serve(single.Messages())
		defer single.Close()
	}
	if l.open {
		if err := w.open(l.links); err != nil {
			log.Warn("skiff-tray: opening the window", "err", err)
		}
	}
	fmt.Fprintf(stderr, "skiff-tray: a client of the service at %s\n", l.socket)
	tray.Run(ctx, tray.Options{Backend: c, PrefsDir: prefsDir, Window: func() error { return w.open(nil) }, Logger: log})
	return 0
}

// windows starts the tray's windows, skiff-window processes that end when
// closed, and reaps them. A window started while one is open hands its
// links to that one, which comes to the front, and exits.
type windows struct {
	path           string
	l              launch
	stdout, stderr io.Writer
	log            *slog.Logger
	wg             sync.WaitGroup
}

func (w *windows) open(links []string) error {
	cmd := exec.Command(w.path, w.l.windowArgs(true, links)...)
	cmd.Stdout, cmd.Stderr = w.stdout, w.stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		cmd.Wait()
	}()
	return nil
}

// serve opens the window for each hand-over of msgs until it is closed.
func (w *windows) serve(msgs <-chan instance.Message) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for m := range msgs {
			links, err := handoffLinks(m.Args)
			if err != nil {
				w.log.Warn("skiff-tray: ignored", "err", err)
				continue
			}
			if err := w.open(links); err != nil {
				w.log.Warn("skiff-tray: opening the window", "err", err)
			}
		}
	}()
}

// wait waits for serve's end (its channel closed) and the windows'.
func (w *windows) wait() { w.wg.Wait() }

// windowPath is skiff-window beside this executable.
func windowPath() (string, error) {
	path, err := selfexe.Beside("skiff-window")
	if err != nil {
		return "", fmt.Errorf("finding skiff-tray's own executable: %w", err)
	}
	return path, nil
}
