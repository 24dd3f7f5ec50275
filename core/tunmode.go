package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/dns"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/netstack"
	"github.com/skiffvpn/skiff/tun"
	"github.com/skiffvpn/skiff/tun/crashwatch"
)

// TUNConfig turns on TUN mode: a TUN device with routes captures all of
// the machine's traffic, a netstack turns its packets into flows, DNS
// inside the tunnel is answered by the core (fake-IP by default), and the
// outbounds' own sockets bypass the tunnel. Start from DefaultTUNConfig.
type TUNConfig struct {
	Name           string    // device name; "" for tun.DefaultName
	MTU            int       // 0 for tun.DefaultMTU
	Strict         bool      // also stop DNS and traffic from leaving by other interfaces
	ExcludePrivate bool      // keep private and LAN ranges out of the tunnel
	IPv6           bool      // give the device an IPv6 address and route IPv6 into it
	DNS            DNSConfig // the DNS seen inside the tunnel
	StateFile      string    // where route changes are recorded; "" for tun.DefaultStateFile()
	// CrashMonitor starts a monitor process that restores the routes if
	// this process crashes (package crashwatch). The executable must call
	// crashwatch.MaybeMonitor first thing (cli.Main does); a test binary
	// that does not must leave this off.
	CrashMonitor bool
	// KillSwitch blocks all traffic outside the tunnel, and keeps blocking
	// it after the run ends, however it ends, until a run (or
	// ApplyKillSwitch) with the setting off removes it (see
	// tun.KillSwitch). KillSwitchAllowLAN lets the LAN through it.
	KillSwitch         bool
	KillSwitchAllowLAN bool
}

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
	return tun.EnableKillSwitch(tun.KillSwitch{Device: device, AllowLAN: tc.KillSwitchAllowLAN,
		Servers: servers, StateFile: tc.StateFile, Logger: log})
}

// DefaultTUNConfig returns what the switch in the window turns on: strict
// routing, the LAN left alone, IPv6 captured, fake-IP DNS.
func DefaultTUNConfig() TUNConfig {
	return TUNConfig{Strict: true, ExcludePrivate: true, IPv6: true}
}

// ErrTUNPermission is returned (wrapped) by Start when TUN mode needs
// rights the process lacks. Its text says what to do.
var ErrTUNPermission = tun.ErrPermission

// tunRun is the TUN half of a run.
type tunRun struct {
	tunnel *tun.Tunnel
	stack  *netstack.Stack
}

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
	res := outbound.NewResolver((&outbound.SystemDialer{Mark: tun.DefaultMark}).DialContext)
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
		d.Resolver = outbound.NewResolver(d.DialContext)
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

// fakeIPRanges returns the fake-IP pool's ranges.
func (tc *TUNConfig) fakeIPRanges() []netip.Prefix {
	p4, p6 := tc.DNS.FakeIPRange4, tc.DNS.FakeIPRange6
	if !p4.IsValid() && !p6.IsValid() {
		p4, p6 = dns.DefaultPrefix4, dns.DefaultPrefix6
	}
	var out []netip.Prefix
	for _, p := range []netip.Prefix{p4, p6} {
		if p.IsValid() {
			out = append(out, p.Masked())
		}
	}
	return out
}

// ParseFakeIPRange reads a fake-IP range setting: one or two prefixes
// (an IPv4 and an IPv6 one), separated by a comma.
func ParseFakeIPRange(s string) (p4, p6 netip.Prefix, err error) {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return p4, p6, fmt.Errorf("fake-IP range %q: %w", f, err)
		}
		switch {
		case p.Addr().Is4() && p4.IsValid(), p.Addr().Is6() && p6.IsValid():
			return p4, p6, fmt.Errorf("fake-IP range %q: one range per family", s)
		case p.Addr().Is4():
			if p.Bits() > 24 {
				return p4, p6, fmt.Errorf("fake-IP range %s: too small (at most /24)", p)
			}
			p4 = p.Masked()
		default:
			if p.Bits() > 120 {
				return p4, p6, fmt.Errorf("fake-IP range %s: too small (at most /120)", p)
			}
			p6 = p.Masked()
		}
	}
	if !p4.IsValid() && !p6.IsValid() {
		return p4, p6, fmt.Errorf("fake-IP range %q: no prefix", s)
	}
	return p4, p6, nil
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

// startTUN puts the netstack on the device, with the DNS handler in front
// of the engine. Names the rules send direct resolve with the system's
// resolver through sockets that bypass the tunnel (else the queries would
// come back into it).
func startTUN(t *tun.Tunnel, tc *TUNConfig, eng *Engine, rt *routing, log *slog.Logger, panics *guard.Reporter, restore func()) (*netstack.Stack, error) {
	bypass := t.Dialer()
	direct := &dns.SystemUpstream{Resolver: outbound.NewResolver(bypass.DialContext)}
	h, err := newDNSHandler(eng, tc.DNS, rt, direct)
	if err != nil {
		return nil, err
	}
	return netstack.New(t.Device, h, netstack.Options{MTU: t.MTU(), Logger: log, Panics: panics, Restore: restore})
}
