// Package anytls is the AnyTLS outbound (anytls/anytls-go
// docs/protocol.md): streams multiplexed over TLS sessions whose first
// writes are cut and padded by a padding scheme, so that the TLS records
// of a proxied TLS handshake do not show through.
//
// A session is one TLS connection from core/transport/stack. It starts
// with SHA-256 of the password and padding (write 0), then the settings
// frame (v=2, the MD5 of the client's padding scheme) together with the
// first stream's SYN and destination (write 1); the app's first bytes are
// write 2. Writes 0 to stop-1 follow the scheme: each is cut into TLS
// records of the sizes it lists, and filled with waste frames where the
// data runs out ("c" marks stop filling once nothing is left). The server
// may send a new scheme, which the sessions dialled afterwards use.
//
// Reuse, as the protocol requires: a stream goes on the newest idle
// session (one without streams), and only when there is none is a new
// session dialled. Every check interval (30 s by default) sessions idle
// longer than the idle timeout (30 s) are closed, keeping the newest
// min-idle ones (0), as sing-box's client does. Past maxIdle idle sessions
// (or min-idle, when larger), the oldest is closed at once: after a burst
// of 500 flows sing-box keeps 500 sessions, each a TLS connection and a
// reader, for up to a minute (6.7 MiB here, 30 s after the flows closed),
// for reuse that the newest few already serve.
//
// UDP goes over a stream to sp.v2.udp-over-tcp.arpa (sing-box's UDP over
// TCP, version 2, not connected: every packet carries its address).
//
// The protocol has no answer to the password: a server that refuses it
// closes the connection (or serves a fallback site); a session that ends
// before any frame came back reports the authentication rejected. A
// version 2 server answers each SYN (SYNACK), with an error when its dial
// failed, which ends that stream with the error.
package anytls

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/outbound/internal/stack"
)

// Idle-session defaults (sing-box's).
const (
	DefaultIdleCheck   = 30 * time.Second
	DefaultIdleTimeout = 30 * time.Second
	minIdleCheck       = time.Second
	maxIdle            = 32
)

var errClosed = errors.New("client closed")

// Client is an AnyTLS outbound. It implements outbound.Outbound and is
// safe for concurrent use.
type Client struct {
	name   string
	stack  *stack.Stack
	auth   [32]byte
	scheme atomic.Pointer[paddingScheme]

	idleCheck, idleTimeout time.Duration
	minIdle                int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	seq    uint64
	idle   []*session // by seq, oldest first
	all    map[*session]struct{}
}

// New returns a Client for node n, whose connections come from d (nil:
// the system's). It does not connect; the first flow does.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	addr, err := outbound.NodeAddress(n, n != nil && n.AnyTLS != nil, "anytls", "AnyTLS")
	if err != nil {
		return nil, err
	}
	o := n.AnyTLS
	if o.Password == "" {
		return nil, fmt.Errorf("anytls: %s: empty password", addr)
	}
	if n.Transport != nil && n.Transport.Type != "" && n.Transport.Type != node.TransportTCP {
		return nil, node.Unsupportedf(node.FeatureTransport, n.Transport.Type, "anytls: %s: transport %q is not supported (AnyTLS runs on TLS over TCP)", addr, n.Transport.Type)
	}
	nn := *n
	if nn.TLS == nil {
		nn.TLS = &node.TLS{} // AnyTLS is always over TLS
	}
	st, err := stack.New("anytls", &nn, d)
	if err != nil {
		return nil, err
	}
	c := &Client{name: addr, stack: st, auth: sha256.Sum256([]byte(o.Password)),
		idleCheck: DefaultIdleCheck, idleTimeout: DefaultIdleTimeout, minIdle: max(o.MinIdleSession, 0),
		all: make(map[*session]struct{})}
	if o.IdleSessionCheckInterval > 0 {
		c.idleCheck = max(o.IdleSessionCheckInterval, minIdleCheck)
	}
	if o.IdleSessionTimeout > 0 {
		c.idleTimeout = o.IdleSessionTimeout
	}
	c.scheme.Store(defaultScheme)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.cleanLoop()
	return c, nil
}

// goOwned runs f in a goroutine Close waits for.
func (c *Client) goOwned(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// DialContext opens a stream to dst through the server.
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("anytls: %s via %s: network %q not supported", dst, c.name, network)
	}
	st, err := c.open(ctx, dst)
	if err != nil {
		if strings.HasPrefix(err.Error(), "anytls: ") { // the stack's: names the server and step
			return nil, err
		}
		return nil, fmt.Errorf("anytls: %s via %s: %w", dst, c.name, err)
	}
	return &flowConn{stream: st, c: c}, nil
}

