package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/skiffvpn/skiff/tun"
)

// runCleanup undoes what a TUN run recorded in its state file, for when it
// was killed before it could restore the routes itself.
func runCleanup(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("cleanup", stderr)
	state := fs.String("state", "", "state file of the TUN run (default: "+tun.DefaultStateFile()+")")
	verbose := fs.Bool("v", false, "print each change undone")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	routes, ks := tun.HasLeftovers(*state), tun.KillSwitchOn(*state)
	// This user's system proxy, when a crashed run left it on.
	if sp, err := systemProxy(""); err == nil {
		restored, err := sp.Recover(context.Background())
		if err != nil {
			fmt.Fprintf(stderr, "skiff cleanup: %v\n", err)
			return 1
		}
		if restored {
			fmt.Fprintln(stdout, "system proxy settings restored")
			if !routes && !ks {
				return 0
			}
		}
	}
	if !routes && !ks {
		fmt.Fprintln(stdout, "nothing to clean")
		return 0
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if routes {
		if err := tun.Cleanup(*state, log); err != nil {
			fmt.Fprintf(stderr, "skiff cleanup: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, "routes and rules restored")
	}
	if ks {
		if err := tun.DisableKillSwitch(*state, log); err != nil {
			fmt.Fprintf(stderr, "skiff cleanup: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, "kill switch removed")
	}
	return 0
}
