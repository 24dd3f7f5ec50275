package mixed

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// socksUDP serves UDP ASSOCIATE (RFC 1928 section 7): it opens a relay
// socket on the IP the client reached us on, tells the client its address,
// and hands the session to the handler once the first datagram names a
// destination. The association lives as long as the TCP connection.
func (s *Server) socksUDP(c net.Conn, br *bufio.Reader, src netip.AddrPort, hint flow.Addr) error {
	local, _ := c.LocalAddr().(*net.TCPAddr)
	if local == nil {
		writeSOCKSReply(c, repGeneralFailure, nil)
		return fmt.Errorf("socks: udp associate: local address %v", c.LocalAddr())
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: local.IP, Zone: local.Zone})
	if err != nil {
		writeSOCKSReply(c, repGeneralFailure, nil)
		return fmt.Errorf("socks: udp associate: %w", err)
	}
	if err := writeSOCKSReply(c, repSucceeded, uc.LocalAddr()); err != nil {
		uc.Close()
		return fmt.Errorf("socks: udp associate reply: %w", err)
	}
	c.SetDeadline(time.Time{})

	// The association ends when the client closes the TCP connection.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		io.Copy(io.Discard, br)
		cancel()
	}()
	defer c.Close() // ends the goroutine above
	stop := context.AfterFunc(ctx, func() { uc.Close() })
	defer stop()

	// Datagrams are taken from the TCP client's IP only. The request's
	// address says which port the client will send from; its IP is often
	// 0.0.0.0 or an address of another interface of the client's, so it
	// is only trusted when it is the TCP client's.
	pc := &socksPacketConn{UDPConn: uc, clientIP: src.Addr()}
	if hint.Port != 0 && (!hint.IP.IsValid() || hint.IP.IsUnspecified() || hint.IP == src.Addr()) {
		pc.client = netip.AddrPortFrom(pc.clientIP, hint.Port)
	}
	// The session's destination is that of its first datagram.
	buf := make([]byte, 64<<10)
	n, dst, err := pc.ReadFrom(buf)
	if err != nil {
		uc.Close()
		return nil // the client went away before sending anything
	}
	pc.first = bytes.Clone(buf[:n])
	pc.firstDst = dst
	fdst, _ := flow.AddrFromNet(dst)
	m := flow.Metadata{Network: flow.UDP, Source: pc.client, Destination: fdst, Inbound: "socks"}
	if err := s.h.HandlePacket(ctx, m, pc); err != nil {
		return fmt.Errorf("socks: udp to %s: %w", fdst, err)
	}
	return nil
}

// socksPacketConn is the app's side of a SOCKS5 UDP association: ReadFrom
// strips the SOCKS UDP header and returns the datagram's destination,
// WriteTo adds the header with the reply's source. Only datagrams from the
// client's address are taken; fragmented ones (FRAG ≠ 0) are dropped.
//
// ReadFrom and WriteTo are each used by one goroutine (the relay's two
// directions) and do not allocate per datagram.
type socksPacketConn struct {
	*net.UDPConn
	clientIP netip.Addr
	client   netip.AddrPort // locked to the first sender when not given

	// The first datagram, read before the session was handed over.
	first    []byte
	firstDst net.Addr

	// Reader side cache: the last destination, boxed once.
	lastDst  flow.Addr
	lastAddr net.Addr

	wmu  sync.Mutex
	wbuf []byte
}

// ReadFrom returns the next datagram from the client and its destination.
func (c *socksPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	if c.first != nil {
		n := copy(b, c.first)
		addr := c.firstDst
		c.first, c.firstDst = nil, nil
		return n, addr, nil
	}
	for {
		n, from, err := c.UDPConn.ReadFromUDPAddrPort(b)
		if err != nil {
			return 0, nil, err
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if from.Addr() != c.clientIP || (c.client.IsValid() && from != c.client) {
			continue // not our client
		}
		dst, hl, err := c.parseHeader(b[:n])
		if err != nil {
			continue
		}
		c.client = from
		copy(b, b[hl:n])
		return n - hl, dst, nil
	}
}

var errFragment = errors.New("socks: fragmented UDP datagram")

// parseHeader parses the SOCKS UDP request header at the start of a
// datagram, RSV(2) FRAG(1) ATYP ADDR PORT, and returns the destination and
// the header's length. Fragments (FRAG ≠ 0) are refused, as RFC 1928 allows
// a relay that does not reassemble; RSV is not checked, as no client relies
// on it.
func (c *socksPacketConn) parseHeader(b []byte) (net.Addr, int, error) {
	if len(b) < 4 {
		return nil, 0, io.ErrUnexpectedEOF
	}
	if b[2] != 0 {
		return nil, 0, errFragment
	}
	dst, hl, err := c.parseDst(b[3:])
	if err != nil {
		return nil, 0, err
	}
	return dst, 3 + hl, nil
}

// parseDst parses the destination, reusing the previous one when it is the
// same (a name is then not copied again, and the net.Addr not re-boxed).
func (c *socksPacketConn) parseDst(b []byte) (net.Addr, int, error) {
	if b[0] == atypDomain && len(b) >= 2 && c.lastAddr != nil && c.lastDst.IsName() {
		n := int(b[1])
		if len(b) >= 2+n+2 && string(b[2:2+n]) == c.lastDst.Name &&
			uint16(b[2+n])<<8|uint16(b[3+n]) == c.lastDst.Port {
			return c.lastAddr, 2 + n + 2, nil
		}
	}
	a, hl, err := parseSOCKSAddr(b)
	if err != nil {
		return nil, 0, err
	}
	if c.lastAddr == nil || a != c.lastDst {
		c.lastDst, c.lastAddr = a, a
	}
	return c.lastAddr, hl, nil
}

// WriteTo sends a reply from addr (a flow.Addr or anything flow.AddrFromNet
// takes) to the client.
func (c *socksPacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	var from flow.Addr
	switch a := addr.(type) {
	case flow.Addr:
		from = a
	default:
		fa, err := flow.AddrFromNet(addr)
		if err != nil {
			return 0, fmt.Errorf("socks: udp reply from %v: %w", addr, err)
		}
		from = fa
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	w := append(c.wbuf[:0], 0, 0, 0)
	w = appendSOCKSAddr(w, from)
	w = append(w, b...)
	c.wbuf = w
	if _, err := c.UDPConn.WriteToUDPAddrPort(w, c.client); err != nil {
		return 0, err
	}
	return len(b), nil
}
