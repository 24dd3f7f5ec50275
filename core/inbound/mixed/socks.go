package mixed

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"

	"github.com/skiffvpn/skiff/core/flow"
)

// SOCKS5 constants (RFC 1928).
const (
	socksVersion = 5

	methodNoAuth       = 0x00
	methodNoAcceptable = 0xff

	cmdConnect      = 1
	cmdBind         = 2
	cmdUDPAssociate = 3

	atypIPv4   = 1
	atypDomain = 3
	atypIPv6   = 4

	repSucceeded          = 0x00
	repGeneralFailure     = 0x01
	repNetworkUnreachable = 0x03
	repHostUnreachable    = 0x04
	repConnectionRefused  = 0x05
	repCmdNotSupported    = 0x07
	repAtypNotSupported   = 0x08
)

// serveSOCKS serves a SOCKS5 client whose first byte (the version) is in br.
func (s *Server) serveSOCKS(c net.Conn, br *bufio.Reader, src netip.AddrPort) error {
	// Greeting: VER NMETHODS METHODS…
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return fmt.Errorf("socks: greeting: %w", err)
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return fmt.Errorf("socks: greeting: %w", err)
	}
	want := byte(methodNoAuth)
	if s.auth != nil {
		want = methodUserPass
	}
	offered := false
	for _, m := range methods {
		offered = offered || m == want
	}
	if !offered {
		c.Write([]byte{socksVersion, methodNoAcceptable})
		if s.auth != nil {
			return errors.New("socks: client offers no username/password authentication")
		}
		return errors.New("socks: client offers no method without authentication")
	}
	if _, err := c.Write([]byte{socksVersion, want}); err != nil {
		return fmt.Errorf("socks: greeting reply: %w", err)
	}
	if s.auth != nil {
		user, pass, err := readUserPass(br)
		if err != nil {
			return fmt.Errorf("socks: authentication: %w", err)
		}
		if !s.auth.match(user, pass) {
			c.Write([]byte{userPassVer, userPassFailed})
			return errors.New("socks: wrong username or password")
		}
		if _, err := c.Write([]byte{userPassVer, userPassOK}); err != nil {
			return fmt.Errorf("socks: authentication reply: %w", err)
		}
	}

	// Request: VER CMD RSV ATYP DST.ADDR DST.PORT
	var req [3]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return fmt.Errorf("socks: request: %w", err)
	}
	if req[0] != socksVersion {
		return fmt.Errorf("socks: request: version %d", req[0])
	}
	dst, err := readSOCKSAddr(br)
	if err != nil {
		if errors.Is(err, errAtyp) {
			writeSOCKSReply(c, repAtypNotSupported, nil)
		}
		return fmt.Errorf("socks: request: %w", err)
	}
	switch req[1] {
	case cmdConnect:
		return s.socksConnect(c, br, src, dst)
	case cmdUDPAssociate:
		return s.socksUDP(c, br, src, dst)
	default: // BIND and anything else
		writeSOCKSReply(c, repCmdNotSupported, nil)
		return fmt.Errorf("socks: command %d not supported", req[1])
	}
}

// socksConnect serves CONNECT: the success reply is sent only once the
// handler has its upstream.
func (s *Server) socksConnect(c net.Conn, br *bufio.Reader, src netip.AddrPort, dst flow.Addr) error {
	m := flow.Metadata{Network: flow.TCP, Source: src, Destination: dst, Inbound: "socks"}
	accepted := false
	err := s.h.HandleStream(s.ctx, m, func() (net.Conn, error) {
		accepted = true
		if err := writeSOCKSReply(c, repSucceeded, c.LocalAddr()); err != nil {
			return nil, fmt.Errorf("socks: reply: %w", err)
		}
		return clientConn(c, br), nil
	})
	if err != nil && !accepted {
		writeSOCKSReply(c, socksCode(err), nil)
	}
	if err != nil {
		return fmt.Errorf("socks: connect %s: %w", dst, err)
	}
	return nil
}

// socksCode picks the reply code for a failed dial.
func socksCode(err error) byte {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return repConnectionRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return repNetworkUnreachable
	case errors.Is(err, context.Canceled):
		return repGeneralFailure
	default:
		return repHostUnreachable
	}
}

