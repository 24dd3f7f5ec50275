package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/skiffvpn/skiff/core/dns"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/netstack"
	"github.com/skiffvpn/skiff/tun"
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
	cfg := tun.DefaultConfig()
	cfg.StrictRoute = tc.Strict
	cfg.ExcludePrivate = tc.ExcludePrivate
	if tc.DNS.Mode == "" || tc.DNS.Mode == DNSFakeIP {
		// The pool's ranges go into the tunnel even where the LAN ranges
		// are kept out: its IPv6 range is a ULA.
		cfg.Include = []netip.Prefix{dns.DefaultPrefix4, dns.DefaultPrefix6}
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
	for _, n := range nodes {
		ips, err := serverAddrs(rctx, n.Server)
		if err != nil {
			return nil, fmt.Errorf("tun: resolve server %s: %w", n.Server, err)
		}
		for _, ip := range ips {
			cfg.ExcludeServers = append(cfg.ExcludeServers, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}
	t, err := tun.Open(cfg)
	if err != nil {
		if errors.Is(err, tun.ErrPermission) {
			return nil, tun.ErrPermission
		}
		return nil, err
	}
	log.Info("tun: up", "device", t.Name(), "mtu", t.MTU(), "strict", cfg.StrictRoute)
	return t, nil
}

// serverAddrs returns the addresses of a server named by host.
func serverAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip.Unmap()}, nil
	}
	var r net.Resolver
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
	direct := &dns.SystemUpstream{Resolver: &net.Resolver{PreferGo: true, Dial: bypass.DialContext}}
	h, err := newDNSHandler(eng, tc.DNS, rt, direct)
	if err != nil {
		return nil, err
	}
	return netstack.New(t.Device, h, netstack.Options{MTU: t.MTU(), Logger: log, Panics: panics, Restore: restore})
}

func (tr *tunRun) close() error {
	var errs []error
	if tr.stack != nil {
		errs = append(errs, tr.stack.Close())
	}
	if tr.tunnel != nil {
		errs = append(errs, tr.tunnel.Close())
	}
	return errors.Join(errs...)
}
