//go:build darwin || windows

package tun

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// On macOS and Windows the routes are changed with the system's own tools
// (route, ifconfig, netsh): golang.org/x/net/route and the IP Helper API
// would do without them, but the commands are what every administrator can
// read in the state file and run by hand. Each change records the command
// that undoes it.

// runCmd runs argv and returns its error with its output.
func runCmd(argv ...string) error {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// change records undo, then runs do.
func (t *Tunnel) change(do, undo []string) error {
	if undo != nil {
		if err := t.state.record(Change{Kind: "command", Undo: undo}); err != nil {
			return err
		}
	}
	if err := runCmd(do...); err != nil {
		return fmt.Errorf("tun: %w", err)
	}
	t.log.Debug("tun: ran", "cmd", strings.Join(do, " "))
	return nil
}

func undo(c Change) error {
	if len(c.Undo) == 0 {
		return nil
	}
	if c.Kind == "wfp" {
		return undoWFP(c.Undo) // the Windows kill switch's filters
	}
	err := runCmd(c.Undo...)
	if err != nil && routeGone(err) {
		return nil
	}
	return err
}

// splitDefault returns the two halves of a family's address space: routes
// for them win over the default route without replacing it.
func splitDefault(v6 bool) []netip.Prefix {
	if v6 {
		return []netip.Prefix{netip.MustParsePrefix("::/1"), netip.MustParsePrefix("8000::/1")}
	}
	return []netip.Prefix{netip.MustParsePrefix("0.0.0.0/1"), netip.MustParsePrefix("128.0.0.0/1")}
}
