package dns

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
)

// NewUpstream returns the upstream an address names, carried by ob. The
// address is written as the field's clients write DNS servers:
//
//	https://host[:port]/path   DNS over HTTPS (RFC 8484)
//	tls://host[:port]          DNS over TLS (RFC 7858), port 853
//	tcp://host[:port]          DNS over TCP, port 53
//	udp://host[:port]          DNS over UDP, port 53 (TCP when truncated)
//	host[:port]                the same as udp://
//
// A host may be a name: the outbound resolves it (on the server's side
// for a proxy). Errors do not quote the address: a DoH path may identify
// an account.
func NewUpstream(ob outbound.Outbound, raw string) (Upstream, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("dns: upstream: empty address")
	}
	if !strings.Contains(raw, "://") {
		raw = "udp://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("dns: upstream: %w", bareURLError(err))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "https" {
		return NewHTTPSUpstream(ob, raw, nil)
	}
	port := map[string]uint16{"udp": 53, "tcp": 53, "tls": 853}
	def, ok := port[scheme]
	if !ok {
		return nil, fmt.Errorf("dns: upstream: scheme %q is not https, tls, tcp or udp", u.Scheme)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("dns: upstream: a %s address is host[:port] alone", scheme)
	}
	server, err := hostPort(u.Host, def)
	if err != nil {
		return nil, fmt.Errorf("dns: upstream: %w", err)
	}
	switch scheme {
	case "tls":
		return &TLSUpstream{Outbound: ob, Server: server}, nil
	case "tcp":
		return &TCPUpstream{Outbound: ob, Server: server}, nil
	default:
		return &UDPUpstream{Outbound: ob, Server: server}, nil
	}
}

// hostPort parses host[:port] (an IPv6 address in brackets), with def as
// the port when none is given.
func hostPort(s string, def uint16) (flow.Addr, error) {
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		host = s[1 : len(s)-1]
	}
	if host == "" {
		return flow.Addr{}, errors.New("no host")
	}
	p := def
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return flow.Addr{}, fmt.Errorf("bad port %q", port)
		}
		p = uint16(n)
	}
	return flow.NameAddr(host, p), nil
}

// bareURLError strips url.Parse's wrapping, which quotes the whole URL.
func bareURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