// open opens a stream to dst on an idle session or a new one. A reused
// session that fails on the request is replaced, once.
func (c *Client) open(ctx context.Context, dst flow.Addr) (*stream, error) {
	if !dst.IsValid() {
		return nil, errors.New("invalid destination")
	}
	var req [frameHeaderLen*2 + 1 + 1 + 255 + 2]byte
	for attempt := 0; ; attempt++ {
		s, reused, err := c.session(ctx)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if s.streams == nil {
			s.mu.Unlock()
			if attempt == 0 {
				continue // it ended just now
			}
			return nil, s.err
		}
		s.nextID++
		id := s.nextID
		st := newStream(s, id)
		s.streams[id] = st
		s.mu.Unlock()
		b := appendFrameHeader(req[:0], cmdSYN, id, 0)
		hdr := len(b)
		b = appendFrameHeader(b, cmdPSH, id, 0)
		b, err = appendAddr(b, dst, socksTypes)
		if err != nil {
			s.remove(id)
			return nil, err
		}
		binary.BigEndian.PutUint16(b[hdr+5:], uint16(len(b)-hdr-frameHeaderLen))
		if err := s.writeFrames(b); err != nil {
			if reused && attempt == 0 && ctx.Err() == nil {
				continue
			}
			s.mu.Lock()
			cause := s.err // the reader's, when it ended the session first (a refused password)
			s.mu.Unlock()
			if cause != nil && !errors.Is(cause, net.ErrClosed) {
				return nil, cause
			}
			return nil, fmt.Errorf("send request: %w", err)
		}
		return st, nil
	}
}

// session returns the newest idle session, or dials a new one.
func (c *Client) session(ctx context.Context) (*session, bool, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false, errClosed
	}
	for len(c.idle) > 0 {
		s := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if s.alive() {
			c.mu.Unlock()
			return s, true, nil
		}
	}
	c.seq++
	seq := c.seq
	c.mu.Unlock()
	s, err := c.dial(ctx, seq)
	return s, false, err
}

// dial opens a new session: TLS, then the password and padding.
func (c *Client) dial(ctx context.Context, seq uint64) (*session, error) {
	conn, err := c.stack.Dial(ctx)
	if err != nil {
		return nil, err
	}
	s := &session{c: c, conn: conn, seq: seq, scheme: c.scheme.Load(), streams: make(map[uint32]*stream), done: make(chan struct{})}
	pad := 0
	if sizes := s.scheme.sizes(0); len(sizes) > 0 && sizes[0] > 0 {
		pad = sizes[0]
	}
	b := make([]byte, 0, 32+2+pad)
	b = append(b, c.auth[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(pad))
	b = append(b, make([]byte, pad)...)
	s.pkt = 1
	if _, err := conn.Write(b); err != nil {
		conn.Close()
		return nil, fmt.Errorf("send password: %w", err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		conn.Close()
		return nil, errClosed
	}
	c.all[s] = struct{}{}
	c.mu.Unlock()
	c.goOwned(s.readLoop)
	return s, nil
}

// putIdle returns s to the idle pool, closing the oldest idle session
// when the pool is full (maxIdle).
func (c *Client) putIdle(s *session) {
	c.mu.Lock()
	if c.closed || !s.alive() || slices.Contains(c.idle, s) {
		c.mu.Unlock()
		return
	}
	i, _ := slices.BinarySearchFunc(c.idle, s.seq, func(x *session, seq uint64) int {
		return int(x.seq - seq)
	})
	c.idle = slices.Insert(c.idle, i, s)
	var oldest *session
	if len(c.idle) > max(maxIdle, c.minIdle) {
		oldest = c.idle[0]
		c.idle = slices.Delete(c.idle, 0, 1)
	}
	c.mu.Unlock()
	if oldest != nil {
		oldest.fail(net.ErrClosed)
	}
}

// forget drops an ended session.
func (c *Client) forget(s *session) {
	c.mu.Lock()
	delete(c.all, s)
	if i := slices.Index(c.idle, s); i >= 0 {
		c.idle = slices.Delete(c.idle, i, i+1)
	}
	c.mu.Unlock()
}

// cleanLoop closes the sessions idle longer than the idle timeout, every
// check interval, keeping the newest minIdle.
func (c *Client) cleanLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.idleCheck)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		c.closeIdle(time.Now().Add(-c.idleTimeout))
	}
}

// closeIdle closes the idle sessions that went idle before cutoff, except
// the newest minIdle.
func (c *Client) closeIdle(cutoff time.Time) {
	var stale []*session
	c.mu.Lock()
	keep := c.idle[:0]
	for i, s := range c.idle {
		s.mu.Lock()
		old := s.idleSince.Before(cutoff) && len(s.streams) == 0
		s.mu.Unlock()
		if old && i < len(c.idle)-c.minIdle {
			stale = append(stale, s)
			continue
		}
		keep = append(keep, s)
	}
	clear(c.idle[len(keep):])
	c.idle = keep
	c.mu.Unlock()
	for _, s := range stale {
		s.fail(net.ErrClosed)
	}
}

// Close closes every session; open flows end.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	all := make([]*session, 0, len(c.all))
	for s := range c.all {
		all = append(all, s)
	}
	c.idle = nil
	c.mu.Unlock()
	c.cancel()
	for _, s := range all {
		s.fail(net.ErrClosed)
	}
	c.wg.Wait()
	return nil
}

// flowConn is a TCP flow: a stream whose errors name the client.
type flowConn struct {
	*stream
	c *Client
}

func (f *flowConn) Read(p []byte) (int, error) {
	n, err := f.stream.Read(p)
	return n, f.c.named(err)
}

func (f *flowConn) Write(p []byte) (int, error) {
	n, err := f.stream.Write(p)
	return n, f.c.named(err)
}

func (f *flowConn) WriteFrame(b []byte) (int, error) {
	n, err := f.stream.WriteFrame(b)
	return n, f.c.named(err)
}

// named prefixes a refused password's error with the protocol and server.
func (c *Client) named(err error) error {
	if err != nil && errors.Is(err, errRejected) {
		return fmt.Errorf("anytls: via %s: %w", c.name, err)
	}
	return err
}
