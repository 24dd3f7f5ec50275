// Package mixed is the local proxy inbound: one TCP listener that speaks
// SOCKS5 (CONNECT and UDP ASSOCIATE) and HTTP proxy (CONNECT and plain
// absolute-URI requests), told apart by the first byte. Apps that are
// pointed at it (system proxy settings, browsers, curl) get their flows
// handed to a flow.Handler.
//
// Without Config.Auth the proxy asks no credentials; with it, every client
// must give them (SOCKS5 username/password, HTTP Basic). Either way it
// listens on loopback only unless the caller explicitly allows another
// address.
package mixed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// Config is the inbound's settings.
type Config struct {
	// Listen is the TCP address to listen on, "host:port".
	Listen string
	// AllowNonLoopback allows Listen to name an address other than
	// loopback (including "" and 0.0.0.0, every address). Without it such
	// an address is refused: the proxy would be open to the network.
	AllowNonLoopback bool
	// Logger receives the inbound's own log lines; nil: slog.Default().
	Logger *slog.Logger
	// Panics counts and logs the panics recovered while serving a client;
	// its flows carry it in their context (see package guard). May be nil.
	Panics *guard.Reporter
	// Auth, when set, is required of every client; nil: none.
	Auth *Auth
}

// handshakeTimeout bounds how long a client may take to send its request.
const handshakeTimeout = 30 * time.Second

// Server is a running mixed inbound.
type Server struct {
	ln     net.Listener
	h      flow.Handler
	auth   *authCheck // nil: no authentication
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Listen starts listening on cfg.Listen and serving flows to h until Close.
func Listen(cfg Config, h flow.Handler) (*Server, error) {
	if err := checkListen(cfg.Listen, cfg.AllowNonLoopback); err != nil {
		return nil, err
	}
	if cfg.Auth != nil {
		if err := cfg.Auth.Validate(); err != nil {
			return nil, fmt.Errorf("mixed: %w", err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("mixed: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(guard.WithReporter(context.Background(), cfg.Panics))
	s := &Server{ln: ln, h: h, auth: newAuthCheck(cfg.Auth), log: log, ctx: ctx, cancel: cancel}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// checkListen refuses an address that is not loopback unless allowed.
func checkListen(addr string, allow bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mixed: listen address %q: %w", addr, err)
	}
	if allow || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("mixed: listen address %q is not a loopback address: anyone who can reach it could use the proxy; allow it explicitly to listen there", addr)
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops listening, ends every flow and waits until all of the
// server's goroutines have returned.
func (s *Server) Close() error {
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Server) serve() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off and retry,
			// as net/http does.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay *= 2; delay > time.Second {
				delay = time.Second
			}
			s.log.Warn("mixed: accept failed", "err", err, "retry", delay)
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		delay = 0
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer guard.Recover(s.ctx, "proxy client") // handle's deferred Close ends the client first
			s.handle(c)
		}()
	}
}

// handle serves one client connection.
func (s *Server) handle(c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(s.ctx, func() { c.Close() })
	defer stop()
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	lim := &io.LimitedReader{R: c, N: noLimit}
	br := bufio.NewReaderSize(lim, 2048)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	var src netip.AddrPort
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		src = netip.AddrPortFrom(ta.AddrPort().Addr().Unmap(), ta.AddrPort().Port())
	}
	switch first[0] {
	case socksVersion:
		err = s.serveSOCKS(c, br, src)
	case 4:
		err = errors.New("SOCKS4 is not supported, use SOCKS5")
	default:
		err = s.serveHTTP(c, br, lim, src)
	}
	if err != nil && s.ctx.Err() == nil && s.log.Enabled(s.ctx, slog.LevelDebug) {
		s.log.Debug("mixed: client", "src", src.String(), "err", err)
	}
}

// closeWriter is a conn that can shut down its sending half.
type closeWriter interface {
	CloseWrite() error
}

// bufferedConn is a client conn whose first bytes were already read into a
// bufio.Reader (data the client sent right behind its request). It waits
// for its next bytes as the conn does (readwait.Waiter), once the reader
// is drained, so that an idle flow's relay holds no buffer.
type bufferedConn struct {
	net.Conn
	r    *bufio.Reader
	wait readwait.Waiter // the conn's; nil: it cannot wait
}

// clientConn returns c ready for relaying, clearing the handshake deadline:
// c itself when br holds nothing more, otherwise a conn that first drains br.
func clientConn(c net.Conn, br *bufio.Reader) net.Conn {
	c.SetDeadline(time.Time{})
	if br.Buffered() == 0 {
		return c
	}
	return &bufferedConn{Conn: c, r: br, wait: readwait.Of(c)}
}

// WaitRead returns at once while the reader holds bytes, and then waits
// as the conn does (readwait.Waiter).
func (c *bufferedConn) WaitRead() bool {
	if c.r != nil && c.r.Buffered() > 0 {
		return true
	}
	return c.wait != nil && c.wait.WaitRead()
}

// Read reads what was buffered first, then from the conn.
func (c *bufferedConn) Read(b []byte) (int, error) {
	if c.r != nil {
		if c.r.Buffered() > 0 {
			return c.r.Read(b)
		}
		c.r = nil
	}
	return c.Conn.Read(b)
}

// CloseWrite shuts down the sending half of the underlying conn.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
