package quicconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound"
)

// QUIC settings the clients share: the reference clients' defaults (8 MiB
// per stream, 20 MiB per connection); the handshake may take up to twice
// HandshakeIdleTimeout.
const (
	HandshakeIdleTimeout = 5 * time.Second
	MaxIdleTimeout       = 30 * time.Second
	KeepAlivePeriod      = 10 * time.Second
	StreamReceiveWindow  = 8 << 20
	ConnReceiveWindow    = 20 << 20

	// DialTimeout bounds one connection attempt: name resolution, the
	// QUIC and TLS handshake and the protocol's authentication.
	DialTimeout = 12 * time.Second
)

// NewConfig returns the QUIC settings of a client with the given receive
// windows and datagrams on; the client adds its own (keep-alives,
// incoming streams).
func NewConfig(streamWindow, connWindow uint64) *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout:           HandshakeIdleTimeout,
		MaxIdleTimeout:                 MaxIdleTimeout,
		InitialStreamReceiveWindow:     streamWindow,
		MaxStreamReceiveWindow:         streamWindow,
		InitialConnectionReceiveWindow: connWindow,
		MaxConnectionReceiveWindow:     connWindow,
		EnableDatagrams:                true,
	}
}

// Link is the part every protocol connection has: one QUIC connection,
// its transport and the socket under it, and the panic reporter of the
// flow that dialled it (its readers report there; see package guard). A
// protocol's connection type embeds it, which makes it a Conn.
type Link struct {
	QC     *quic.Conn
	Tr     *quic.Transport
	Sock   net.PacketConn
	Panics *guard.Reporter
}

// QUIC returns l (Conn).
func (l *Link) QUIC() *Link { return l }

// Alive reports whether the QUIC connection is open.
func (l *Link) Alive() bool { return l.QC.Context().Err() == nil }

// Close closes the QUIC connection with code, its transport and its
// socket.
func (l *Link) Close(code quic.ApplicationErrorCode) {
	l.QC.CloseWithError(code, "")
	l.release()
}

// Every calls f every d until the QUIC connection dies; f gets the
// connection's context.
func (l *Link) Every(d time.Duration, f func(ctx context.Context)) {
	ctx := l.QC.Context()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f(ctx)
	}
}

func (l *Link) release() {
	l.Tr.Close()
	l.Sock.Close()
}

// Server is the server a client dials and the settings of every
// connection to it.
type Server struct {
	Proto  string // the protocol, which starts every error: "tuic"
	Name   string // the server as errors show it: "host:port"
	Host   string // server name or IP literal
	Port   uint16
	Dialer outbound.Dialer
	TLS    *tls.Config
	QUIC   *quic.Config
}

// Dial opens a UDP socket for a connection to s (Open) and dials QUIC on
// it into l, through wrap (the socket's receive offload, obfuscation);
// early dials 0-RTT. It returns the server's name for errors.
func (s *Server) Dial(ctx context.Context, l *Link, wrap func(net.PacketConn) net.PacketConn, early bool) (server string, err error) {
	raddr, server, sock, err := Open(ctx, s.Dialer, s.Proto, s.Name, s.Host, s.Port)
	if err != nil {
		return "", err
	}
	l.Sock = sock
	return server, l.Dial(ctx, s, server, wrap(sock), raddr, early)
}

// Dial dials QUIC to raddr on pc (l.Sock, or a wrapper of it) with s's
// settings and sets l.Tr and l.QC; early dials 0-RTT. On failure it closes
// the transport and the socket and returns HandshakeError's error for
// server.
func (l *Link) Dial(ctx context.Context, s *Server, server string, pc net.PacketConn, raddr net.Addr, early bool) error {
	l.Tr = &quic.Transport{Conn: pc}
	var err error
	if early {
		l.QC, err = l.Tr.DialEarly(ctx, raddr, s.TLS, s.QUIC)
	} else {
		l.QC, err = l.Tr.Dial(ctx, raddr, s.TLS, s.QUIC)
	}
	if err != nil {
		l.release()
		return HandshakeError(s.Proto, server, ctx, err)
	}
	return nil
}

