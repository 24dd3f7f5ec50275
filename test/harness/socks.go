package harness

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// ReplyError is a SOCKS5 reply other than success.
type ReplyError struct {
	Code byte
}

func (e *ReplyError) Error() string {
	names := map[byte]string{
		1: "general failure", 2: "not allowed by ruleset", 3: "network unreachable",
		4: "host unreachable", 5: "connection refused", 6: "TTL expired",
		7: "command not supported", 8: "address type not supported",
	}
	if n, ok := names[e.Code]; ok {
		return fmt.Sprintf("socks5: reply %d (%s)", e.Code, n)
	}
	return fmt.Sprintf("socks5: reply %d", e.Code)
}

// DialSOCKS connects through the SOCKS5 proxy at proxy (no
// authentication) to target ("host:port") with CONNECT. A failure reply
// comes back as a *ReplyError. ctx bounds the whole exchange.
func DialSOCKS(ctx context.Context, proxy, target string) (net.Conn, error) {
	c, _, err := socksRequest(ctx, proxy, 1, target)
	return c, err
}

// socksRequest greets the proxy and sends one request; it returns the
// control connection and the bound address of a successful reply.
func socksRequest(ctx context.Context, proxy string, cmd byte, target string) (net.Conn, netip.AddrPort, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", proxy)
	if err != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("socks5: dial proxy %s: %w", proxy, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	bound, err := socksHandshake(c, cmd, target)
	if err != nil {
		c.Close()
		return nil, netip.AddrPort{}, err
	}
	if !stop() {
		c.Close()
		return nil, netip.AddrPort{}, ctx.Err()
	}
	c.SetDeadline(time.Time{})
	return c, bound, nil
}

func socksHandshake(c net.Conn, cmd byte, target string) (netip.AddrPort, error) {
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		return netip.AddrPort{}, fmt.Errorf("socks5: greeting: %w", err)
	}
	var hello [2]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return netip.AddrPort{}, fmt.Errorf("socks5: greeting reply: %w", err)
	}
	if hello[0] != 5 || hello[1] != 0 {
		return netip.AddrPort{}, fmt.Errorf("socks5: proxy refused no-auth method (%x)", hello)
	}
	req, err := appendSOCKSAddr([]byte{5, cmd, 0}, target)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if _, err := c.Write(req); err != nil {
		return netip.AddrPort{}, fmt.Errorf("socks5: request: %w", err)
	}
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return netip.AddrPort{}, fmt.Errorf("socks5: reply: %w", err)
	}
	if head[0] != 5 {
		return netip.AddrPort{}, fmt.Errorf("socks5: reply version %d", head[0])
	}
	bound, err := readSOCKSAddr(c, head[3])
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("socks5: reply address: %w", err)
	}
	if head[1] != 0 {
		return netip.AddrPort{}, &ReplyError{Code: head[1]}
	}
	return bound, nil
}

// appendSOCKSAddr appends ATYP, address and port for hostport.
func appendSOCKSAddr(b []byte, hostport string) ([]byte, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("socks5: port %q: %w", portStr, err)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Is4() {
			b = append(b, 1)
			b = append(b, ip.AsSlice()...)
		} else {
			b = append(b, 4)
			b = append(b, ip.AsSlice()...)
		}
	} else {
		if len(host) > 255 {
			return nil, errors.New("socks5: host name too long")
		}
		b = append(b, 3, byte(len(host)))
		b = append(b, host...)
	}
	return binary.BigEndian.AppendUint16(b, uint16(port)), nil
}

// readSOCKSAddr reads an address of type atyp and its port. A domain name
// comes back as the zero AddrPort with only the port set.
func readSOCKSAddr(r io.Reader, atyp byte) (netip.AddrPort, error) {
	var ip netip.Addr
	switch atyp {
	case 1:
		var a [4]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return netip.AddrPort{}, err
		}
		ip = netip.AddrFrom4(a)
	case 4:
		var a [16]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return netip.AddrPort{}, err
		}
		ip = netip.AddrFrom16(a)
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return netip.AddrPort{}, err
		}
		if _, err := io.ReadFull(r, make([]byte, n[0])); err != nil {
			return netip.AddrPort{}, err
		}
	default:
		return netip.AddrPort{}, fmt.Errorf("address type %d", atyp)
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ip, binary.BigEndian.Uint16(p[:])), nil
}

// UDPAssociation is a SOCKS5 UDP ASSOCIATE session: datagrams go to the
// proxy's relay with the SOCKS5 UDP header; the association lives as long as
// its control connection.
type UDPAssociation struct {
	ctrl  net.Conn
	conn  *net.UDPConn // connected to the relay
	relay netip.AddrPort
	buf   []byte
}

// AssociateUDP opens a UDP association through the proxy.
func AssociateUDP(ctx context.Context, proxy string) (*UDPAssociation, error) {
	ctrl, bound, err := socksRequest(ctx, proxy, 3, "0.0.0.0:0")
	if err != nil {
		return nil, err
	}
	relay := bound
	if !relay.Addr().IsValid() || relay.Addr().IsUnspecified() {
		// The relay is on the proxy's host at the bound port.
		pa, err := netip.ParseAddrPort(proxy)
		if err != nil {
			ctrl.Close()
			return nil, fmt.Errorf("socks5: relay address: %w", err)
		}
		relay = netip.AddrPortFrom(pa.Addr(), bound.Port())
	}
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(relay))
	if err != nil {
		ctrl.Close()
		return nil, fmt.Errorf("socks5: udp relay %s: %w", relay, err)
	}
	return &UDPAssociation{ctrl: ctrl, conn: conn, relay: relay, buf: make([]byte, 65535)}, nil
}

// Relay returns the proxy's UDP relay address.
func (a *UDPAssociation) Relay() netip.AddrPort { return a.relay }

// WriteTo sends p to dst ("host:port") through the relay.
func (a *UDPAssociation) WriteTo(p []byte, dst string) error {
	b, err := appendSOCKSAddr([]byte{0, 0, 0}, dst)
	if err != nil {
		return err
	}
	_, err = a.conn.Write(append(b, p...))
	return err
}

// ReadFrom reads one datagram into p, returning its length and source.
func (a *UDPAssociation) ReadFrom(p []byte) (int, netip.AddrPort, error) {
	n, err := a.conn.Read(a.buf)
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	r := &sliceReader{b: a.buf[:n]}
	var head [3]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, netip.AddrPort{}, fmt.Errorf("socks5: short udp datagram")
	}
	if head[2] != 0 {
		return 0, netip.AddrPort{}, fmt.Errorf("socks5: fragmented udp datagram (frag %d)", head[2])
	}
	var atyp [1]byte
	if _, err := io.ReadFull(r, atyp[:]); err != nil {
		return 0, netip.AddrPort{}, err
	}
	from, err := readSOCKSAddr(r, atyp[0])
	if err != nil {
		return 0, netip.AddrPort{}, fmt.Errorf("socks5: udp datagram address: %w", err)
	}
	return copy(p, r.b), from, nil
}

// SetReadDeadline sets the deadline for ReadFrom.
func (a *UDPAssociation) SetReadDeadline(t time.Time) error { return a.conn.SetReadDeadline(t) }

// Close ends the association.
func (a *UDPAssociation) Close() error {
	a.conn.Close()
	return a.ctrl.Close()
}

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
