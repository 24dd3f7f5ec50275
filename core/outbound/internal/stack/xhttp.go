package stack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound/internal/quicconn"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/core/transport/xhttp"
)

// xhttpConfig builds the XHTTP settings of n and the ALPN its TLS offers.
// As in Xray, extra is the whole configuration and the link's host, path
// and mode are put back over it when set. The HTTP version is Xray's
// choice: HTTP/1.1 without TLS or with ALPN exactly http/1.1, HTTP/3 with
// ALPN exactly h3, HTTP/2 otherwise and always under REALITY.
func xhttpConfig(proto string, n *node.Node) (xhttp.Config, []string, error) {
	addr := n.Address()
	t := n.Transport
	var opt node.XHTTP
	if t.XHTTP != nil {
		opt = *t.XHTTP
	}
	ex, err := xhttp.ParseExtra(opt.Extra)
	var ue *xhttp.UnsupportedError
	if errors.As(err, &ue) {
		return xhttp.Config{}, nil, node.Unsupportedf(node.FeatureTransport, "xhttp "+ue.Key, "%s: %s: %v", proto, addr, err)
	}
	if err != nil {
		return xhttp.Config{}, nil, fmt.Errorf("%s: %s: %w", proto, addr, err)
	}
	cfg := xhttp.Config{Host: ex.Host, Path: ex.Path, Mode: ex.Mode, Headers: map[string]string{},
		Padding: ex.Padding, NoGRPCHeader: ex.NoGRPCHeader, MaxEachPost: ex.MaxEachPost, MinPostsInterval: ex.MinPostsInterval}
	if !ex.MaxConnections.IsZero() {
		cfg.MaxConnections = max(ex.MaxConnections.From, 1) // the low end: connections cost memory
	}
	for k, v := range ex.Headers {
		cfg.Headers[k] = v
	}
	for k, v := range t.Headers {
		cfg.Headers[k] = v
	}
	if opt.Mode != "" {
		if cfg.Mode, err = xhttp.ParseMode(opt.Mode); err != nil {
			return xhttp.Config{}, nil, fmt.Errorf("%s: %s: xhttp: %w", proto, addr, err)
		}
	}
	if t.Path != "" {
		cfg.Path = t.Path
	}
	if t.Host != "" {
		cfg.Host = t.Host
	}
	for k, v := range cfg.Headers {
		if strings.EqualFold(k, "Host") && v != "" && cfg.Host == "" {
			cfg.Host = v
		}
	}
	reality := n.TLS != nil && n.TLS.Reality != nil
	cfg.Mode = xhttp.ResolveMode(cfg.Mode, reality)
	cfg.TLS = n.TLS != nil
	if cfg.Host == "" {
		cfg.Host = defaultHost(n)
	}
	var alpn []string
	switch {
	case reality:
		// The ALPN a browser offers, for the hello the cover site sees;
		// REALITY reports none, and Xray's server speaks h2 under it.
		cfg.HTTP, alpn = xhttp.HTTP2, []string{"h2", "http/1.1"}
	case n.TLS == nil:
		cfg.HTTP = xhttp.HTTP1
	case slices.Equal(n.TLS.ALPN, []string{"h3"}):
		cfg.HTTP, alpn = xhttp.HTTP3, []string{"h3"}
	case slices.Equal(n.TLS.ALPN, []string{"http/1.1"}):
		cfg.HTTP, alpn = xhttp.HTTP1, []string{"http/1.1"}
	default:
		cfg.HTTP, alpn = xhttp.HTTP2, []string{"h2"}
	}
	if cfg.HTTP == xhttp.HTTP1 && cfg.Mode != xhttp.PacketUp {
		return xhttp.Config{}, nil, node.Unsupportedf(node.FeatureTransport, "xhttp "+string(cfg.Mode)+" over HTTP/1.1", "%s: %s: XHTTP %s needs HTTP/2 (TLS with alpn h2, or REALITY)", proto, addr, cfg.Mode)
	}
	return cfg, alpn, nil
}

// newXHTTP3 makes s's XHTTP client over HTTP/3: QUIC with the node's TLS
// settings (crypto/tls; ECH is refused by tlsconf.New, a uTLS
// fingerprint does not apply to QUIC).
func (s *Stack) newXHTTP3(n *node.Node, cfg xhttp.Config) error {
	tc, err := tlsconf.New(n.TLS, n.Server, "h3")
	if err != nil {
		return fmt.Errorf("%s: %s: %w", s.proto, s.addr, err)
	}
	s.xhttp, err = xhttp.NewHTTP3(cfg, tc, s.dialQUIC)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", s.proto, s.addr, err)
	}
	return nil
}

// dialQUIC opens one QUIC connection to the server on a socket of its
// own, which is closed with the connection.
func (s *Stack) dialQUIC(ctx context.Context, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
	host, portStr, err := net.SplitHostPort(s.addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("%s: bad port in %s", s.proto, s.addr)
	}
	ip, err := quicconn.Resolve(ctx, s.dialer, s.proto, s.addr, host)
	if err != nil {
		return nil, err
	}
	pc, err := s.dialer.ListenPacket(ctx, "udp", "")
	if err != nil {
		return nil, fmt.Errorf("%s: dial %s: %w", s.proto, s.addr, err)
	}
	tr := &quic.Transport{Conn: pc}
	c, err := tr.Dial(ctx, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip.Unmap(), uint16(port))), tc, qc)
	if err != nil {
		tr.Close()
		pc.Close()
		return nil, quicconn.HandshakeError(s.proto, s.addr, ctx, err)
	}
	go func() { // ends with the connection, which http3's pool or an error closes
		<-c.Context().Done()
		tr.Close()
		pc.Close()
	}()
	return c, nil
}
