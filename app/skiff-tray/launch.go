package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/skiffvpn/skiff/app/service"
)

// launch is what one start of skiff-tray asks for. The app menu, a deep
// link and `skiff` without a command start skiff-tray with --open (and
// the link); the login item starts it bare, for the tray alone.
type launch struct {
	socket    string
	configDir string   // a profile of its own: the window runs the core on it, no service
	logLevel  string   // the window's, passed on
	open      bool     // show the window now
	links     []string // the window's arguments (deep links), which it checks
}

// parseLaunch reads skiff-tray's command line. A link implies --open.
func parseLaunch(args []string, stderr io.Writer) (launch, error) {
	var l launch
	fs := flag.NewFlagSet("skiff-tray", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&l.socket, "socket", service.DefaultSocket, "the service's socket")
	fs.StringVar(&l.configDir, "config-dir", "", "the window's profile directory: the window runs the core on it, without the service")
	fs.StringVar(&l.logLevel, "log-level", "", "the window's log level")
	fs.BoolVar(&l.open, "open", false, "open the window now (else the tray alone; a second launch always opens it)")
	if err := fs.Parse(args); err != nil {
		return launch{}, err
	}
	l.links = fs.Args()
	l.open = l.open || len(l.links) > 0
	return l, nil
}

// handoff is what a later launch hands the running tray: always "open",
// then the links.
func (l launch) handoff() []string { return append([]string{openMessage}, l.links...) }

const openMessage = "open"

// handoffLinks are the links of a hand-over; nil for one that is not an
// "open".
func handoffLinks(args []string) ([]string, error) {
	if len(args) == 0 || args[0] != openMessage {
		return nil, fmt.Errorf("skiff-tray: a hand-over that is not %q: %d arguments", openMessage, len(args))
	}
	return args[1:], nil
}

// windowArgs is skiff-window's command line for links: trayProcess when
// this tray keeps the tray icon (the window then ends when closed). The
// links follow "--", so that none is read as a flag.
func (l launch) windowArgs(trayProcess bool, links []string) []string {
	a := []string{"--socket", l.socket}
	if l.configDir != "" {
		a = append(a, "--config-dir", l.configDir)
	}
	if l.logLevel != "" {
		a = append(a, "--log-level", l.logLevel)
	}
	if trayProcess {
		a = append(a, "--tray-process")
	}
	return append(append(a, "--"), links...)
}
