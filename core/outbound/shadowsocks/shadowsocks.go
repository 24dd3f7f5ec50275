// Package shadowsocks is the Shadowsocks client: the 2022 edition (SIP022,
// BLAKE3 session keys, timestamped headers with the response's check of the
// request salt, replay windows, the multi-user iPSK:uPSK form of SIP023)
// and the classic AEAD methods (SIP004), over TCP and UDP, and the three
// SIP003 plugins subscriptions carry, built in: obfs-local (http and tls),
// v2ray-plugin (WebSocket, optionally over TLS) and shadow-tls (v1-v3).
//
// A stream is one TCP connection per flow; its request header goes out
// with the flow's first bytes. A UDP session is one UDP socket toward the
// server that carries datagrams to any destination, or, with sing-box's
// udp-over-tcp, one stream.
//
// Refused by New, each with its reason: stream ciphers and "none" (no
// integrity), plugins other than the two above, and plugin options Skiff
// does not implement. v2ray-plugin's server expects Mux.Cool
// frames on its WebSocket; Skiff sends each stream alone on its own
// WebSocket as Mux.Cool sub-connection 1, whatever the link's mux=N.
package shadowsocks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/uot"
	"github.com/skiffvpn/skiff/core/transport/shadowtls"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/core/transport/ws"
)

// Client is a Shadowsocks outbound through one server. It keeps no
// connection across flows; Close closes the flows it handed out.
type Client struct {
	addr   string // server:port, for dialing and for errors
	m      *method
	k      *keys
	dialer outbound.Dialer
	salts  saltFilter // response salts seen (2022)
	uot    int        // UDP over TCP's version (1 or 2); 0: Shadowsocks UDP

	obfsHTTP *obfsConfig       // obfs-local (http or tls); nil: none
	ws       *ws.Config        // v2ray-plugin; nil: none
	tls      *tls.Config       // v2ray-plugin tls; nil: none
	stls     *shadowtls.Client // shadow-tls; nil: none
	// muxTarget is the destination of v2ray-plugin's Mux.Cool
	// sub-connection: the server itself, as v2ray-plugin's client names it
	// (its server sends every sub-connection to its Shadowsocks server).
	muxTarget flow.Addr

	flows outbound.Flows
}

// New returns a client for n, which must be a Shadowsocks node. d opens
// the sockets to the server; nil means a zero outbound.SystemDialer. It
// opens nothing itself. Errors name the server and never quote the
// password.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	addr, err := outbound.NodeAddress(n, n != nil && n.Shadowsocks != nil, "shadowsocks", "Shadowsocks")
	if err != nil {
		return nil, err
	}
	o := n.Shadowsocks
	name := strings.ToLower(o.Method)
	if why, ok := refused(name); ok {
		return nil, node.Unsupportedf(node.FeatureCipher, name, "shadowsocks: %s: %s", addr, why)
	}
	m, ok := methods[name]
	if !ok {
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		return nil, node.Unsupportedf(node.FeatureCipher, name, "shadowsocks: %s: unknown method %q", addr, name)
	}
	uotVersion := 0
	if o.UDPOverTCP {
		uotVersion = o.UDPOverTCPVersion
		if uotVersion == 0 {
			uotVersion = 2
		}
		if _, err := uot.Magic(uotVersion); err != nil {
			return nil, node.Unsupportedf(node.FeatureOption, fmt.Sprintf("udp-over-tcp version %d", uotVersion), "shadowsocks: %s: %w", addr, err)
		}
	}
	k, err := parseKeys(m, o.Password)
	if err != nil {
		return nil, fmt.Errorf("shadowsocks: %s: %w", addr, err)
	}
	if d == nil {
		d = &outbound.SystemDialer{}
	}
	c := &Client{addr: addr, m: m, k: k, dialer: d, uot: uotVersion}
	if err := c.setPlugin(n, o.Plugin, o.PluginOpts); err != nil {
		return nil, fmt.Errorf("shadowsocks: %s: %w", addr, err)
	}
	return c, nil
}

// setPlugin configures the SIP003 plugin named by the node.
func (c *Client) setPlugin(n *node.Node, name, opts string) error {
	if name == "" {
		if opts != "" {
			return errors.New("plugin options without a plugin")
		}
		return nil
	}
	kv, err := parsePluginOpts(opts)
	if err != nil {
		return fmt.Errorf("plugin %s: %w", name, err)
	}
	switch name {
	case "obfs-local", "simple-obfs", "obfs":
		cfg, err := newObfsConfig(kv, n)
		if err != nil {
			return fmt.Errorf("plugin %s: %w", name, err)
		}
		c.obfsHTTP = cfg
		return nil
	case "v2ray-plugin":
		return c.setV2rayPlugin(n, kv)
	case "shadow-tls":
		return c.setShadowTLS(kv)
	default:
		return node.Unsupportedf(node.FeaturePlugin, name, "plugin %q is not supported (only obfs-local, v2ray-plugin and shadow-tls)", name)
	}
}

