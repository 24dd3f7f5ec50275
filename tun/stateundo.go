package tun

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The undo commands of "command" changes are run as root (SYSTEM on
// Windows) by cleanup, so the decoder admits each only in the exact form
// the code that records it writes (tun_darwin.go, strict_darwin.go,
// killswitch_darwin.go, tun_windows.go), with every argument parsed:
// nothing but a route deletion or the release of Skiff's own pf anchor and
// reference. A netsh that is not one of Skiff's route deletions
// (`netsh add helper C:\x.dll` loads a DLL into netsh, as SYSTEM) is refused
// before anything of the file is run.

// changeOS is the OS on which Skiff records each kind of change: a state
// file of one OS naming another's changes was not written by Skiff.
var changeOS = map[string]string{
	"link": "linux", "rule": "linux", "route": "linux", "nft": "linux",
	"wfp": "windows",
	// "command": darwin (route, pfctl) or windows (netsh), by its program.
}

// checkOS reports whether c is a change Skiff records on goos.
func (c Change) checkOS(goos string) error {
	want := changeOS[c.Kind]
	if c.Kind == "command" && len(c.Undo) > 0 {
		switch c.Undo[0] {
		case "route", "pfctl":
			want = "darwin"
		case "netsh":
			want = "windows"
		}
	}
	if want != goos {
		return fmt.Errorf("%s is not a change Skiff records on %q", c, goos)
	}
	return nil
}

// checkUndoCommand reports whether argv is one of the undo commands Skiff
// records: the deletion of a route it added, or pfctl releasing its anchor
// or its reference on pf.
func checkUndoCommand(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("empty undo command")
	}
	var err error
	switch argv[0] {
	case "route":
		err = checkRouteUndo(argv[1:])
	case "pfctl":
		err = checkPfctlUndo(argv[1:])
	case "netsh":
		err = checkNetshUndo(argv[1:])
	default:
		err = fmt.Errorf("program %q", argv[0])
	}
	if err != nil {
		return fmt.Errorf("undo command %q is not one Skiff records: %w", argv, err)
	}
	return nil
}

// checkRouteUndo admits macOS's
//
//	route -n delete -inet|-inet6 -net PREFIX GATEWAY
//	route -n delete -inet|-inet6 -net HALF -interface utunN
//
// the first for an excluded prefix via the default gateway (an address,
// with a zone for a link-local IPv6 one), the second for a half of the
// address space into Skiff's utun device.
func checkRouteUndo(args []string) error {
	if len(args) != 6 && len(args) != 7 {
		return fmt.Errorf("%d arguments", len(args))
	}
	if args[0] != "-n" || args[1] != "delete" || args[3] != "-net" {
		return fmt.Errorf("not a route deletion")
	}
	v6, err := familyFlag(args[2], "-inet", "-inet6")
	if err != nil {
		return err
	}
	p, err := familyPrefix(args[4], v6)
	if err != nil {
		return err
	}
	if len(args) == 7 {
		if args[5] != "-interface" || !isUtun(args[6]) {
			return fmt.Errorf("%q %q is not -interface utunN", args[5], args[6])
		}
		if !isSplitHalf(p) {
			return fmt.Errorf("route %s into %s is not a half of the address space", p, args[6])
		}
		return nil
	}
	gw, err := netip.ParseAddr(args[5])
	if err != nil || gw.Is4() == v6 || gw.Is4In6() || (gw.Zone() != "" && (!gw.IsLinkLocalUnicast() || !isZone(gw.Zone()))) {
		return fmt.Errorf("gateway %q", args[5])
	}
	return nil
}

// familyFlag maps a family argument to whether it names IPv6.
func familyFlag(s, v4, v6 string) (bool, error) {
	switch s {
	case v4:
		return false, nil
	case v6:
		return true, nil
	}
	return false, fmt.Errorf("family %q", s)
}

// familyPrefix parses a masked prefix of the family.
func familyPrefix(s string, v6 bool) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || p != p.Masked() || p.Addr().Is4() == v6 || p.Addr().Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("prefix %q", s)
	}
	return p, nil
}

// isSplitHalf reports whether p is one of the two halves of its family
// that Skiff routes into its device (splitDefault).
func isSplitHalf(p netip.Prefix) bool {
	return slices.Contains(splitHalves, p)
}

// splitHalves are splitDefault's prefixes of both families.
var splitHalves = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/1"), netip.MustParsePrefix("128.0.0.0/1"),
	netip.MustParsePrefix("::/1"), netip.MustParsePrefix("8000::/1"),
}

