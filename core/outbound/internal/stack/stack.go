// Package stack opens the byte stream that the stream protocols (Trojan,
// VMess) run on: a TCP connection to the server, then TLS (tlsconf) when
// the node has it, then WebSocket (ws) or HTTPUpgrade (httpupgrade) when
// its transport says so, or streams on shared HTTP/2 connections (h2,
// grpc). It is
// built once per outbound from the node, so that each protocol client only
// adds its own framing, and every one of them refuses the same transports
// with the same words.
package stack

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/transport/grpc"
	"github.com/skiffvpn/skiff/core/transport/h2"
	"github.com/skiffvpn/skiff/core/transport/httpupgrade"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/core/transport/ws"
	"github.com/skiffvpn/skiff/core/transport/xhttp"
)

// Stack dials one server through its layers.
type Stack struct {
	proto  string // protocol name, the prefix of errors
	addr   string // server:port
	dialer outbound.Dialer
	tls    *tlsconf.Stream     // nil: no TLS
	ws     *ws.Config          // nil: no WebSocket
	h2     *h2.Client          // nil: no HTTP/2
	grpc   *grpc.Client        // nil: no gRPC
	hu     *httpupgrade.Config // nil: no HTTPUpgrade
	huFast bool                // HTTPUpgrade without waiting for the 101 (?ed=N)
	xhttp  *xhttp.Client       // nil: no XHTTP
	wantH2 bool                // the TLS handshake must choose h2
}

// New returns the stack of n for protocol proto (the prefix of its errors:
// "trojan: 127.0.0.1:443: …"). It supports plain TCP, WebSocket,
// HTTPUpgrade and gRPC, with or without TLS (crypto/tls, a uTLS
// fingerprint, or REALITY), and HTTP/2; the other transports are refused
// with their names. d nil means a zero outbound.SystemDialer.
func New(proto string, n *node.Node, d outbound.Dialer) (*Stack, error) {
	addr := n.Address()
	if d == nil {
		d = &outbound.SystemDialer{}
	}
	s := &Stack{proto: proto, addr: addr, dialer: d}
	if n.Multiplex != "" {
		return nil, node.Unsupportedf(node.FeatureMultiplex, n.Multiplex, "%s: %s: multiplex %q is not supported yet", proto, addr, n.Multiplex)
	}
	t := n.Transport
	typ := node.TransportTCP
	if t != nil && t.Type != "" {
		typ = t.Type
	}
	var alpn []string
	var xc xhttp.Config
	switch typ {
	case node.TransportTCP, "raw":
		if t != nil && t.HeaderType != "" && t.HeaderType != "none" {
			return nil, node.Unsupportedf(node.FeatureTransport, "tcp+"+t.HeaderType, "%s: %s: tcp header type %q is not supported yet", proto, addr, t.HeaderType)
		}
	case node.TransportWS:
		alpn = []string{"http/1.1"}
		var err error
		if s.ws, err = WSConfig(n); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", proto, addr, err)
		}
	case node.TransportH2:
		if n.TLS == nil {
			return nil, node.Unsupportedf(node.FeatureTransport, "h2 (no TLS)", "%s: %s: transport h2 without TLS is not supported", proto, addr)
		}
		alpn = []string{"h2"}
	case node.TransportGRPC:
		alpn = []string{"h2"}
	case node.TransportHTTPUpgrade:
		alpn = []string{"http/1.1"}
	case node.TransportXHTTP:
		var err error
		if xc, alpn, err = xhttpConfig(proto, n); err != nil {
			return nil, err
		}
	default:
		return nil, node.Unsupportedf(node.FeatureTransport, typ, "%s: %s: transport %q is not supported yet (only tcp, ws, h2, grpc, httpupgrade and xhttp)", proto, addr, typ)
	}
	if n.TLS != nil {
		if n.TLS.Reality != nil && (typ == node.TransportWS || typ == node.TransportHTTPUpgrade) {
			return nil, node.Unsupportedf(node.FeatureTransport, "REALITY+"+typ, "%s: %s: REALITY over %s is not supported (REALITY carries tcp, h2 or grpc)", proto, addr, typ)
		}
		var err error
		s.tls, err = tlsconf.NewStream(n.TLS, n.Server, alpn...)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", proto, addr, err)
		}
	}
	if typ == node.TransportH2 {
		host := t.Host
		if host == "" {
			host = s.tls.ServerName() // the SNI, else the server
		}
		if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
			host = "[" + host + "]"
		}
		var err error
		s.h2, err = h2.New(h2.Config{Host: host, Path: t.Path, Headers: t.Headers}, s.dialTLS)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", proto, addr, err)
		}
	}
	if err := s.newGRPCOrUpgrade(n, typ); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", proto, addr, err)
	}
	if typ == node.TransportXHTTP && xc.HTTP == xhttp.HTTP3 {
		if err := s.newXHTTP3(n, xc); err != nil {
			return nil, err
		}
	} else if typ == node.TransportXHTTP {
		var err error
		if s.xhttp, err = xhttp.New(xc, s.dialTLS); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", proto, addr, err)
		}
		// REALITY reports no ALPN: Xray's server speaks h2 under it.
		s.wantH2 = xc.HTTP == xhttp.HTTP2 && s.tls != nil && !s.tls.Reality()
	}
	return s, nil
}