// setV2rayPlugin reads v2ray-plugin's client options: mode=websocket
// (quic is refused), tls, host, path, mux, certRaw, skip-cert-verify.
func (c *Client) setV2rayPlugin(n *node.Node, kv []pluginOpt) error {
	host, path, useTLS, insecure, certRaw := "", "/", false, false, ""
	for _, o := range kv {
		switch o.key {
		case "mode":
			if o.val != "websocket" && o.val != "" {
				return node.Unsupportedf(node.FeaturePlugin, "v2ray-plugin mode="+o.val, "plugin v2ray-plugin: mode %q is not supported (only websocket)", o.val)
			}
		case "tls":
			useTLS = o.val == "" || o.val == "true" || o.val == "1"
		case "host":
			host = o.val
		case "path":
			path = o.val
		case "mux":
			// How many streams v2ray-plugin's client puts on one
			// WebSocket; Skiff puts one.
		case "loglevel":
		case "certRaw":
			certRaw = o.val
		case "skip-cert-verify", "allowInsecure", "insecure":
			insecure = o.val == "" || o.val == "true" || o.val == "1"
		default:
			return node.Unsupportedf(node.FeaturePlugin, "v2ray-plugin "+o.key, "plugin v2ray-plugin: option %q is not supported", o.key)
		}
	}
	if host == "" {
		host = n.Server
	}
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	c.ws = &ws.Config{Host: host, Path: path}
	c.muxTarget = flow.NameAddr(n.Server, n.Port)
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		c.ws.Host = "[" + host + "]"
	}
	if !useTLS {
		if certRaw != "" || insecure {
			return errors.New("plugin v2ray-plugin: certificate options without tls")
		}
		return nil
	}
	t := &node.TLS{SNI: host, Insecure: insecure}
	if n.TLS != nil {
		t.PinSHA256 = n.TLS.PinSHA256
	}
	cfg, err := tlsconf.New(t, n.Server, "http/1.1")
	if err != nil {
		return fmt.Errorf("plugin v2ray-plugin: %w", err)
	}
	if certRaw != "" {
		pool, err := certPool(certRaw)
		if err != nil {
			return fmt.Errorf("plugin v2ray-plugin: certRaw: %w", err)
		}
		cfg.RootCAs = pool
	}
	c.tls = cfg
	return nil
}

// DialContext opens a stream to dst through the server. It returns once
// the transport is up (TCP, and the plugin's handshake where it has one);
// the request goes with the first Write. Shadowsocks servers do not
// confirm a stream: a wrong password shows on the first Read.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("shadowsocks: %s: network %q, want tcp", c.addr, network)
	}
	if !dst.IsValid() {
		return nil, fmt.Errorf("shadowsocks: %s: no destination address", c.addr)
	}
	tr, err := c.dialTransport(ctx)
	if err != nil {
		return nil, err
	}
	s := newStreamConn(tr, c, dst)
	if err := c.flows.Keep(s, "shadowsocks", c.addr); err != nil {
		return nil, err
	}
	if _, ok := tr.(interface{ CloseWrite() error }); ok {
		return halfCloser{s}, nil
	}
	return s, nil
}

// dialTransport dials the server and runs the plugin's layers.
func (c *Client) dialTransport(ctx context.Context) (net.Conn, error) {
	raw, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("shadowsocks: dial %s: %w", c.addr, err)
	}
	switch {
	case c.obfsHTTP != nil && c.obfsHTTP.tls:
		return newObfsTLSConn(raw, c.obfsHTTP.sni), nil
	case c.obfsHTTP != nil:
		return newObfsHTTPConn(raw, c.obfsHTTP), nil
	case c.stls != nil:
		conn, err := c.stls.Handshake(ctx, raw)
		if err != nil {
			raw.Close()
			return nil, fmt.Errorf("shadowsocks: shadow-tls: %s: %w", c.addr, err)
		}
		return conn, nil
	case c.ws != nil:
		conn := raw
		if c.tls != nil {
			tc := tlsconf.Client(raw, c.tls)
			if err := tc.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, fmt.Errorf("shadowsocks: v2ray-plugin: TLS handshake with %s: %w", c.addr, err)
			}
			conn = tc
		}
		wc, err := ws.Client(ctx, conn, *c.ws)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("shadowsocks: v2ray-plugin: %s: %w", c.addr, err)
		}
		return newMuxConn(wc, c.muxTarget), nil
	}
	return raw, nil
}

// ListenPacket opens a UDP session whose first destination is dst: one
// UDP socket toward the server, for datagrams to any destination. The
// plugins carry TCP only; as with their own clients, UDP goes to the
// server's port unobfuscated, except through v2ray-plugin, whose server
// port speaks WebSocket only. With udp-over-tcp the session is one stream
// instead (package uot), through the plugin if there is one.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	if c.uot != 0 {
		magic, _ := uot.Magic(c.uot) // the version is checked by New
		st, err := c.DialContext(ctx, "tcp", magic)
		if err != nil {
			return nil, err
		}
		pc, err := uot.NewPacketConn(st, c.uot, dst, "shadowsocks: UDP via "+c.addr)
		if err != nil {
			st.Close()
			return nil, err
		}
		return pc, nil
	}
	if c.ws != nil {
		return nil, fmt.Errorf("shadowsocks: %s: UDP is not carried through v2ray-plugin", c.addr)
	}
	if c.stls != nil {
		return nil, fmt.Errorf("shadowsocks: %s: UDP is not carried through shadow-tls (udp-over-tcp is)", c.addr)
	}
	pc, err := c.dialer.DialContext(ctx, "udp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("shadowsocks: udp to %s: %w", c.addr, err)
	}
	p := newPacketConn(c, pc)
	if err := c.flows.Keep(p, "shadowsocks", c.addr); err != nil {
		return nil, err
	}
	return p, nil
}

// Close closes every stream and packet session the client handed out.
func (c *Client) Close() error {
	c.flows.Close()
	return nil
}