var errAtyp = errors.New("address type not supported")

// readSOCKSAddr reads ATYP ADDR PORT.
func readSOCKSAddr(r io.Reader) (flow.Addr, error) {
	// ATYP, the name's length byte, the longest name (255 bytes, RFC 1928)
	// and the port: 259 bytes.
	var b [1 + 1 + 255 + 2]byte
	if _, err := io.ReadFull(r, b[:1]); err != nil {
		return flow.Addr{}, err
	}
	have, end := 1, 0
	switch b[0] {
	case atypIPv4:
		end = 1 + 4 + 2
	case atypIPv6:
		end = 1 + 16 + 2
	case atypDomain:
		if _, err := io.ReadFull(r, b[1:2]); err != nil {
			return flow.Addr{}, err
		}
		have, end = 2, 2+int(b[1])+2
	default:
		return flow.Addr{}, errAtyp
	}
	if _, err := io.ReadFull(r, b[have:end]); err != nil {
		return flow.Addr{}, err
	}
	a, _, err := parseSOCKSAddr(b[:end])
	return a, err
}

// parseSOCKSAddr parses ATYP ADDR PORT at the start of b and returns the
// address and its length.
func parseSOCKSAddr(b []byte) (flow.Addr, int, error) {
	if len(b) < 1 {
		return flow.Addr{}, 0, io.ErrUnexpectedEOF
	}
	switch b[0] {
	case atypIPv4:
		if len(b) < 1+4+2 {
			return flow.Addr{}, 0, io.ErrUnexpectedEOF
		}
		ip := netip.AddrFrom4([4]byte(b[1:5]))
		return flow.Addr{IP: ip, Port: binary.BigEndian.Uint16(b[5:7])}, 7, nil
	case atypIPv6:
		if len(b) < 1+16+2 {
			return flow.Addr{}, 0, io.ErrUnexpectedEOF
		}
		ip := netip.AddrFrom16([16]byte(b[1:17])).Unmap()
		return flow.Addr{IP: ip, Port: binary.BigEndian.Uint16(b[17:19])}, 19, nil
	case atypDomain:
		if len(b) < 2 {
			return flow.Addr{}, 0, io.ErrUnexpectedEOF
		}
		n := int(b[1])
		if n == 0 {
			return flow.Addr{}, 0, errors.New("empty domain name")
		}
		if len(b) < 2+n+2 {
			return flow.Addr{}, 0, io.ErrUnexpectedEOF
		}
		port := binary.BigEndian.Uint16(b[2+n:])
		a := flow.NameAddr(string(b[2:2+n]), port)
		if !a.IsValid() {
			return flow.Addr{}, 0, errors.New("empty domain name")
		}
		return a, 2 + n + 2, nil
	}
	return flow.Addr{}, 0, errAtyp
}

// appendSOCKSAddr appends a's ATYP ADDR PORT to b.
func appendSOCKSAddr(b []byte, a flow.Addr) []byte {
	switch {
	case a.IP.Is4():
		ip4 := a.IP.As4()
		b = append(b, atypIPv4)
		b = append(b, ip4[:]...)
	case a.IP.Is6():
		b = append(b, atypIPv6)
		ip16 := a.IP.As16()
		b = append(b, ip16[:]...)
	default:
		name := a.Name
		if len(name) > 255 {
			name = name[:255]
		}
		b = append(b, atypDomain, byte(len(name)))
		b = append(b, name...)
	}
	return binary.BigEndian.AppendUint16(b, a.Port)
}

// writeSOCKSReply writes VER REP RSV BND.ADDR BND.PORT; bind nil sends
// 0.0.0.0:0.
func writeSOCKSReply(w io.Writer, rep byte, bind net.Addr) error {
	a := flow.Addr{IP: netip.IPv4Unspecified()}
	if bind != nil {
		if fa, err := flow.AddrFromNet(bind); err == nil {
			a = fa
		}
	}
	b := make([]byte, 0, 3+1+16+2)
	b = append(b, socksVersion, rep, 0)
	b = appendSOCKSAddr(b, a)
	_, err := w.Write(b)
	return err
}
