// Package mux is the client of sing-box's multiplex (sing-mux): many flows
// as streams of a few connections that the outer protocol (VLESS, VMess,
// Trojan, Shadowsocks) opens to the server, with smux, yamux or HTTP/2
// (h2mux), and optional padding. See protocol.go for the wire.
//
// Client wraps the outer protocol's outbound.Outbound. A session whose
// connection dies fails the streams on it, and is dropped: the next flow
// opens a new one. So each flow still fails, and fails over, on its own.
package mux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/udpstreams"
)

// Protocols, as sing-box and Clash name them.
const (
	protoSmux  = node.MultiplexSmux
	protoYamux = node.MultiplexYamux
	protoH2    = node.MultiplexH2
)

// Defaults of the session pool, sing-box's: without max_streams, up to
// defaultConnections sessions, a new one once each carries
// defaultMinStreams.
const (
	defaultConnections = 4
	defaultMinStreams  = 4
)

// Config is a node's multiplex settings, checked.
type Config struct {
	Protocol       string // smux, yamux or h2mux
	code           byte
	Padding        bool
	MaxConnections int // with MaxStreams 0
	MinStreams     int // with MaxStreams 0
	MaxStreams     int // >0: a new session once every one carries this many, without bound on sessions
}

// ParseConfig checks a node's multiplex protocol and options (o nil:
// defaults). An unknown protocol is an *node.UnsupportedError.
func ParseConfig(proto string, o *node.MultiplexOptions) (Config, error) {
	c := Config{Protocol: proto}
	switch proto {
	case protoSmux:
		c.code = codeSmux
	case protoYamux:
		c.code = codeYamux
	case protoH2, "":
		c.Protocol, c.code = protoH2, codeH2 // sing-box's and mihomo's default
	default:
		return c, node.Unsupportedf(node.FeatureMultiplex, proto, "multiplex %q is not supported (only smux, yamux and h2mux)", proto)
	}
	if o != nil {
		if o.MaxConnections < 0 || o.MinStreams < 0 || o.MaxStreams < 0 {
			return c, errors.New("multiplex: negative max_connections, min_streams or max_streams")
		}
		if o.MaxStreams > 0 && (o.MaxConnections > 0 || o.MinStreams > 0) {
			return c, errors.New("multiplex: max_streams conflicts with max_connections and min_streams")
		}
		c.Padding = o.Padding
		c.MaxConnections, c.MinStreams, c.MaxStreams = o.MaxConnections, o.MinStreams, o.MaxStreams
	}
	if c.MaxStreams == 0 {
		if c.MaxConnections == 0 {
			c.MaxConnections = defaultConnections
		}
		if c.MinStreams == 0 {
			c.MinStreams = defaultMinStreams
		}
	}
	return c, nil
}

// Client is an outbound whose flows are streams of multiplexed sessions
// of inner's.
type Client struct {
	inner outbound.Outbound
	cfg   Config
	name  string // the outer protocol and server, for errors

	dialSem chan struct{} // one session dial at a time, so a burst of flows opens one session, not one each

	mu       sync.Mutex
	sessions []session
	idle     map[session]time.Time // since when a session has carried no stream
	closed   bool
	now      func() time.Time // time.Now; tests set it
}

// maxIdle is how long a session without streams is kept. smux sessions
// run without keep-alives (sing-box's server has none), so one whose NAT
// mapping or server went away silently would take new flows into a void;
// a session idle this long is closed instead and the next flow opens a
// fresh one (a handshake more after a quiet minute).
const maxIdle = 60 * time.Second

// New returns the multiplexing client over inner, which it owns (Close
// closes it). name prefixes errors ("vless: 1.2.3.4:443").
func New(inner outbound.Outbound, cfg Config, name string) *Client {
	return &Client{inner: inner, cfg: cfg, name: name, dialSem: make(chan struct{}, 1), idle: map[session]time.Time{}, now: time.Now}
}

// pick returns the session for a new stream, nil when a new session is to
// be opened. It prunes dead sessions and those idle for maxIdle. c.mu is
// held.
func (c *Client) pick() session {
	now := c.now()
	live := c.sessions[:0]
	for _, s := range c.sessions {
		if s.streams() > 0 {
			delete(c.idle, s)
		} else if since, ok := c.idle[s]; !ok {
			c.idle[s] = now
		} else if now.Sub(since) > maxIdle {
			s.Close()
		}
		if s.closed() {
			s.Close()
			delete(c.idle, s)
			continue
		}
		live = append(live, s)
	}
	clear(c.sessions[len(live):])
	c.sessions = live
	var best session
	bestN := 0
	for _, s := range live {
		if n := s.streams(); best == nil || n < bestN {
			best, bestN = s, n
		}
	}
	switch {
	case best == nil:
		return nil
	case c.cfg.MaxStreams > 0:
		if bestN >= c.cfg.MaxStreams {
			return nil
		}
	case bestN >= c.cfg.MinStreams && len(live) < c.cfg.MaxConnections:
		return nil
	}
	return best
}