// Open resolves host (Resolve), opens a UDP socket from d for a
// connection to it on port, and names the server for errors: name and,
// when it differs, the address dialled.
func Open(ctx context.Context, d outbound.Dialer, proto, name, host string, port uint16) (raddr *net.UDPAddr, server string, sock net.PacketConn, err error) {
	ip, err := Resolve(ctx, d, proto, name, host)
	if err != nil {
		return nil, "", nil, err
	}
	raddr = &net.UDPAddr{IP: ip.AsSlice(), Port: int(port)}
	server = ServerName(name, raddr)
	sock, err = d.ListenPacket(ctx, "udp", "")
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: dial %s: open UDP socket: %w", proto, server, err)
	}
	return raddr, server, sock, nil
}

// ServerName names a server for errors: name ("host:port") and, when it
// differs, the address dialled.
func ServerName(name string, raddr *net.UDPAddr) string {
	if s := raddr.String(); s != name {
		return name + " (" + s + ")"
	}
	return name
}

// Serve ends a connection's run goroutine: it waits until q's QUIC
// connection dies, forgets q and closes its transport and socket.
func (s *Shared[C]) Serve(q C) {
	l := q.QUIC()
	<-l.QC.Context().Done()
	s.Forget(q)
	l.release()
}

// Retry runs open on the live connection (dialling one if there is none)
// and, when it fails because that connection died under it while ctx
// lives, once more on a new one. A failed open's error goes through wrap;
// a failed dial's is returned as it is.
func Retry[C Conn, T any](ctx context.Context, s *Shared[C], open func(C) (T, error), wrap func(C, error) error) (T, error) {
	var zero T
	for attempt := 0; ; attempt++ {
		q, err := s.Get(ctx)
		if err != nil {
			return zero, err
		}
		v, err := open(q)
		if err == nil {
			return v, nil
		}
		if attempt > 0 || ctx.Err() != nil || q.QUIC().Alive() {
			return zero, wrap(q, err)
		}
		// The connection died under this request: dial a new one.
	}
}

// PathStats reports the live connection's figures with the receive rate
// the client declared (bytes/s; 0: none), for the failover group's
// throttle judging. ok is false while there is no live connection.
func (s *Shared[C]) PathStats(declaredRx uint64) (outbound.PathStats, bool) {
	q, ok := s.Current()
	if !ok {
		return outbound.PathStats{}, false
	}
	return PathStats(q.QUIC().QC, declaredRx), true
}

// Send opens a stream on qc and sends req on it, the request that starts
// a TCP flow or a UDP session. On failure the stream is cancelled.
func Send(ctx context.Context, qc *quic.Conn, req []byte) (*quic.Stream, error) {
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	if _, err := st.Write(req); err != nil {
		st.CancelRead(0)
		st.CancelWrite(0)
		return nil, fmt.Errorf("send request: %w", err)
	}
	return st, nil
}

// Answer waits for the answer to a stream request sent on st, which read
// parses, under a stall check (StallReader; rx is what qc had received
// before the request went out) and ctx. On failure it cancels st; a stall
// also closes qc with code, so that the next flow dials anew.
func Answer(ctx context.Context, qc *quic.Conn, st *quic.Stream, rx uint64, code quic.ApplicationErrorCode, read func(io.Reader) error) error {
	// ctx cancels the wait through the deadline.
	r := StallReader{St: st, QC: qc, Ctx: ctx, RX: rx, Stall: StallTimeout(qc)}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { st.SetReadDeadline(time.Unix(1, 0)) })
	}
	st.SetReadDeadline(time.Now().Add(r.Stall))
	err := read(&r)
	if !stop() && err == nil {
		err = ctx.Err() // ctx ended just as the answer came: the deadline is spoilt
	}
	if err != nil {
		st.CancelRead(0)
		st.CancelWrite(0)
		switch {
		case errors.Is(err, ErrStalled):
			qc.CloseWithError(code, "")
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("waiting for the server's answer: %w", ctx.Err())
		}
		return fmt.Errorf("read answer: %w", err)
	}
	st.SetReadDeadline(time.Time{})
	return nil
}