// isZone reports whether s is an interface name as a zone of a
// link-local gateway (en0, bridge100).
func isZone(s string) bool {
	if len(s) > maxLinkName {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// isDecimal reports whether s is 1 to max decimal digits.
func isDecimal(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkPfctlUndo admits `pfctl -a ANCHOR -F all` for Skiff's two anchors
// and `pfctl -X TOKEN` releasing the reference pfctl -E handed out.
func checkPfctlUndo(args []string) error {
	switch {
	case len(args) == 4 && args[0] == "-a" && args[2] == "-F" && args[3] == "all":
		if args[1] != pfAnchor && args[1] != pfKillSwitchAnchor {
			return fmt.Errorf("anchor %q is not Skiff's", args[1])
		}
		return nil
	case len(args) == 2 && args[0] == "-X":
		if _, err := strconv.ParseUint(args[1], 10, 64); err != nil || !isDecimal(args[1], 20) {
			return fmt.Errorf("token %q", args[1])
		}
		return nil
	}
	return fmt.Errorf("not a release of Skiff's anchor or reference")
}

// checkNetshUndo admits Windows'
//
//	netsh interface ipv4|ipv6 delete route prefix=P interface=N nexthop=G store=active
//	netsh interface ipv4|ipv6 delete route prefix=HALF interface=N store=active
//
// the first for an excluded prefix via the default route's interface and
// gateway, the second for a half of the address space into Skiff's
// adapter (N its index). That the halves name one adapter and the
// exclusions another is checked across the file (checkNetshAdapter).
func checkNetshUndo(args []string) error {
	_, _, err := parseNetshUndo(args)
	return err
}

// parseNetshUndo checks a netsh undo and returns the interface index it
// names and whether it is a route into Skiff's adapter (a half).
func parseNetshUndo(args []string) (ifIndex string, intoAdapter bool, err error) {
	if len(args) != 7 && len(args) != 8 {
		return "", false, fmt.Errorf("%d arguments", len(args))
	}
	if args[0] != "interface" || args[2] != "delete" || args[3] != "route" || args[len(args)-1] != "store=active" {
		return "", false, fmt.Errorf("not a deletion of an active route")
	}
	v6, err := familyFlag(args[1], "ipv4", "ipv6")
	if err != nil {
		return "", false, err
	}
	ps, ok := strings.CutPrefix(args[4], "prefix=")
	if !ok {
		return "", false, fmt.Errorf("%q is not prefix=", args[4])
	}
	p, err := familyPrefix(ps, v6)
	if err != nil {
		return "", false, err
	}
	idx, ok := strings.CutPrefix(args[5], "interface=")
	if !ok || !isDecimal(idx, 10) {
		return "", false, fmt.Errorf("%q is not interface=INDEX", args[5])
	}
	if len(args) == 7 {
		if !isSplitHalf(p) {
			return "", false, fmt.Errorf("route %s into the adapter is not a half of the address space", p)
		}
		return idx, true, nil
	}
	gs, ok := strings.CutPrefix(args[6], "nexthop=")
	gw, err := netip.ParseAddr(gs)
	if !ok || err != nil || gw.Is4() == v6 || gw.Is4In6() || gw.Zone() != "" {
		return "", false, fmt.Errorf("%q is not nexthop=ADDRESS", args[6])
	}
	return idx, false, nil
}

// checkNetshAdapter checks the netsh undos of a file together: the routes
// into the adapter all name one interface (Skiff's adapter), and no
// exclusion names it (they go via the default route's interface).
func checkNetshAdapter(changes []Change) error {
	adapter := ""
	for _, c := range changes {
		if c.Kind != "command" || len(c.Undo) == 0 || c.Undo[0] != "netsh" {
			continue
		}
		idx, into, _ := parseNetshUndo(c.Undo[1:])
		if !into {
			continue
		}
		if adapter != "" && idx != adapter {
			return fmt.Errorf("routes into two adapters, %s and %s", adapter, idx)
		}
		adapter = idx
	}
	for _, c := range changes {
		if c.Kind != "command" || len(c.Undo) == 0 || c.Undo[0] != "netsh" {
			continue
		}
		if idx, into, _ := parseNetshUndo(c.Undo[1:]); !into && idx == adapter {
			return fmt.Errorf("an excluded route via Skiff's adapter %s", idx)
		}
	}
	return nil
}
