// Package dns answers the DNS queries that apps send inside the tunnel.
//
// In TUN mode every packet to port 53, whatever its address, is handed to a
// Server instead of leaving the machine. By default the Server answers
// A/AAAA queries from a fake-IP Pool: the app then connects to an address
// in 198.18.0.0/15 (or the IPv6 pool), the engine maps it back to the name,
// and the flow reaches the proxy server as that name, which the server
// resolves. No DNS query leaves the machine in the clear, and no round trip
// is spent on resolving before the connection starts.
//
// A per-name Mode lets the router choose otherwise: a real answer resolved
// through the proxy (DNS over UDP, TCP, TLS or HTTPS carried by the selected
// outbound), the system's resolver outside the tunnel for names routed
// direct, or a refusal for blocked names.
package dns

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/skiffvpn/skiff/core/guard"
)

// Mode is how the Server answers for a name.
type Mode uint8

// Modes.
const (
	// ModeFake answers A and AAAA with fake addresses from the Pool.
	// HTTPS and SVCB queries get an empty answer, so that browsers fall
	// back to A/AAAA instead of learning real addresses (and ECH keys)
	// that would bypass the fake ones. Other types go to the proxy
	// upstream, or get an empty answer when there is none.
	ModeFake Mode = iota
	// ModeProxy forwards the query to the proxy upstream (real-IP mode).
	ModeProxy
	// ModeDirect forwards the query to the direct upstream, the system's
	// resolver outside the tunnel, for names whose flows go direct.
	ModeDirect
	// ModeBlock answers NXDOMAIN.
	ModeBlock
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case ModeFake:
		return "fake-ip"
	case ModeProxy:
		return "proxy"
	case ModeDirect:
		return "direct"
	case ModeBlock:
		return "block"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// DefaultFakeTTL is the TTL of fake answers, in seconds. It is short (as in
// mihomo) so that an app asks again, and so keeps the name recently used
// in the Pool, instead of holding an address that may be reassigned.
const DefaultFakeTTL = 1

// Config configures a Server. Every field is optional.
type Config struct {
	// Pool gives out fake addresses. Without one, ModeFake acts as
	// ModeProxy.
	Pool *Pool
	// Proxy resolves through the selected outbound (real-IP mode).
	Proxy Upstream
	// Direct resolves with the system's resolver outside the tunnel.
	Direct Upstream
	// Mode picks the mode for a name (canonical: lower case, no trailing
	// dot). Nil means ModeFake for every name. Queries whose name is not a
	// host name (see CanonicalName) are forwarded to Proxy.
	Mode func(name string) Mode
	// Cache keeps upstream answers. Nil disables caching.
	Cache *Cache
	// FakeTTL is the TTL of fake answers; zero means DefaultFakeTTL.
	FakeTTL uint32
}

// Server answers DNS queries. It is safe for concurrent use.
type Server struct {
	cfg Config
}

// NewServer returns a Server.
func NewServer(cfg Config) *Server {
	if cfg.FakeTTL == 0 {
		cfg.FakeTTL = DefaultFakeTTL
	}
	return &Server{cfg: cfg}
}

// Errors returned when a message gets no response at all.
var (
	errShortMessage    = errors.New("dns: message too short for a header")
	errNotQuery        = errors.New("dns: message is a response, not a query")
	errUnknownResource = errors.New("dns: unknown resource type")
)

// Handle answers one query received over UDP and returns the response,
// newly allocated. A response larger than the client can take over UDP
// (512 bytes, or the size its EDNS record advertises) is cut down to its
// question with the TC bit set, so that the client retries over TCP.
//
// Handle always returns a response (FORMERR for a malformed query,
// SERVFAIL when the upstream failed) except for a message too short to
// carry a DNS header or one that is itself a response: those are dropped
// with an error.
func (s *Server) Handle(ctx context.Context, query []byte) ([]byte, error) {
	return s.handle(ctx, query, true)
}

// request is what handle knows of a query.
type request struct {
	header  dnsmessage.Header
	q       dnsmessage.Question
	udpSize int
}

func (s *Server) handle(ctx context.Context, query []byte, udp bool) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, errShortMessage
	}
	if h.Response {
		return nil, errNotQuery
	}
	req := request{header: h, udpSize: 512}
	if h.OpCode != 0 {
		return reply(&req, dnsmessage.RCodeNotImplemented, false), nil
	}
	req.q, err = p.Question()
	if err != nil {
		return reply(&req, dnsmessage.RCodeFormatError, false), nil
	}
	if _, err := p.Question(); err != dnsmessage.ErrSectionDone {
		return reply(&req, dnsmessage.RCodeFormatError, false), nil // exactly one question
	}
	req.udpSize = ednsSize(&p)

	resp := s.answer(ctx, &req, query)
	if udp && len(resp) > req.udpSize {
		resp = truncated(&req, resp)
	}
	return resp, nil
}

