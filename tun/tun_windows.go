package tun

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	wgtun "golang.zx2c4.com/wireguard/tun"
)

const goos = "windows"

// openPlatform opens a Wintun adapter (wintun.dll is loaded from beside
// the executable only, see loadWintun), gives it its addresses and MTU with
// netsh, and routes: the excluded prefixes via the current default
// gateway, then the two halves of each address space into the adapter. Routes are added with store=active,
// so a reboot also removes them. Skiff's sockets are bound to the default
// interface (IP_UNICAST_IF), which a watcher follows. Strict route points
// the adapter's DNS server into the tunnel and adds the WFP filters of
// planWFP in a dynamic session (see strictWindows).
func openPlatform(t *Tunnel) error {
	cfg := &t.cfg
	t.bind = newBypass(0)
	dll, err := loadWintun()
	if err != nil {
		return err
	}
	t.log.Debug("tun: wintun", "dll", dll)
	dev, err := wgtun.CreateTUN(cfg.Name, cfg.MTU)
	if err != nil {
		if errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			return fmt.Errorf("tun: create %s: %w", cfg.Name, ErrPermission)
		}
		return fmt.Errorf("tun: create %s: %w", cfg.Name, err)
	}
	t.Device = dev
	if t.name, err = dev.Name(); err != nil {
		return fmt.Errorf("tun: device name: %w", err)
	}
	ifi, err := net.InterfaceByName(t.name)
	if err != nil {
		return fmt.Errorf("tun: find %s: %w", t.name, err)
	}
	idx := fmt.Sprint(ifi.Index)
	if p := cfg.Addr4; p.IsValid() {
		mask := net.IP(net.CIDRMask(p.Bits(), 32)).String()
		if err := t.change([]string{"netsh", "interface", "ipv4", "set", "address", "name=" + idx, "static", p.Addr().String(), mask}, nil); err != nil {
			return err
		}
		if err := t.change([]string{"netsh", "interface", "ipv4", "set", "subinterface", idx, fmt.Sprintf("mtu=%d", cfg.MTU), "store=active"}, nil); err != nil {
			return err
		}
	}
	if p := cfg.Addr6; p.IsValid() {
		if err := t.change([]string{"netsh", "interface", "ipv6", "add", "address", "interface=" + idx, p.String(), "store=active"}, nil); err != nil {
			return err
		}
	}
	t.bind.follow(t, 5*time.Second, defaultInterface)
	if !cfg.AutoRoute {
		return nil
	}
	if cfg.StrictRoute {
		if err := t.strictWindows(idx); err != nil {
			return err
		}
	}
	for _, fam := range []int{4, 6} {
		has := (fam == 4 && cfg.Addr4.IsValid()) || (fam == 6 && cfg.Addr6.IsValid())
		if !has {
			continue
		}
		ipv := "ipv4"
		if fam == 6 {
			ipv = "ipv6"
		}
		if gw, gwIdx, ok := defaultRoute(fam, ifi.Index); ok {
			for _, p := range exclusions(cfg, fam) {
				if p.Addr().IsLoopback() || p.Addr().IsMulticast() || p.Addr().IsLinkLocalUnicast() {
					continue
				}
				args := []string{"route", "prefix=" + p.String(), fmt.Sprintf("interface=%d", gwIdx), "nexthop=" + gw.String(), "store=active"}
				if err := t.change(
					append([]string{"netsh", "interface", ipv, "add"}, args...),
					append([]string{"netsh", "interface", ipv, "delete"}, args...),
				); err != nil {
					return err
				}
			}
		}
		for _, p := range splitDefault(fam == 6) {
			args := []string{"route", "prefix=" + p.String(), "interface=" + idx, "store=active"}
			if err := t.change(
				append([]string{"netsh", "interface", ipv, "add"}, args...),
				append([]string{"netsh", "interface", ipv, "delete"}, args...),
			); err != nil {
				return err
			}
		}
	}
	return nil
}