// Addr returns the server's "host:port".
func (s *Stack) Addr() string { return s.addr }

// TLS reports whether the stack has a TLS layer.
func (s *Stack) TLS() bool { return s.tls != nil }

// Dial connects to the server and runs the TLS handshake and (without
// early data) the WebSocket upgrade, bounded by ctx. Errors name the
// server and the step.
func (s *Stack) Dial(ctx context.Context) (net.Conn, error) {
	if s.xhttp != nil {
		c, err := s.xhttp.Dial(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.proto, s.addr, err)
		}
		return c, nil
	}
	if s.h2 != nil {
		c, err := s.h2.Dial(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", s.proto, s.addr, err)
		}
		return c, nil
	}
	if s.grpc != nil {
		return s.dialGRPC(ctx)
	}
	if s.hu != nil {
		return s.dialUpgrade(ctx)
	}
	conn, err := s.dialTLS(ctx)
	if err != nil {
		return nil, err
	}
	if s.ws != nil {
		wc, err := ws.Client(ctx, conn, *s.ws)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %s: %w", s.proto, s.addr, err)
		}
		conn = wc
	}
	return conn, nil
}

// dialTLS connects to the server and runs the TLS handshake when the
// stack has TLS. For HTTP/2 the server must have chosen h2.
func (s *Stack) dialTLS(ctx context.Context) (net.Conn, error) {
	raw, err := s.dialer.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("%s: dial %s: %w", s.proto, s.addr, err)
	}
	conn := raw
	if s.tls != nil {
		tc, err := s.tls.Client(ctx, raw)
		if err != nil {
			raw.Close()
			return nil, fmt.Errorf("%s: TLS handshake with %s: %w", s.proto, s.addr, err)
		}
		if (s.h2 != nil || s.wantH2) && tc.ConnectionState().NegotiatedProtocol != "h2" {
			raw.Close()
			return nil, fmt.Errorf("%s: TLS handshake with %s: server did not choose h2 (ALPN %q)", s.proto, s.addr, tc.ConnectionState().NegotiatedProtocol)
		}
		conn = tc
	}
	return conn, nil
}

// Close releases the connections the stack keeps (HTTP/2's).
func (s *Stack) Close() {
	if s.h2 != nil {
		s.h2.Close()
	}
	if s.grpc != nil {
		s.grpc.Close()
	}
	if s.xhttp != nil {
		s.xhttp.Close()
	}
}

// defaultHost is the Host header of a transport that names none: the TLS
// server name, else the server (an IPv6 address in brackets).
func defaultHost(n *node.Node) string {
	if n.TLS != nil && n.TLS.SNI != "" {
		return n.TLS.SNI
	}
	if strings.Contains(n.Server, ":") {
		return "[" + n.Server + "]"
	}
	return n.Server
}

// WSConfig builds the WebSocket settings of n. The Host header is the
// transport's Host, else a Host in its headers, else the TLS server name,
// else the server. An "ed=N" left in the path's query is taken as
// MaxEarlyData, as Xray's clients do.
func WSConfig(n *node.Node) (*ws.Config, error) {
	t := n.Transport
	cfg := &ws.Config{Path: t.Path, Headers: t.Headers, MaxEarlyData: t.MaxEarlyData, EarlyDataHeader: t.EarlyDataHeader}
	for k, v := range t.Headers {
		if strings.EqualFold(k, "Host") && v != "" {
			cfg.Host = v
		}
	}
	if t.Host != "" {
		cfg.Host = t.Host
	}
	if cfg.Host == "" {
		cfg.Host = defaultHost(n)
	}
	if path, query, ok := strings.Cut(cfg.Path, "?"); ok {
		q, err := url.ParseQuery(query)
		if err == nil && q.Has("ed") {
			ed, err := strconv.Atoi(q.Get("ed"))
			if err != nil || ed < 0 {
				return nil, fmt.Errorf("ws path: bad ed=%q", q.Get("ed"))
			}
			if cfg.MaxEarlyData == 0 {
				cfg.MaxEarlyData = ed
			}
			q.Del("ed")
			cfg.Path = path
			if len(q) > 0 {
				cfg.Path += "?" + q.Encode()
			}
		}
	}
	if cfg.MaxEarlyData < 0 {
		return nil, fmt.Errorf("ws: negative max early data")
	}
	return cfg, nil
}
