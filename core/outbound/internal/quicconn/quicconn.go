// Package quicconn holds what the QUIC proxy clients (Hysteria v1 and 2,
// TUIC) share: one live connection per client, dialled on first use and
// again when it dies (Shared), the server it dials (Server) and what each
// such connection holds (Link); its QUIC settings (NewConfig); name resolution and handshake errors; a
// QUIC stream as a net.Conn (StreamConn); a request's answer read under a
// stall check (StallReader); a UDP session as a net.PacketConn but for
// the protocol's sending step (PacketQueue); UDP fragment reassembly
// (Defragger); the datagram reader and its panic guard; and a deadline a
// select can wait on (Deadline). The protocols differ in their wire formats and
// authentication, not in these.
package quicconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/guard"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/internal/sysdial"
)

// ErrClientClosed is returned by a closed client.
var ErrClientClosed = errors.New("client closed")

// Conn is one live protocol connection: a type that embeds Link.
type Conn interface {
	QUIC() *Link
}

// Shared keeps one live connection for a client. Flows that find no
// connection at the same time wait for the same dial; each stops waiting
// when its ctx ends, and the dial goes on for the others.
type Shared[C Conn] struct {
	proto, name string
	ctx         context.Context // ends on Close; parent of every dial
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	dial        func(ctx context.Context, panics *guard.Reporter) (C, error)
	run         func(C)
	closeCode   quic.ApplicationErrorCode

	mu      sync.Mutex
	closed  bool
	cur     C
	has     bool         // cur is set
	dialing *dialCall[C] // the dial in progress, or nil
}

type dialCall[C any] struct {
	done chan struct{}
	conn C
	err  error
}

// NewShared returns a holder whose connections come from dial, which gets
// a context bounded by Close and DialTimeout, and the flow's panic
// reporter.
// run is started in its own goroutine for each new connection and owns
// it until it dies; it calls Forget then. proto and name ("host:port")
// prefix errors. closeCode is the code Close closes a connection with.
func NewShared[C Conn](proto, name string, closeCode quic.ApplicationErrorCode,
	dial func(ctx context.Context, panics *guard.Reporter) (C, error), run func(C)) *Shared[C] {
	s := &Shared[C]{proto: proto, name: name, dial: dial, run: run, closeCode: closeCode}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Context ends when Close is called.
func (s *Shared[C]) Context() context.Context { return s.ctx }

// Current returns the live connection, if any, without dialling.
func (s *Shared[C]) Current() (C, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.has && s.cur.QUIC().Alive() {
		return s.cur, true
	}
	var zero C
	return zero, false
}

// Get returns the live connection, dialling one if there is none.
func (s *Shared[C]) Get(ctx context.Context) (C, error) {
	var zero C
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return zero, fmt.Errorf("%s: %s: %w", s.proto, s.name, ErrClientClosed)
	}
	if s.has {
		if s.cur.QUIC().Alive() {
			q := s.cur
			s.mu.Unlock()
			return q, nil
		}
		s.cur, s.has = zero, false // its goroutine closes the socket
	}
	call := s.dialing
	if call == nil {
		call = &dialCall[C]{done: make(chan struct{})}
		s.dialing = call
		s.wg.Add(1)
		go s.dialOnce(call, guard.FromContext(ctx))
	}
	s.mu.Unlock()
	select {
	case <-call.done:
		return call.conn, call.err
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: connect to %s: %w", s.proto, s.name, ctx.Err())
	}
}

// ForSend returns the connection a datagram goes on: the live one, or a
// new one dialled within deadline (zero: none) and DialTimeout. The UDP
// sessions of the protocols send this way: a write waits for a new
// connection no longer than its write deadline allows.
func (s *Shared[C]) ForSend(deadline time.Time) (C, error) {
	if q, ok := s.Current(); ok {
		return q, nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, DialTimeout)
	defer cancel()
	if !deadline.IsZero() {
		var cancel2 context.CancelFunc
		ctx, cancel2 = context.WithDeadline(ctx, deadline)
		defer cancel2()
	}
	return s.Get(ctx)
}

