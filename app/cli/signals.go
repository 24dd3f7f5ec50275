package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// stopContext is the context of a command that holds routes while it runs
// (`skiff run`, `skiff service`): it ends on one of stopSignals, after
// which the command stops the core, which restores them. A closed stdout
// or stderr does not kill it (ignoreSIGPIPE). Calling stop makes a second
// signal end the process at once.
func stopContext() (ctx context.Context, stop context.CancelFunc) {
	ignoreSIGPIPE()
	return signal.NotifyContext(context.Background(), stopSignals...)
}

// stopSignals end a run cleanly (routes restored): Ctrl-C, the service
// manager's SIGTERM, and SIGHUP when the terminal goes away.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// ignoreSIGPIPE keeps a closed stdout or stderr (`skiff run … | head`)
// from killing the process at its next log line, before it could restore
// the routes: the write fails with EPIPE instead, and logging goes on into
// the void.
func ignoreSIGPIPE() { signal.Ignore(syscall.SIGPIPE) }