// answer returns the response to a well-formed query.
func (s *Server) answer(ctx context.Context, req *request, query []byte) []byte {
	q := &req.q
	if q.Class != dnsmessage.ClassINET {
		return reply(req, dnsmessage.RCodeRefused, true)
	}
	name, ok := questionName(&q.Name)
	if !ok {
		return s.forward(ctx, req, query, ModeProxy, "")
	}
	pool := s.cfg.Pool
	if q.Type == dnsmessage.TypePTR && pool != nil {
		if ip, ok := reverseAddr(name); ok && pool.Contains(ip) {
			host, ok := pool.Name(ip)
			if !ok {
				return reply(req, dnsmessage.RCodeNameError, true)
			}
			return s.fakeReply(req, func(b *dnsmessage.Builder, rh dnsmessage.ResourceHeader) error {
				target, err := dnsmessage.NewName(host + ".")
				if err != nil {
					return err
				}
				return b.PTRResource(rh, dnsmessage.PTRResource{PTR: target})
			})
		}
	}
	mode := ModeFake
	if s.cfg.Mode != nil {
		mode = s.cfg.Mode(name)
	}
	if mode == ModeFake && pool == nil {
		mode = ModeProxy
	}
	switch mode {
	case ModeBlock:
		return reply(req, dnsmessage.RCodeNameError, true)
	case ModeProxy, ModeDirect:
		return s.forward(ctx, req, query, mode, name)
	}
	switch q.Type {
	case dnsmessage.TypeA, dnsmessage.TypeAAAA:
		v4, v6 := pool.Lookup(name)
		if q.Type == dnsmessage.TypeA && v4.IsValid() {
			return s.fakeReply(req, func(b *dnsmessage.Builder, rh dnsmessage.ResourceHeader) error {
				return b.AResource(rh, dnsmessage.AResource{A: v4.As4()})
			})
		}
		if q.Type == dnsmessage.TypeAAAA && v6.IsValid() {
			return s.fakeReply(req, func(b *dnsmessage.Builder, rh dnsmessage.ResourceHeader) error {
				return b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: v6.As16()})
			})
		}
		return reply(req, dnsmessage.RCodeSuccess, true) // family disabled: no addresses
	case dnsmessage.TypeHTTPS, dnsmessage.TypeSVCB:
		return reply(req, dnsmessage.RCodeSuccess, true)
	}
	if s.cfg.Proxy == nil {
		return reply(req, dnsmessage.RCodeSuccess, true)
	}
	return s.forward(ctx, req, query, ModeProxy, name)
}

// forward sends the query to the upstream of mode, through the cache.
func (s *Server) forward(ctx context.Context, req *request, query []byte, mode Mode, name string) []byte {
	up := s.cfg.Proxy
	if mode == ModeDirect {
		up = s.cfg.Direct
	}
	if up == nil {
		return reply(req, dnsmessage.RCodeServerFailure, true)
	}
	cache := s.cfg.Cache
	key := cacheKey{mode: mode, name: name, qtype: req.q.Type, qclass: req.q.Class}
	if cache != nil && name != "" {
		if resp := cache.get(key, req.header.ID, req.header.RecursionDesired, req.q); resp != nil {
			return resp
		}
	}
	resp, err := up.Exchange(ctx, query)
	if err != nil || !isResponseTo(resp, req) {
		return reply(req, dnsmessage.RCodeServerFailure, true)
	}
	if cache != nil && name != "" {
		cache.put(key, resp)
	}
	return resp
}