// defaultRoute returns the gateway and interface index of the family's
// default route with the lowest metric, skipping the interface skip.
func defaultRoute(fam int, skip int) (netip.Addr, int, bool) {
	af := uint16(windows.AF_INET)
	if fam == 6 {
		af = windows.AF_INET6
	}
	var table *windows.MibIpForwardTable2
	if err := windows.GetIpForwardTable2(af, &table); err != nil {
		return netip.Addr{}, 0, false
	}
	defer windows.FreeMibTable(unsafe.Pointer(table))
	var (
		best    netip.Addr
		bestIdx int
		metric  = ^uint32(0)
	)
	for _, r := range table.Rows() {
		if r.DestinationPrefix.PrefixLength != 0 || int(r.InterfaceIndex) == skip {
			continue
		}
		gw := sockaddrAddr(&r.NextHop)
		if !gw.IsValid() || gw.IsUnspecified() {
			continue
		}
		if r.Metric < metric {
			best, bestIdx, metric = gw, int(r.InterfaceIndex), r.Metric
		}
	}
	return best, bestIdx, best.IsValid()
}

func sockaddrAddr(sa *windows.RawSockaddrInet) netip.Addr {
	switch sa.Family {
	case windows.AF_INET:
		a := (*windows.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrFrom4(a.Addr)
	case windows.AF_INET6:
		a := (*windows.RawSockaddrInet6)(unsafe.Pointer(sa))
		return netip.AddrFrom16(a.Addr)
	}
	return netip.Addr{}
}

// defaultInterface returns the name of the IPv4 default route's interface.
func defaultInterface(skip string) (string, error) {
	skipIdx := -1
	if ifi, err := net.InterfaceByName(skip); err == nil {
		skipIdx = ifi.Index
	}
	_, idx, ok := defaultRoute(4, skipIdx)
	if !ok {
		return "", errors.New("tun: no default route")
	}
	ifi, err := net.InterfaceByIndex(idx)
	if err != nil {
		return "", err
	}
	return ifi.Name, nil
}

// routeGone reports whether a netsh delete failed because the route or
// interface is gone.
func routeGone(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "element not found") || strings.Contains(s, "cannot find")
}

// strictWindows turns on strict route for the adapter with index idx. The
// system resolver is given a DNS server inside the tunnel, on the adapter
// (else, with DNS to other interfaces blocked, it would have none that
// answers); the adapter and its settings go away with the process, as its
// addresses do. Then the filters of planWFP go in, in a dynamic WFP session
// that Close closes and that Windows closes by itself if Skiff dies: no
// state is recorded for either.
func (t *Tunnel) strictWindows(idx string) error {
	cfg := &t.cfg
	for _, p := range []netip.Prefix{cfg.Addr4, cfg.Addr6} {
		dns, ok := tunnelDNSServer(p)
		if !ok {
			continue
		}
		ipv := "ipv4"
		if dns.Is6() {
			ipv = "ipv6"
		}
		if err := t.change([]string{"netsh", "interface", ipv, "set", "dnsservers", "name=" + idx, "source=static", "address=" + dns.String(), "register=none", "validate=no"}, nil); err != nil {
			return err
		}
	}
	nt, ok := t.Device.(*wgtun.NativeTun)
	if !ok {
		return fmt.Errorf("tun: strict route: %T is not a Wintun adapter", t.Device)
	}
	rules := planWFP(cfg)
	s, err := openStrictWFP(rules, nt.LUID())
	if err != nil {
		return err
	}
	t.closers = append(t.closers, s.Close)
	for _, r := range rules {
		t.log.Debug("tun: WFP filter", "rule", r.String())
	}
	return nil
}

// repairPlatform has nothing to put back here: the routes are the
// system's, changed with its commands, and the bypass follows the default
// interface by itself.
func repairPlatform(t *Tunnel) ([]string, error) { return nil, nil }

// DeviceFree returns nil here: the system names the device (macOS), or
// Wintun's adapter (Windows); see tun_linux.go.
func DeviceFree(string) error { return nil }