// session returns a session to open a stream on, and whether it is new.
func (c *Client) session(ctx context.Context) (session, bool, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false, net.ErrClosed
	}
	if s := c.pick(); s != nil {
		c.mu.Unlock()
		return s, false, nil
	}
	c.mu.Unlock()
	select {
	case c.dialSem <- struct{}{}:
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
	defer func() { <-c.dialSem }()
	// Another flow may have opened one while this one waited.
	c.mu.Lock()
	if s := c.pick(); s != nil {
		c.mu.Unlock()
		return s, false, nil
	}
	c.mu.Unlock()
	s, err := c.dialSession(ctx)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		s.Close()
		return nil, false, net.ErrClosed
	}
	c.sessions = append(c.sessions, s)
	return s, true, nil
}

// dialSession opens the outer stream and starts a session on it.
func (c *Client) dialSession(ctx context.Context) (session, error) {
	conn, err := c.inner.DialContext(ctx, "tcp", Destination)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(sessionHeader(c.cfg.code, c.cfg.Padding)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: mux: %w", c.name, err)
	}
	if c.cfg.Padding {
		conn = newPaddingConn(conn)
	}
	s, err := newSession(c.cfg.Protocol, conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%s: mux: %s: %w", c.name, c.cfg.Protocol, err)
	}
	return s, nil
}

// openStream opens a stream to dst and sends its request. A session
// that fails to open one is dropped and, when it was not new, the stream
// is tried once on another: a dead session costs its flows, not the next
// ones.
func (c *Client) openStream(ctx context.Context, udp bool, dst flow.Addr) (net.Conn, error) {
	req, err := streamRequest(nil, udp, dst)
	if err != nil {
		return nil, fmt.Errorf("%s: mux: %w", c.name, err)
	}
	for try := 0; ; try++ {
		s, fresh, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		st, err := s.open(ctx)
		if err == nil {
			if _, err = st.Write(req); err == nil {
				return &streamConn{Conn: st}, nil
			}
			st.Close()
		}
		s.Close()
		if fresh || try > 0 {
			return nil, fmt.Errorf("%s: mux: %s: opening a stream: %w", c.name, c.cfg.Protocol, err)
		}
	}
}

// DialContext opens a stream to dst. The server's answer is read with
// the stream's first bytes (it sends it once the destination answers, or
// fails).
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if network != "tcp" {
		return nil, fmt.Errorf("%s: mux: network %q", c.name, network)
	}
	return c.openStream(ctx, false, dst)
}

// maxDatagram is the largest datagram a UDP stream carries (a u16 length).
const maxDatagram = 0xffff

// ListenPacket opens a UDP session: one stream per destination.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	return udpstreams.Listen(ctx, udpstreams.Config{
		Proto:    "mux",
		Server:   c.name,
		MaxWrite: maxDatagram,
		Dial: func(ctx context.Context, dst flow.Addr) (udpstreams.Stream, error) {
			conn, err := c.openStream(ctx, true, dst)
			if err != nil {
				return nil, err
			}
			return newUDPStream(conn.(*streamConn)), nil
		},
	}, dst, nil)
}

// Close closes every session, and so every stream, and the inner
// outbound.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	ss := c.sessions
	c.sessions = nil
	c.mu.Unlock()
	for _, s := range ss {
		s.Close()
	}
	return c.inner.Close()
}

// streamConn is a TCP stream: its first read reads the server's status.
type streamConn struct {
	net.Conn
	once sync.Once
	err  error
}

func (c *streamConn) Read(p []byte) (int, error) {
	c.once.Do(func() { c.err = readStatus(c.Conn) })
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}

// udpStream frames one destination's datagrams.
type udpStream struct {
	c    *streamConn
	done chan struct{}
	once sync.Once
	hdr  [2]byte
	wbuf []byte
	wmu  sync.Mutex
}

func newUDPStream(c *streamConn) *udpStream { return &udpStream{c: c, done: make(chan struct{})} }

func (s *udpStream) WriteDatagram(p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf = append(append(s.wbuf[:0], byte(len(p)>>8), byte(len(p))), p...)
	_, err := s.c.Write(s.wbuf)
	return err
}

func (s *udpStream) ReadDatagram(p []byte) (int, error) {
	return udpstreams.ReadFramed(s.c, &s.hdr, p)
}

func (s *udpStream) SetWriteDeadline(t time.Time) error { return s.c.SetWriteDeadline(t) }
func (s *udpStream) Close() error {
	s.once.Do(func() { close(s.done) })
	return s.c.Close()
}
func (s *udpStream) Done() <-chan struct{} { return s.done }