// fakeReply builds a NOERROR response with one answer for the question,
// written by add, with the fake TTL.
func (s *Server) fakeReply(req *request, add func(*dnsmessage.Builder, dnsmessage.ResourceHeader) error) []byte {
	// No compression: it would cost a map per answer to save the few
	// bytes of one repeated name.
	b := dnsmessage.NewBuilder(make([]byte, 0, 128), responseHeader(req, dnsmessage.RCodeSuccess))
	rh := dnsmessage.ResourceHeader{Name: req.q.Name, Type: req.q.Type, Class: dnsmessage.ClassINET, TTL: s.cfg.FakeTTL}
	if b.StartQuestions() != nil || b.Question(req.q) != nil || b.StartAnswers() != nil || add(&b, rh) != nil {
		return reply(req, dnsmessage.RCodeServerFailure, true)
	}
	out, err := b.Finish()
	if err != nil {
		return reply(req, dnsmessage.RCodeServerFailure, true)
	}
	return out
}

func responseHeader(req *request, rcode dnsmessage.RCode) dnsmessage.Header {
	return dnsmessage.Header{
		ID:                 req.header.ID,
		Response:           true,
		OpCode:             req.header.OpCode,
		RecursionDesired:   req.header.RecursionDesired,
		RecursionAvailable: true,
		RCode:              rcode,
	}
}

// reply builds a response without answers, echoing the question when
// withQuestion is set.
func reply(req *request, rcode dnsmessage.RCode, withQuestion bool) []byte {
	b := dnsmessage.NewBuilder(make([]byte, 0, 64), responseHeader(req, rcode))
	if withQuestion {
		if b.StartQuestions() == nil && b.Question(req.q) == nil {
			if out, err := b.Finish(); err == nil {
				return out
			}
		}
		b = dnsmessage.NewBuilder(make([]byte, 0, 12), responseHeader(req, rcode))
	}
	out, _ := b.Finish() // a bare header always packs
	return out
}

// truncated returns the response cut down to its header and question with
// TC set.
func truncated(req *request, resp []byte) []byte {
	h := responseHeader(req, dnsmessage.RCodeSuccess)
	var p dnsmessage.Parser
	if rh, err := p.Start(resp); err == nil {
		h = rh
	}
	h.Truncated = true
	b := dnsmessage.NewBuilder(make([]byte, 0, 64), h)
	if b.StartQuestions() == nil && b.Question(req.q) == nil {
		if out, err := b.Finish(); err == nil {
			return out
		}
	}
	return reply(req, dnsmessage.RCodeServerFailure, false)
}

// ednsSize returns the UDP payload size the query's OPT record advertises,
// at least 512; p is positioned after the question.
func ednsSize(p *dnsmessage.Parser) int {
	if p.SkipAllAnswers() != nil || p.SkipAllAuthorities() != nil {
		return 512
	}
	for {
		h, err := p.AdditionalHeader()
		if err != nil {
			return 512
		}
		if h.Type == dnsmessage.TypeOPT {
			return max(512, int(h.Class))
		}
		if p.SkipAdditional() != nil {
			return 512
		}
	}
}

// isResponseTo reports whether resp answers req: same ID, QR set, and the
// same question (the name compared without regard to case).
func isResponseTo(resp []byte, req *request) bool {
	var p dnsmessage.Parser
	h, err := p.Start(resp)
	if err != nil || !h.Response || h.ID != req.header.ID {
		return false
	}
	q, err := p.Question()
	if err == dnsmessage.ErrSectionDone {
		return h.RCode != dnsmessage.RCodeSuccess // some servers omit the question in errors
	}
	return err == nil && sameQuestion(&q, &req.q)
}

