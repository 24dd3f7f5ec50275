package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/netstack"
	"github.com/skiffvpn/skiff/tun"
)

// tunFlags are the TUN options of `skiff run`.
type tunFlags struct {
	on      bool
	strict  bool
	private bool // keep private/LAN ranges out of the tunnel
	name    string
	mtu     int
}

// openTUN opens the TUN device with its routes before the core starts, so
// that the core's outbounds get the dialer that keeps their sockets out of
// the tunnel. The servers' addresses are resolved first, while DNS still
// goes the usual way, and kept out of the tunnel.
func openTUN(ctx context.Context, tf tunFlags, nodes []*node.Node, log *slog.Logger) (*tun.Tunnel, error) {
	cfg := tun.DefaultConfig()
	cfg.StrictRoute = tf.strict
	cfg.ExcludePrivate = tf.private
	if tf.name != "" {
		cfg.Name = tf.name
	}
	if tf.mtu != 0 {
		cfg.MTU = tf.mtu
	}
	cfg.Logger = log
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, n := range nodes {
		ips, err := serverAddrs(rctx, n.Server)
		if err != nil {
			return nil, fmt.Errorf("resolve server %s: %w", n.Server, err)
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

// startNetstack hands the TUN device to a netstack whose flows go to the
// running core.
func startNetstack(t *tun.Tunnel, c *core.Controller, log *slog.Logger) (*netstack.Stack, error) {
	h := c.Handler()
	if h == nil {
		return nil, errors.New("tun: the core is not running")
	}
	return netstack.New(t.Device, h, netstack.Options{MTU: t.MTU(), Logger: log})
}
