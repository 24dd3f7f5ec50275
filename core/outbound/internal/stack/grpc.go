package stack

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/transport/grpc"
	"github.com/skiffvpn/skiff/core/transport/httpupgrade"
)

// newGRPCOrUpgrade builds the gRPC client or the HTTPUpgrade request of
// a node whose transport is one of them.
func (s *Stack) newGRPCOrUpgrade(n *node.Node, typ string) error {
	t := n.Transport
	switch typ {
	case node.TransportGRPC:
		// The :authority is Xray's: authority, else the TLS server name,
		// else the server.
		auth := t.Authority
		if auth == "" && s.tls != nil {
			auth = s.tls.ServerName()
		}
		if auth == "" {
			auth = bracket(n.Server)
		}
		var err error
		s.grpc, err = grpc.New(grpc.Config{ServiceName: t.ServiceName, Multi: t.MultiMode, Authority: auth,
			UserAgent: headerValue(t.Headers, "User-Agent"), Plain: s.tls == nil}, s.dialGRPCConn)
		return err
	case node.TransportHTTPUpgrade:
		host := t.Host
		if host == "" {
			host = headerValue(t.Headers, "Host")
		}
		if host == "" && s.tls != nil {
			host = s.tls.ServerName()
		}
		if host == "" {
			host = bracket(n.Server)
		}
		s.hu = &httpupgrade.Config{Host: host, Path: t.Path, Headers: t.Headers}
		s.huFast = t.MaxEarlyData > 0
	}
	return nil
}

// dialGRPCConn dials a connection for the gRPC client: over TLS the
// server must choose h2. REALITY reports no ALPN (its server negotiates
// none) and speaks HTTP/2 all the same, as Xray's client assumes.
func (s *Stack) dialGRPCConn(ctx context.Context) (net.Conn, error) {
	c, err := s.dialTLS(ctx)
	if err != nil || s.tls == nil || s.tls.Reality() {
		return c, err
	}
	if cs, ok := c.(interface{ ConnectionState() tls.ConnectionState }); ok && cs.ConnectionState().NegotiatedProtocol != "h2" {
		c.Close()
		return nil, fmt.Errorf("%s: TLS handshake with %s: server did not choose h2 (ALPN %q)", s.proto, s.addr, cs.ConnectionState().NegotiatedProtocol)
	}
	return c, nil
}

func (s *Stack) dialGRPC(ctx context.Context) (net.Conn, error) {
	c, err := s.grpc.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.proto, s.addr, err)
	}
	return c, nil
}

func (s *Stack) dialUpgrade(ctx context.Context) (net.Conn, error) {
	conn, err := s.dialTLS(ctx)
	if err != nil {
		return nil, err
	}
	var c net.Conn
	if s.huFast {
		c, err = httpupgrade.ClientFastOpen(ctx, conn, *s.hu)
	} else {
		c, err = httpupgrade.Client(ctx, conn, *s.hu)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: %s: %w", s.proto, s.addr, err)
	}
	return c, nil
}

// headerValue is h's value for key, whatever its case.
func headerValue(h map[string]string, key string) string {
	for k, v := range h {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// bracket puts an IPv6 literal in brackets for a Host or :authority.
func bracket(host string) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]"
	}
	return host
}
