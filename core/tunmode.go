package core

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/skiffvpn/skiff/core/dns"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/internal/sysdial"
	"github.com/skiffvpn/skiff/tun"
	"github.com/skiffvpn/skiff/tun/crashwatch"
)

// ApplyKillSwitch puts the kill switch of tc in force, or removes it when
// tc.KillSwitch is off. A service calls it when it starts, before it
// connects, so that the kill switch holds from boot; a run calls it before
// it opens the device. servers are the servers' addresses (they pass on
// macOS and Windows, where Skiff's sockets carry no mark).
func ApplyKillSwitch(tc *TUNConfig, device string, servers []netip.Prefix, log *slog.Logger) error {
	if !tc.KillSwitch {
		return tun.DisableKillSwitch(tc.StateFile, log)
	}
	if device == "" {
		device = tc.Name
	}
	if err := tun.CheckName(device); err != nil {
		// A name saved before names were checked: the kill switch holds
		// for the default device rather than not at all (a run with the
		// name is refused).
		if log != nil {
			log.Warn("tun: kill switch for the default device: the configured name is refused", "err", err)
		}
		device = tun.DefaultName
	}
	return tun.EnableKillSwitch(tun.KillSwitch{Device: device, AllowLAN: tc.KillSwitchAllowLAN,
		Servers: servers, StateFile: tc.StateFile, Logger: log})
}

// ErrTUNPermission is returned (wrapped) by Start when TUN mode needs
// rights the process lacks. Its text says what to do.
var ErrTUNPermission = tun.ErrPermission

// Errors of a TUN setting, returned (wrapped) by Start and ApplyKillSwitch:
// a name, MTU or address the system cannot be given (ErrTUNConfig), a
// device name another program's device has (ErrTUNDeviceExists).
var (
	ErrTUNConfig       = tun.ErrInvalidConfig
	ErrTUNDeviceExists = tun.ErrDeviceExists
)

// openTUN opens the device and its routes. The servers' addresses are
// resolved first, while DNS still goes the usual way, and kept out of the
// tunnel. It must run before the outbounds are built: they need the
// tunnel's bypass dialer.
func openTUN(ctx context.Context, tc *TUNConfig, nodes []*node.Node, log *slog.Logger) (*tun.Tunnel, error) {
	// Before any change (kill switch, crash monitor): on Windows, that
	// wintun.dll loads from beside skiff.exe (a *tun.WintunError).
	if err := tun.CheckDriver(); err != nil {
		return nil, err
	}
	cfg := tun.DefaultConfig()
	cfg.StrictRoute = tc.Strict
	cfg.ExcludePrivate = tc.ExcludePrivate
	if tc.DNS.Mode == "" || tc.DNS.Mode == DNSFakeIP {
		// The pool's ranges go into the tunnel even where the LAN ranges
		// are kept out: its IPv6 range is a ULA.
		cfg.Include = tc.fakeIPRanges()
	}
	if tc.Name != "" {
		cfg.Name = tc.Name
	}
	if tc.MTU != 0 {
		cfg.MTU = tc.MTU
	}
	if !tc.IPv6 {
		cfg.Addr6 = netip.Prefix{}
	}
	if tc.StateFile != "" {
		cfg.StateFile = tc.StateFile
	}
	cfg.Logger = log
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// One server whose name does not resolve now (its DNS is down, the
	// network is not up yet) must not keep the others from starting: it
	// is left out of the exclusions, and its outbound resolves it when it
	// dials (its sockets bypass the tunnel: by their mark on Linux, bound
	// to the physical interface elsewhere).
	// The lookups use marked sockets, which a kill switch lets through.
	res := sysdial.NewResolver((&outbound.SystemDialer{Mark: tun.DefaultMark}).DialContext)
	for _, n := range nodes {
		ips, err := serverAddrs(rctx, res, n.Server)
		if err != nil {
			log.Warn("tun: cannot resolve a server now; starting without it in the exclusions", "server", n.Server, "err", err)
			continue
		}
		for _, ip := range ips {
			cfg.ExcludeServers = append(cfg.ExcludeServers, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}

	// Before the kill switch changes: a bad name, or one that is taken,
	// fails the run with nothing changed (tun.Open refuses them too).
	if err := tun.CheckName(cfg.Name); err != nil {
		return nil, err
	}
	if err := tun.DeviceFree(cfg.Name); err != nil {
		return nil, err
	}
	if err := ApplyKillSwitch(tc, cfg.Name, cfg.ExcludeServers, log); err != nil {
		return nil, err
	}
	if tc.CrashMonitor {
		// Before the first change: a crash at any point is restored.
		if err := crashwatch.Watch(cfg.StateFile, log); err != nil {
			return nil, err
		}
	}
	t, err := tun.Open(cfg)
	if err != nil {
		if errors.Is(err, tun.ErrPermission) {
			return nil, tun.ErrPermission
		}
		return nil, err
	}
	if tc.KillSwitch && t.Name() != cfg.Name {
		// macOS names the device itself (utunN).
		if err := ApplyKillSwitch(tc, t.Name(), cfg.ExcludeServers, log); err != nil {
			t.Close()
			return nil, err
		}
	}
	log.Info("tun: up", "device", t.Name(), "mtu", t.MTU(), "strict", cfg.StrictRoute, "kill_switch", tc.KillSwitch)
	return t, nil
}

// KillSwitchInForce reports whether a kill switch is recorded as in force
// (in the default state directory): the window shows that traffic is
// blocked while Skiff is not connected.
func KillSwitchInForce() bool { return tun.KillSwitchOn("") }

// proxyModeDialer is the outbounds' dialer without TUN: the system's, its
// sockets marked as TUN mode's are when a kill switch is in force on
// Linux (left by a TUN run or the service), so that the proxy still
// reaches its servers through it. Marking needs CAP_NET_ADMIN, which a
// process that could not have made the kill switch may lack: then the
// sockets stay unmarked, and blocked.
func proxyModeDialer() outbound.Dialer {
	if runtime.GOOS == "linux" && tun.KillSwitchOn("") && canMark() {
		d := &outbound.SystemDialer{Mark: tun.DefaultMark}
		d.Resolver = sysdial.NewResolver(d.DialContext)
		return d
	}
	return &outbound.SystemDialer{}
}

// canMark reports whether this process may set SO_MARK.
func canMark() bool {
	d := &outbound.SystemDialer{Mark: tun.DefaultMark}
	pc, err := d.ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		return false
	}
	pc.Close()
	return true
}

// serverAddrs returns the addresses of a server named by host.
func serverAddrs(ctx context.Context, r *net.Resolver, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for i := range addrs {
		addrs[i] = addrs[i].Unmap()
	}
	return addrs, nil
}

// tunDNS returns the handler of the TUN's flows: the DNS handler in
// front of the engine. Names the rules send direct resolve with the
// system's resolver through sockets that bypass the tunnel (else the
// queries would come back into it).
func tunDNS(t *tun.Tunnel, tc *TUNConfig, eng *Engine, rt *routing) (*dnsHandler, error) {
	bypass := t.Dialer()
	direct := &dns.SystemUpstream{Resolver: sysdial.NewResolver(bypass.DialContext)}
	return newDNSHandler(eng, tc.DNS, rt, direct)
}
