package mux

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
	"github.com/xtaci/smux"
	"golang.org/x/net/http2"
)

// session is one multiplexed connection to the server.
type session interface {
	// open opens a stream.
	open(ctx context.Context) (net.Conn, error)
	streams() int
	closed() bool
	Close() error
}

// newSession starts protocol proto's client on conn, which has sent the
// session header.
func newSession(proto string, conn net.Conn) (session, error) {
	switch proto {
	case protoSmux:
		cfg := smux.DefaultConfig()
		// sing-mux's server runs without keep-alives; so does its client.
		cfg.KeepAliveDisabled = true
		s, err := smux.Client(conn, cfg)
		if err != nil {
			return nil, err
		}
		return smuxSession{s}, nil
	case protoYamux:
		cfg := yamux.DefaultConfig()
		cfg.LogOutput = io.Discard
		cfg.StreamOpenTimeout = yamuxOpenTimeout
		cfg.StreamCloseTimeout = yamuxCloseTimeout
		s, err := yamux.Client(conn, cfg)
		if err != nil {
			return nil, err
		}
		return yamuxSession{s}, nil
	case protoH2:
		t := &http2.Transport{
			// Pings find a session whose server is gone while its TCP
			// connection looks alive.
			ReadIdleTimeout: h2ReadIdle,
			PingTimeout:     h2PingTimeout,
		}
		cc, err := t.NewClientConn(conn)
		if err != nil {
			return nil, err
		}
		return &h2Session{cc: cc}, nil
	}
	return nil, fmt.Errorf("mux: unknown protocol %q", proto)
}

// yamux's timeouts: a stream the server does not acknowledge within
// yamuxOpenTimeout ends the session (yamux's default is 75 s; sing-mux
// uses 5 s), and a closed stream waits yamuxCloseTimeout for the other
// side's close.
const (
	yamuxOpenTimeout  = 15 * time.Second
	yamuxCloseTimeout = 5 * time.Second
)

// HTTP/2 health checks of an idle session.
const (
	h2ReadIdle    = 30 * time.Second
	h2PingTimeout = 15 * time.Second
)

type smuxSession struct{ s *smux.Session }

func (s smuxSession) open(context.Context) (net.Conn, error) { return s.s.OpenStream() }
func (s smuxSession) streams() int                           { return s.s.NumStreams() }
func (s smuxSession) closed() bool                           { return s.s.IsClosed() }
func (s smuxSession) Close() error                           { return s.s.Close() }

type yamuxSession struct{ s *yamux.Session }

func (s yamuxSession) open(context.Context) (net.Conn, error) { return s.s.Open() }
func (s yamuxSession) streams() int                           { return s.s.NumStreams() }
func (s yamuxSession) closed() bool                           { return s.s.IsClosed() }
func (s yamuxSession) Close() error                           { return s.s.Close() }

// h2Session carries each stream as a CONNECT request, as sing-mux's
// h2mux does: the request body is the stream's sending half, the
// response body its receiving half.
type h2Session struct{ cc *http2.ClientConn }

func (s *h2Session) streams() int {
	st := s.cc.State()
	return st.StreamsActive + st.StreamsPending
}

func (s *h2Session) closed() bool {
	st := s.cc.State()
	return st.Closed || st.Closing || !s.cc.CanTakeNewRequest()
}

func (s *h2Session) Close() error { return s.cc.Close() }

func (s *h2Session) open(ctx context.Context) (net.Conn, error) {
	pr, pw := io.Pipe()
	c := &h2Stream{w: pw, ready: make(chan struct{}), local: dummyAddr{}, remote: dummyAddr{}}
	// The stream's context outlives the dial: it ends with Close.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	req := (&http.Request{
		Method: http.MethodConnect,
		URL:    &url.URL{Scheme: "https", Host: "localhost"},
		Host:   "localhost",
		Header: http.Header{},
		Body:   pr,
	}).WithContext(sctx)
	// The response comes once the server answers, which may be after the
	// first bytes of the stream are written: wait for it on reads only.
	go func() {
		resp, err := s.cc.RoundTrip(req)
		if err == nil && resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			err = fmt.Errorf("mux: h2mux: the server answered %s", resp.Status)
		}
		if err != nil {
			c.err = err
			pr.CloseWithError(err)
		} else {
			c.body = resp.Body
		}
		close(c.ready)
	}()
	return c, nil
}

// h2Stream is one h2mux stream.
type h2Stream struct {
	w      *io.PipeWriter
	cancel context.CancelFunc
	ready  chan struct{} // closed once the response (or its error) came
	body   io.ReadCloser // set before ready closes, unless err
	err    error

	local, remote net.Addr
	closeOnce     sync.Once
}

func (c *h2Stream) Read(p []byte) (int, error) {
	<-c.ready
	if c.err != nil {
		return 0, c.err
	}
	return c.body.Read(p)
}

func (c *h2Stream) Write(p []byte) (int, error) { return c.w.Write(p) }

func (c *h2Stream) Close() error {
	c.closeOnce.Do(func() {
		c.w.Close()
		c.cancel() // ends the request, and so the response body
	})
	return nil
}

func (c *h2Stream) LocalAddr() net.Addr  { return c.local }
func (c *h2Stream) RemoteAddr() net.Addr { return c.remote }

// The pipe and the response body have no deadlines: a stalled stream
// ends with Close (the relay's idle timers, the session's pings).
func (c *h2Stream) SetDeadline(time.Time) error      { return nil }
func (c *h2Stream) SetReadDeadline(time.Time) error  { return nil }
func (c *h2Stream) SetWriteDeadline(time.Time) error { return nil }

type dummyAddr struct{}

func (dummyAddr) Network() string { return "h2mux" }
func (dummyAddr) String() string  { return "h2mux" }
