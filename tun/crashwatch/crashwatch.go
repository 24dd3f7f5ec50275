// Package crashwatch restores the routes of a TUN run when its process dies
// of a crash that no deferred call survives: an unrecovered panic in any
// goroutine, a fatal runtime error (concurrent map writes, out of memory),
// or SIGQUIT. Go runs no deferred function of other goroutines then, so the
// restoring cannot happen inside the process; it happens in a small
// monitor process, a copy of the same executable started by Watch, that
// receives the runtime's crash report through a pipe
// (runtime/debug.SetCrashOutput) and, once the crashed process is gone,
// undoes what its state file records (tun.Cleanup).
//
// A process that ends without a crash (a clean stop, exit, kill -9) sends
// no report: the monitor just ends. A clean stop has restored everything
// itself; kill -9 is restored at the next start, which cleans up before it
// opens a device.
package crashwatch

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/tun"
)

// Environment of the monitor process: the state file to restore and the
// watched process's id.
const (
	envState = "SKIFF_CRASHWATCH_STATE"
	envPID   = "SKIFF_CRASHWATCH_PID"
)

// A process has one crash output, so one watcher.
var (
	mu      sync.Mutex
	watched string // the state file the current monitor restores
)

// Watch starts a monitor that restores stateFile if this process crashes.
// It is idempotent for the same file; a different file replaces the
// monitor. The executable must call MaybeMonitor first thing in main.
func Watch(stateFile string, log *slog.Logger) error {
	if stateFile == "" {
		stateFile = tun.DefaultStateFile()
	}
	mu.Lock()
	defer mu.Unlock()
	if watched == stateFile {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("crashwatch: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("crashwatch: %w", err)
	}
	defer w.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envState+"="+stateFile, envPID+"="+strconv.Itoa(os.Getpid()))
	cmd.Stdin = r
	cmd.Stderr = os.Stderr
	// Its own process group: a Ctrl-C at the terminal reaches skiff, which
	// stops cleanly, and not the monitor, which would miss a crash then.
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		r.Close()
		return fmt.Errorf("crashwatch: start monitor: %w", err)
	}
	r.Close()
	// The monitor is reaped here when it ends (after this process stops
	// cleanly, it sees the pipe close and exits).
	go cmd.Wait()
	if err := debug.SetCrashOutput(w, debug.CrashOptions{}); err != nil {
		cmd.Process.Kill()
		return fmt.Errorf("crashwatch: %w", err)
	}
	watched = stateFile
	log.Debug("crashwatch: monitor started", "pid", cmd.Process.Pid, "state", stateFile)
	return nil
}

// MaybeMonitor runs the monitor and exits when this process was started
// as one by Watch; otherwise it returns at once.
func MaybeMonitor() {
	state := os.Getenv(envState)
	if state == "" {
		return
	}
	pid, _ := strconv.Atoi(os.Getenv(envPID))
	os.Exit(monitor(os.Stdin, state, pid, os.Stderr))
}

// monitor reads the crash report from r until the watched process is gone
// (the pipe closes with its last descriptor), then restores state if a
// report came.
func monitor(r io.Reader, state string, pid int, stderr io.Writer) int {
	// The terminal's signals and a closed stderr must not end the monitor
	// before the process it watches.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	n, _ := io.Copy(io.Discard, r)
	if n == 0 {
		return 0 // no crash
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	log.Warn("skiff crashed: restoring its routes and rules", "pid", pid, "state", state)
	// The pipe closes as the process exits; it may not be reaped yet.
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err = tun.Cleanup(state, log)
		if !errors.Is(err, tun.ErrStillRunning) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		log.Error("crashwatch: restore failed; run `skiff cleanup`", "err", err)
		return 1
	}
	log.Info("routes and rules restored after the crash")
	return 0
}
