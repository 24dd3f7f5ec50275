package tun

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	wgtun "golang.zx2c4.com/wireguard/tun"
)

const goos = "linux"

func permissionError(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

// openPlatform creates the device (with IFF_VNET_HDR offloads where the
// kernel has them), configures it through netlink and installs the policy
// routing of policyLinux. Skiff's sockets carry the fwmark, so they leave by
// the main table and follow its default route wherever it points: there is
// no interface to track.
func openPlatform(t *Tunnel) error {
	cfg := &t.cfg
	t.bind = newBypass(cfg.Mark)
	// Skiff creates its device and uses no other: TUNSETIFF would attach
	// to a persistent tun of the name (`ip tuntap add`), and a failed
	// attach to another program's device must not lead to deleting it.
	if err := DeviceFree(cfg.Name); err != nil {
		return err
	}
	dev, err := wgtun.CreateTUN(cfg.Name, cfg.MTU)
	if err != nil {
		if permissionError(err) {
			return fmt.Errorf("tun: create %s: %w", cfg.Name, ErrPermission)
		}
		return fmt.Errorf("tun: create %s: %w", cfg.Name, err)
	}
	t.Device = dev
	// A persistent device made between the check and the create: not ours
	// (Skiff never makes one persistent). Open's undo closes the file,
	// which leaves a persistent device as it was.
	if p, err := persistent(dev); err != nil || p {
		if err == nil {
			err = fmt.Errorf("tun: %s: %w (a persistent tun)", cfg.Name, ErrDeviceExists)
		}
		return err
	}
	if t.name, err = dev.Name(); err != nil {
		return fmt.Errorf("tun: device name: %w", err)
	}
	// The device goes with the process that holds it (the kernel removes
	// it when its file closes); it is recorded, once it is known to be
	// Skiff's, as what the routes below lead into.
	if err := t.state.record(Change{Kind: "link", Link: t.name}); err != nil {
		return err
	}
	link, err := netlink.LinkByName(t.name)
	if err != nil {
		return fmt.Errorf("tun: find %s: %w", t.name, err)
	}
	for _, p := range []netip.Prefix{cfg.Addr4, cfg.Addr6} {
		if !p.IsValid() {
			continue
		}
		a := &netlink.Addr{IPNet: ipNet(p)}
		if p.Addr().Is6() {
			a.Flags = unix.IFA_F_NODAD
		}
		if err := netlink.AddrAdd(link, a); err != nil {
			return fmt.Errorf("tun: address %s on %s: %w", p, t.name, err)
		}
	}
	if err := netlink.LinkSetMTU(link, cfg.MTU); err != nil {
		return fmt.Errorf("tun: MTU %d on %s: %w", cfg.MTU, t.name, err)
	}
	if err := netlink.LinkSetTxQLen(link, txQueueLen); err != nil {
		return fmt.Errorf("tun: transmit queue of %s: %w", t.name, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("tun: bring %s up: %w", t.name, err)
	}
	if !cfg.AutoRoute {
		return nil
	}
	routes, rules := policyLinux(cfg, t.name)
	for _, r := range routes {
		if err := t.state.record(Change{Kind: "route", Route: &r}); err != nil {
			return err
		}
		nr, err := netlinkRoute(r)
		if err != nil {
			return err
		}
		if err := netlink.RouteReplace(nr); err != nil {
			return fmt.Errorf("tun: add route %s: %w", r, err)
		}
		t.log.Debug("tun: added", "route", r.String())
	}
	for _, r := range rules {
		if err := t.state.record(Change{Kind: "rule", Rule: &r}); err != nil {
			return err
		}
		if err := netlink.RuleAdd(netlinkRule(r)); err != nil && !errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("tun: add rule %s: %w", r, err)
		}
		t.log.Debug("tun: added", "rule", r.String())
	}
	return nil
}

// repairPlatform puts back the recorded routes and rules that are
// missing. Adding a rule that exists fails with EEXIST and changes nothing;
// a route is replaced (the same route again). The routes go first: a rule
// is only as good as the table it looks up.
func repairPlatform(t *Tunnel) ([]string, error) {
	var fixed []string
	var errs []error
	changes := append([]Change(nil), t.state.State.Changes...)
	for _, c := range changes {
		if c.Route == nil {
			continue
		}
		nr, err := netlinkRoute(*c.Route)
		if err != nil {
			errs = append(errs, fmt.Errorf("tun: route %s: %w", c.Route, err))
			continue
		}
		have, err := netlink.RouteListFiltered(nr.Family, &netlink.Route{Table: nr.Table, Dst: nr.Dst, LinkIndex: nr.LinkIndex},
			netlink.RT_FILTER_TABLE|netlink.RT_FILTER_DST|netlink.RT_FILTER_OIF)
		if err == nil && len(have) > 0 {
			continue
		}
		if err := netlink.RouteReplace(nr); err != nil {
			errs = append(errs, fmt.Errorf("tun: re-add route %s: %w", c.Route, err))
			continue
		}
		fixed = append(fixed, "route "+c.Route.String())
	}
	for _, c := range changes {
		if c.Rule == nil {
			continue
		}
		err := netlink.RuleAdd(netlinkRule(*c.Rule))
		switch {
		case err == nil:
			fixed = append(fixed, "rule "+c.Rule.String())
		case !errors.Is(err, syscall.EEXIST):
			errs = append(errs, fmt.Errorf("tun: re-add rule %s: %w", c.Rule, err))
		}
	}
	return fixed, errors.Join(errs...)
}

func undo(c Change) error {
	switch {
	case c.Rule != nil:
		err := netlink.RuleDel(netlinkRule(*c.Rule))
		if err != nil && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ESRCH)) {
			return nil
		}
		return err
	case c.Route != nil:
		nr, err := netlinkRoute(*c.Route)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil // the device is gone, and its routes with it
			}
			return err
		}
		err = netlink.RouteDel(nr)
		if err != nil && (errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.ENOENT)) {
			return nil
		}
		return err
	case c.Link != "":
		// Nothing to delete: Skiff's device is not persistent, and went
		// when its file closed (Close closes it before restoring, and the
		// kernel closes a crashed process's). A device of the name now is
		// another program's.
		return nil
	case c.Kind == "nft" && len(c.Undo) > 0 && c.Undo[0] == "nft":
		return undoNft(c.Undo)
	case len(c.Undo) > 0:
		return fmt.Errorf("a %q change cannot be undone on linux", c.Kind)
	}
	return nil
}