// dialOnce runs one connection attempt for call. A panic while connecting
// fails this attempt only; the waiting flows get it as their error.
func (s *Shared[C]) dialOnce(call *dialCall[C], panics *guard.Reporter) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(guard.WithReporter(s.ctx, panics), DialTimeout)
	var q C
	err := guard.Do(ctx, s.proto+" connect", func() (err error) {
		q, err = s.dial(ctx, panics)
		return err
	})
	cancel()
	s.mu.Lock()
	s.dialing = nil
	if err == nil && s.closed {
		q.QUIC().Close(s.closeCode)
		err = fmt.Errorf("%s: %s: %w", s.proto, s.name, ErrClientClosed)
	}
	if err == nil {
		s.cur, s.has = q, true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.run(q)
		}()
	} else {
		var zero C
		q = zero
	}
	call.conn, call.err = q, err
	s.mu.Unlock()
	close(call.done)
}

// Forget drops q if it is the current connection, so that the next flow
// dials anew.
func (s *Shared[C]) Forget(q C) {
	s.mu.Lock()
	if s.has && any(s.cur) == any(q) {
		var zero C
		s.cur, s.has = zero, false
	}
	s.mu.Unlock()
}

// Go runs f in a goroutine that Close waits for.
func (s *Shared[C]) Go(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Close closes the live connection, stops dialling and waits for the
// connection goroutines. stop runs between closing and waiting (to wake
// what the goroutines might wait for). It reports false when already
// closed.
func (s *Shared[C]) Close(stop func()) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.closed = true
	q, has := s.cur, s.has
	var zero C
	s.cur, s.has = zero, false
	s.mu.Unlock()
	s.cancel()
	if has {
		q.QUIC().Close(s.closeCode)
	}
	if stop != nil {
		stop()
	}
	s.wg.Wait()
	return true
}

// Resolve returns host's address: the literal itself, or the first that
// d's resolver returns (sysdial.LookupNetIP). Errors start with "proto:
// dial name".
func Resolve(ctx context.Context, d outbound.Dialer, proto, name, host string) (netip.Addr, error) {
	ips, err := sysdial.LookupNetIP(ctx, d, "ip", host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s: dial %s: resolve: %w", proto, name, err)
	}
	if len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("%s: dial %s: resolve: no address", proto, name)
	}
	return ips[0], nil
}

// HandshakeError names what failed in a QUIC dial to server: a timeout,
// the certificate, or something else in the handshake. ctx is the dial's
// context; only the client's Close cancels it.
func HandshakeError(proto, server string, ctx context.Context, err error) error {
	var certErr *tls.CertificateVerificationError
	var hostErr x509.HostnameError
	var authErr x509.UnknownAuthorityError
	var invErr x509.CertificateInvalidError
	switch {
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &authErr),
		errors.As(err, &invErr), errors.Is(err, tlsconf.ErrPinMismatch):
		return fmt.Errorf("%s: TLS handshake with %s: certificate verification failed: %w", proto, server, err)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("%s: dial %s: %w", proto, server, ErrClientClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: dial %s: timed out: %w", proto, server, err)
	}
	var hto *quic.HandshakeTimeoutError
	var ito *quic.IdleTimeoutError
	if errors.As(err, &hto) || errors.As(err, &ito) {
		return fmt.Errorf("%s: dial %s: QUIC handshake timed out (no answer from the server): %w", proto, server, err)
	}
	return fmt.Errorf("%s: dial %s: QUIC/TLS handshake: %w", proto, server, err)
}

// RetiredLinger is how long a retired connection may go on carrying its
// streams while no new connection replaces it.
const RetiredLinger = 2 * time.Minute

// Retire takes the live connection out of use: the network under it
// changed (a new uplink, a resume from sleep), and it is bound to a socket
// whose source address may be gone and to a NAT mapping the way to the
// server may have dropped, so it would stay silent until its idle
// time-out. The next flow dials a new connection from a new socket; the
// old one keeps carrying its open streams while it still can, and is
// closed once the new one is up, or after RetiredLinger with no new one.
func (s *Shared[C]) Retire() {
	s.mu.Lock()
	old, has := s.cur, s.has
	var zero C
	s.cur, s.has = zero, false
	s.mu.Unlock()
	if !has {
		return
	}
	s.Go(func() {
		t := time.NewTimer(RetiredLinger)
		defer t.Stop()
		tick := time.NewTicker(200 * time.Millisecond) // a change is rare: poll
		defer tick.Stop()
		for {
			select {
			case <-old.QUIC().QC.Context().Done():
			case <-s.ctx.Done():
			case <-t.C:
			case <-tick.C:
				if cur, ok := s.Current(); !ok || any(cur) == any(old) {
					continue
				}
			}
			old.QUIC().Close(s.closeCode)
			return
		}
	})
}
