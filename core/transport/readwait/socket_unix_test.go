//go:build unix

package readwait

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestSocketTryRead checks a socket's TryReader: it never waits, returns
// what the kernel holds, and leaves EOF and a passed deadline to Read.
func TestSocketTryRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, tr := For(c)
	if w == nil || tr == nil || w.(any) != tr.(any) {
		t.Fatalf("For(%T) = %T, %T: want one socket reader for both", c, w, tr)
	}
	b := make([]byte, 16)
	if n, err := tr.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of a quiet socket: %d, %v; want 0, nil", n, err)
	}
	peer.Write([]byte("hello"))
	nettest.StartWait(t, w.WaitRead).Ends("the peer's bytes")
	if n, err := tr.TryRead(b); n != 5 || err != nil || string(b[:n]) != "hello" {
		t.Fatalf("TryRead after the wait: %q, %v", b[:n], err)
	}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	peer.Write([]byte("x"))
	if n, err := tr.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead past the deadline: %d, %v; want 0, nil", n, err)
	}
	c.SetReadDeadline(time.Time{})
	peer.Close()
	nettest.Eventually(t, "the x and the EOF", func() (bool, string) {
		n, err := tr.TryRead(b)
		return n == 1 && err == nil, ""
	})
	if n, err := tr.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead at EOF: %d, %v; want 0, nil", n, err)
	}
	if _, err := c.Read(b); err != io.EOF {
		t.Fatalf("Read at EOF: %v", err)
	}
}