// DeviceFree returns an error wrapping ErrDeviceExists when a network
// device named name exists: Open would refuse it. (On macOS and Windows
// it returns nil: the system names the device, or Wintun's adapter.)
func DeviceFree(name string) error {
	l, err := netlink.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		return nil
	case err != nil:
		return fmt.Errorf("tun: look for a device named %s: %w", name, err)
	}
	return fmt.Errorf("tun: %s: %w (a %s device, index %d): Skiff uses only a device it creates; choose another name in the TUN settings",
		name, ErrDeviceExists, l.Type(), l.Attrs().Index)
}

// persistent reports whether the TUN device dev has IFF_PERSIST, which
// only `ip tuntap add` (or another program) sets: TUNSETIFF attached to
// it instead of creating one.
func persistent(dev wgtun.Device) (bool, error) {
	rc, err := dev.File().SyscallConn() // not Fd: that would make the file blocking
	if err != nil {
		return false, fmt.Errorf("tun: device file: %w", err)
	}
	var flags uint16
	var ierr error
	err = rc.Control(func(fd uintptr) {
		var ifr *unix.Ifreq
		if ifr, ierr = unix.NewIfreq(""); ierr == nil {
			if ierr = unix.IoctlIfreq(int(fd), unix.TUNGETIFF, ifr); ierr == nil {
				flags = ifr.Uint16()
			}
		}
	})
	if err = errors.Join(err, ierr); err != nil {
		return false, fmt.Errorf("tun: TUNGETIFF: %w", err)
	}
	return flags&unix.IFF_PERSIST != 0, nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func family(f int) int {
	if f == 6 {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

func netlinkRule(r Rule) *netlink.Rule {
	nr := netlink.NewRule()
	nr.Family = family(r.Family)
	nr.Priority = r.Priority
	nr.Table = r.Table
	nr.Invert = r.Invert
	nr.SuppressPrefixlen = r.SuppressPrefixLen
	if r.Mark != 0 {
		nr.Mark = r.Mark
		mask := uint32(0xffffffff)
		nr.Mask = &mask
	}
	if r.Dst.IsValid() {
		nr.Dst = ipNet(r.Dst)
	}
	if r.IPProto != 0 {
		nr.IPProto = r.IPProto
	}
	if r.DPort != 0 {
		nr.Dport = netlink.NewRulePortRange(r.DPort, r.DPort)
	}
	switch r.Action {
	case "prohibit":
		nr.Table = 0
		nr.Type = unix.FR_ACT_PROHIBIT
	case "unreachable":
		nr.Table = 0
		nr.Type = unix.FR_ACT_UNREACHABLE
	}
	return nr
}

func netlinkRoute(r Route) (*netlink.Route, error) {
	nr := &netlink.Route{Dst: ipNet(r.Dst), Table: r.Table}
	if r.Dev != "" {
		l, err := netlink.LinkByName(r.Dev)
		if err != nil {
			return nil, err
		}
		nr.LinkIndex = l.Attrs().Index
	}
	if r.Gateway.IsValid() {
		nr.Gw = r.Gateway.AsSlice()
	}
	if r.Dst.Addr().Is6() {
		nr.Family = netlink.FAMILY_V6
	} else {
		nr.Family = netlink.FAMILY_V4
	}
	return nr, nil
}

// txQueueLen is the TUN device's transmit queue: the packets the kernel
// holds for skiff to read, each up to a 64 KiB GSO segment. The kernel's
// default, 500, overflows when a few hundred connections send at once, and
// every packet dropped there costs its connection a retransmission
// time-out: 500 connections moving 1 MiB each way through VLESS+WS+TLS took
// 88 s with 27,000 packets dropped at the device (sing-box: 11 s), and
// 17 s with this queue.
const txQueueLen = 10000
