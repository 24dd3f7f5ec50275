package tlsconf

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestWaitRead checks that WaitRead waits for the next record without
// reading it, returns at once while crypto/tls still holds plaintext, and
// declines before the first Read (the handshake may still be running).
func TestWaitRead(t *testing.T) {
	c, send := idlePair(t)
	if c.WaitRead() {
		t.Fatal("WaitRead waited before the first Read")
	}
	send <- []byte("first")
	if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	w := nettest.StartWait(t, c.WaitRead)
	w.Blocked("on a quiet connection")
	send <- []byte("0123456789")
	w.Ends("a record came")
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "0123" {
		t.Fatalf("read after the wait: %q, %v", b, err)
	}
	// Six bytes of the record wait in crypto/tls: no waiting for the socket.
	nettest.StartWait(t, c.WaitRead).Ends("with plaintext held by crypto/tls")
	b = make([]byte, 6)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "456789" {
		t.Fatalf("read of the rest: %q, %v", b, err)
	}
}

// TestWaitReadAfterCloseNotify: the server sends its last bytes and a
// close_notify (tls.Conn.CloseWrite, as sing-box's Trojan server does when
// the destination closes) but keeps its TCP side open. A TryRead that
// brings the bytes also meets the close_notify, and a caller may leave
// that EOF for the next Read (reqconn does, after data): WaitRead must
// then end at once, as the next Read returns EOF without the socket. It
// waited for the socket forever, and the app never saw the close.
func TestWaitReadAfterCloseNotify(t *testing.T) {
	cert, _ := nettest.SelfSigned(t, "tlsconf.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	release := make(chan struct{})
	defer close(release)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if _, err := tc.Write([]byte("first")); err != nil {
			return
		}
		if _, err := io.ReadFull(tc, make([]byte, 2)); err != nil { // "go"
			return
		}
		tc.Write([]byte("last"))
		tc.CloseWrite() // close_notify; the socket stays open
		<-release
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Client(raw, &tls.Config{InsecureSkipVerify: true})
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("go")); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 100)
	for deadline := time.Now().Add(5 * time.Second); ; {
		n, err := c.TryRead(buf)
		got = append(got, buf[:n]...)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("TryRead: %q, %v", got, err)
		}
		if len(got) == 4 {
			break // the EOF, if TryRead met it, is left for Read as reqconn leaves it
		}
		time.Sleep(time.Millisecond)
	}
	// Let the close_notify arrive, if it did not come with the data, and
	// let a TryRead meet it, dropping the error as a caller may.
	time.Sleep(50 * time.Millisecond)
	c.TryRead(buf)
	nettest.StartWait(t, c.WaitRead).Ends("close_notify")
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after close_notify: %d, %v; want EOF", n, err)
	}
}
