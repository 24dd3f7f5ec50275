package core

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/dns"
	"github.com/skiffvpn/skiff/core/flow"
)

// dnsHandler is the flow.Handler of the TUN: DNS to port 53 of any address
// is answered by the DNS server, a flow to a fake address gets its name
// back, and the rest goes to the engine.
type dnsHandler struct {
	next *Engine
	srv  *dns.Server
	pool *dns.Pool // nil in real-IP mode
	// direct holds the names behind the addresses the direct resolver
	// answered (see directNames).
	direct directNames

	unmappedLogged atomic.Int64 // when rewrite last logged an unmapped fake address (UnixNano)
}

// newDNSHandler builds the DNS server of a run: names that the rules send
// direct (and local names) resolve with the system's resolver through
// bypass sockets, blocked names get NXDOMAIN, the rest get fake addresses
// (or are resolved through the proxy in real-IP mode).
func newDNSHandler(next *Engine, cfg DNSConfig, rt *routing, direct dns.Upstream) (*dnsHandler, error) {
	h := &dnsHandler{next: next}
	url := cfg.Upstream
	if url == "" {
		url = DefaultDNSUpstream
	}
	var proxy dns.Upstream
	if ob := rt.targets[TargetProxy]; ob != nil {
		up, err := dns.NewUpstream(ob, url)
		if err != nil {
			return nil, err
		}
		proxy = up
	}
	proxyMode := dns.ModeFake
	switch cfg.Mode {
	case "", DNSFakeIP:
		pool, err := dns.NewPool(dns.PoolConfig{Prefix4: cfg.FakeIPRange4, Prefix6: cfg.FakeIPRange6})
		if err != nil {
			return nil, fmt.Errorf("dns: %w", err)
		}
		h.pool = pool
	case DNSRealIP:
		proxyMode = dns.ModeProxy
	default:
		return nil, fmt.Errorf("dns: mode %q is not %s or %s", cfg.Mode, DNSFakeIP, DNSRealIP)
	}
	if proxy == nil {
		proxyMode = dns.ModeDirect // no server: everything goes direct
	}
	if direct != nil {
		direct = &recordingUpstream{next: direct, names: &h.direct}
	}
	h.srv = dns.NewServer(dns.Config{
		Pool:   h.pool,
		Proxy:  proxy,
		Direct: direct,
		Cache:  dns.NewCache(0),
		Mode: func(name string) dns.Mode {
			if dns.IsLocalName(name) {
				return dns.ModeDirect
			}
			// No program asked the name that the rules could know of.
			m := flow.Metadata{Destination: flow.Addr{Name: name}, Process: flow.ProcessUnknown}
			switch rt.rulesInForce().Match(&m) {
			case TargetDirect:
				return dns.ModeDirect
			case TargetBlock:
				return dns.ModeBlock
			}
			return proxyMode
		},
	})
	return h, nil
}

// rewrite gives a flow to a fake address its name back. A fake address
// that no name holds (the app kept it longer than the pool did, or took it
// from somewhere else: the range is ordinary address space, 198.18.0.0/15
// is a benchmarking range) goes on as the plain address it is, and the log
// says why, at most once a second.
//
// A flow to a real address that the direct resolver gave for a name gets
// that name as its Host (the destination stays the address), so that the
// rules that sent the name direct route its flows too.
func (h *dnsHandler) rewrite(m *flow.Metadata) error {
	if !m.Destination.IP.IsValid() {
		return nil
	}
	if h.pool == nil || !h.pool.Contains(m.Destination.IP) {
		if m.Host == "" {
			if name, ok := h.direct.lookup(m.Destination.IP); ok {
				m.Host = name
			}
		}
		return nil
	}
	name, ok := h.pool.Name(m.Destination.IP)
	if !ok {
		if now := time.Now().UnixNano(); now-h.unmappedLogged.Load() >= int64(time.Second) {
			h.unmappedLogged.Store(now)
			h.next.log.Warn("dns: address in the fake-IP range holds no name; sending it on as a plain address", "dst", m.Destination.String())
		}
		return nil
	}
	m.Destination = flow.Addr{Name: name, Port: m.Destination.Port}
	m.Host = name
	return nil
}

// HandleStream implements flow.Handler.
func (h *dnsHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	if m.Destination.Port == 53 {
		c, err := accept()
		if err != nil {
			return err
		}
		defer c.Close()
		return h.srv.ServeStream(ctx, c)
	}
	if err := h.rewrite(&m); err != nil {
		return err
	}
	return h.next.HandleStream(ctx, m, accept)
}

// HandlePacket implements flow.Handler.
func (h *dnsHandler) HandlePacket(ctx context.Context, m flow.Metadata, conn net.PacketConn) error {
	if m.Destination.Port == 53 {
		defer conn.Close()
		return h.srv.ServePacket(ctx, conn)
	}
	fake := m.Destination
	if err := h.rewrite(&m); err != nil {
		conn.Close()
		return err
	}
	if fake != m.Destination {
		conn = &fakeAddrConn{PacketConn: conn, fake: fake, fakeNet: fake, nameNet: m.Destination}
	}
	return h.next.HandlePacket(ctx, m, conn)
}

// fakeAddrConn is the app's side of a UDP session to a fake address: the
// engine sees datagrams to the name, and the app sees every reply come from
// the fake address it sent to (the server answers from the real address,
// which an app's connected socket would drop).
type fakeAddrConn struct {
	net.PacketConn
	fake flow.Addr
	// The two addresses as net.Addr, boxed once: per datagram, converting
	// a flow.Addr to an interface would allocate.
	fakeNet, nameNet net.Addr
}

func (c *fakeAddrConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(p)
	if err == nil {
		if fa, ferr := flow.AddrFromNet(a); ferr == nil && fa == c.fake {
			a = c.nameNet
		}
	}
	return n, a, err
}

func (c *fakeAddrConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	return c.PacketConn.WriteTo(p, c.fakeNet)
}

var _ flow.Handler = (*dnsHandler)(nil)
