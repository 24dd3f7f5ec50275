package core

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/core/sniff"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// sniffConn looks at the first bytes an app sends on a flow to an address
// (TLS SNI, HTTP Host) and records the host name in the connection table,
// so the user sees "www.example.com" rather than an address.
//
// It sniffs after the upstream is connected, from the relay's own first
// read, so it costs no wait and no extra copy; the route was chosen by
// address (or by the fake-IP name, which TUN flows normally have). Later
// reads pass straight through.
type sniffConn struct {
	net.Conn
	c    *stats.Conn
	done atomic.Bool

	// Conn's Waiter and TryReader, made once (the reader's own: WaitRead
	// and TryRead run on the relay's upload goroutine).
	readers readwait.Lazy
}

func (s *sniffConn) Read(b []byte) (int, error) {
	n, err := s.Conn.Read(b)
	if n > 0 && !s.done.Swap(true) {
		if host, _, serr := sniff.Sniff(b[:n]); serr == nil && host != "" {
			s.c.SetHost(host)
		}
	}
	return n, err
}

// WaitRead waits on the app's conn, when it can (readwait.Waiter): sniffing
// only looks at what a Read returns.
func (s *sniffConn) WaitRead() bool {
	if w, _ := s.readers.Of(s.Conn); w != nil {
		return w.WaitRead()
	}
	return false
}

// NotifyRead calls back when the app's conn can (readwait.Notifier): as
// for WaitRead, sniffing only looks at what a Read returns.
func (s *sniffConn) NotifyRead(f func()) bool {
	if n, ok := s.Conn.(readwait.Notifier); ok {
		return n.NotifyRead(f)
	}
	return false
}

// WaitReadFor waits on the app's conn for at most d, when it can call
// back (readwait.Notifier); false when it cannot.
func (s *sniffConn) WaitReadFor(d time.Duration) bool {
	if n, ok := s.Conn.(readwait.Notifier); ok {
		return n.WaitReadFor(d)
	}
	return false
}

// TryRead reads what the app's conn has at once, when it can
// (readwait.TryReader). The relay tries only after a Read, which sniffed.
func (s *sniffConn) TryRead(b []byte) (int, error) {
	if _, t := s.readers.Of(s.Conn); t != nil && s.done.Load() {
		return t.TryRead(b)
	}
	return 0, nil
}

// CloseWrite passes a half-close on to the app's conn, which has one (the
// engine wraps only such conns).
func (s *sniffConn) CloseWrite() error {
	return s.Conn.(interface{ CloseWrite() error }).CloseWrite()
}