func sameQuestion(a, b *dnsmessage.Question) bool {
	if a.Type != b.Type || a.Class != b.Class || a.Name.Length != b.Name.Length {
		return false
	}
	for i := range int(a.Name.Length) {
		x, y := a.Name.Data[i], b.Name.Data[i]
		if x|0x20 != y|0x20 || (x != y && (x|0x20 < 'a' || x|0x20 > 'z')) {
			return false
		}
	}
	return true
}

// ServeStream answers the length-prefixed queries of a DNS-over-TCP
// connection (RFC 1035 section 4.2.2, RFC 7766) until the client closes
// it, it stays idle for streamIdleTimeout, or ctx ends. Queries are
// answered in order. It does not close conn.
func (s *Server) ServeStream(ctx context.Context, conn net.Conn) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, 2+65535)
	for {
		if err := conn.SetReadDeadline(time.Now().Add(streamIdleTimeout)); err != nil {
			if isClosed(err) {
				return nil
			}
			return fmt.Errorf("dns: tcp from %s: %w", conn.RemoteAddr(), err)
		}
		if err := ctx.Err(); err != nil {
			return err // ended before the deadline above replaced the one ending it
		}
		if _, err := io.ReadFull(conn, buf[:2]); err != nil {
			if isClosed(err) {
				return nil // closed between queries
			}
			return streamErr(ctx, conn, err)
		}
		n := int(binary.BigEndian.Uint16(buf[:2]))
		if _, err := io.ReadFull(conn, buf[2:2+n]); err != nil {
			return streamErr(ctx, conn, err)
		}
		resp, err := s.handle(ctx, buf[2:2+n], false)
		if err != nil {
			continue // not a query: nothing to answer
		}
		out := append(buf[:0], byte(len(resp)>>8), byte(len(resp)))
		out = append(out, resp...)
		if _, err := conn.Write(out); err != nil {
			return streamErr(ctx, conn, err)
		}
	}
}

// streamIdleTimeout is how long ServeStream waits for the next query.
const streamIdleTimeout = 30 * time.Second

// packetIdleTimeout is how long ServePacket waits for the next query.
const packetIdleTimeout = 30 * time.Second

// maxPacketInFlight bounds the queries of one ServePacket session being
// answered at once.
const maxPacketInFlight = 32

// ServePacket answers the queries of a UDP session: each datagram read from
// conn is one query, answered concurrently (a slow upstream does not hold
// up a fake answer), the response written back with WriteTo to the address
// ReadFrom returned for the query (for the engine's inbound conns, the
// address the app sent it to). It returns when the session has been idle
// for packetIdleTimeout, when ctx ends, or when conn fails, once the
// queries in flight are answered. It does not close conn.
func (s *Server) ServePacket(ctx context.Context, conn net.PacketConn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, maxPacketInFlight)
	buf := make([]byte, 65535)
	for {
		if err := conn.SetReadDeadline(time.Now().Add(packetIdleTimeout)); err != nil {
			if isClosed(err) {
				return nil
			}
			return fmt.Errorf("dns: udp session: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if isClosed(err) || errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			return fmt.Errorf("dns: udp session: %w", err)
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // too many in flight: drop, the client will retry
		}
		wg.Add(1)
		go func(q []byte) {
			defer wg.Done()
			defer func() { <-sem }()
			defer guard.Recover(ctx, "dns query")
			resp, err := s.Handle(ctx, q)
			if err == nil {
				_, _ = conn.WriteTo(resp, from)
			}
		}(bytes.Clone(buf[:n]))
	}
}

// isClosed reports whether err means the connection was closed.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed)
}

func streamErr(ctx context.Context, conn net.Conn, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil // idle: the client may reconnect
	}
	return fmt.Errorf("dns: tcp from %s: %w", conn.RemoteAddr(), err)
}
