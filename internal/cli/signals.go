package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// stopSignals end a run cleanly (routes restored): Ctrl-C, the service
// manager's SIGTERM, and SIGHUP when the terminal goes away.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// ignoreSIGPIPE keeps a closed stdout or stderr (`skiff run … | head`)
// from killing the process at its next log line, before it could restore
// the routes: the write fails with EPIPE instead, and logging goes on into
// the void.
func ignoreSIGPIPE() { signal.Ignore(syscall.SIGPIPE) }
