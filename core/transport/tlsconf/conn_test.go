package tlsconf

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// writeCounter counts the socket writes under TLS.
type writeCounter struct {
	net.Conn
	n atomic.Int64
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.n.Add(1)
	return w.Conn.Write(p)
}

// TestConnBatch checks that a Write of several records reaches the
// socket in one write per maxBatch bytes and arrives intact, and that
// small writes pass.
func TestConnBatch(t *testing.T) {
	cert, _ := nettest.SelfSigned(t, "tlsconf.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	wc := &writeCounter{Conn: raw}
	c := Client(wc, &tls.Config{InsecureSkipVerify: true})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	var want []byte
	tests := []struct {
		size, writes int
	}{
		{100, 1},
		{1 << 10, 1},
		{16 << 10, 1},   // several records while TLS starts small
		{32<<10 + 8, 1}, // three records
		{64 << 10, 1},
		{100 << 10, 2}, // more than maxBatch: two batches
		{240 << 10, 4}, // a batch per maxBatch, each of the pooled size
	}
	for _, tt := range tests {
		p := bytes.Repeat([]byte{byte(tt.size)}, tt.size)
		before := wc.n.Load()
		if n, err := c.Write(p); n != len(p) || err != nil {
			t.Fatalf("write %d: %d, %v", tt.size, n, err)
		}
		if w := wc.n.Load() - before; w != int64(tt.writes) {
			t.Errorf("write of %d bytes: %d socket writes, want %d", tt.size, w, tt.writes)
		}
		want = append(want, p...)
	}
	c.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("server got %d bytes, want %d", len(b), len(want))
	}
}

// gate sits between a TLS client and server on loopback: it forwards the
// client's bytes at once and holds the server's until the test releases
// them, so that a test decides which records (or parts of one) the client's
// kernel has.
type gate struct {
	t      *testing.T
	client net.Conn // the gate's end toward the client
	mu     sync.Mutex
	held   []byte // from the server, not yet passed on
	auto   bool   // pass everything on at once (during the handshake)
}

// newGate returns a connected client-side conn and the gate; the server
// side runs srv over TLS with cfg.
func newGate(t *testing.T, cfg *tls.Config, srv func(*tls.Conn)) (net.Conn, *gate) {
	// The server talks to the gate over a pipe; the client dials the
	// gate over loopback TCP, so that it reads from a real socket.
	sraw, craw := net.Pipe()
	go func() {
		tc := tls.Server(sraw, cfg)
		defer tc.Close()
		if tc.Handshake() == nil {
			srv(tc)
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{t: t, auto: true, client: <-acc}
	if g.client == nil {
		t.Fatal("gate: accept failed")
	}
	t.Cleanup(func() { client.Close(); g.client.Close(); craw.Close() })
	go io.Copy(craw, g.client) // client → server
	go func() {                // server → client, held unless auto
		buf := make([]byte, 64<<10)
		for {
			n, err := craw.Read(buf)
			g.mu.Lock()
			if n > 0 {
				if g.auto {
					g.client.Write(buf[:n])
				} else {
					g.held = append(g.held, buf[:n]...)
				}
			}
			g.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return client, g
}

// hold stops passing the server's bytes on.
func (g *gate) hold() {
	g.mu.Lock()
	g.auto = false
	g.mu.Unlock()
}

// records waits until the gate holds k whole TLS records from the server and
// returns their total length.
func (g *gate) records(k int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, off := 0, 0
		for n < k && off+5 <= len(g.held) {
			l := 5 + int(binary.BigEndian.Uint16(g.held[off+3:]))
			if off+l > len(g.held) {
				break
			}
			off += l
			n++
		}
		if n == k {
			return off
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("gate: %d of %d records from the server", n, k)
		}
		g.mu.Unlock()
		time.Sleep(time.Millisecond)
		g.mu.Lock()
	}
}

// release passes n held bytes on to the client.
func (g *gate) release(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.client.Write(g.held[:n]); err != nil {
		g.t.Fatalf("gate: %v", err)
	}
	g.held = g.held[n:]
}

// tryRead calls TryRead until it has brought want bytes in all, failing
// the test if one call takes long (TryRead must not wait) or the bytes do
// not come within 5 s.
func tryRead(t *testing.T, c *Conn, want int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 64<<10)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want {
		start := time.Now()
		n, err := c.TryRead(buf)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("TryRead waited %v", d)
		}
		if err != nil {
			t.Fatalf("TryRead after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
		if time.Now().After(deadline) {
			t.Fatalf("TryRead brought %d bytes, want %d", len(got), want)
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return got
}

// TestTryRead checks that TryRead returns what the kernel and crypto/tls
// hold without waiting, (0, nil) when that is nothing or only part of a
// record, and that the connection stays usable afterwards.
func TestTryRead(t *testing.T) {
	cert, _ := nettest.SelfSigned(t, "tlsconf.test")
	rec := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 10000) }
	tests := []struct {
		name string
		run  func(t *testing.T, c *Conn, g *gate, send chan<- []byte)
	}{
		{"nothing held", func(t *testing.T, c *Conn, g *gate, send chan<- []byte) {
			if n, err := c.TryRead(make([]byte, 100)); n != 0 || err != nil {
				t.Fatalf("TryRead: %d, %v; want 0, nil", n, err)
			}
		}},
		{"several records", func(t *testing.T, c *Conn, g *gate, send chan<- []byte) {
			var want []byte
			for i := range 3 {
				send <- rec(i)
				want = append(want, rec(i)...)
			}
			g.release(g.records(3))
			buf := make([]byte, 64<<10)
			n, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got := append(buf[:n:n], tryRead(t, c, len(want)-n)...)
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d in order", len(got), len(want))
			}
			if n, err := c.TryRead(buf); n != 0 || err != nil {
				t.Fatalf("TryRead with nothing left: %d, %v", n, err)
			}
		}},
		{"part of a record", func(t *testing.T, c *Conn, g *gate, send chan<- []byte) {
			send <- rec(0)
			l := g.records(1)
			g.release(l / 2)
			buf := make([]byte, 64<<10)
			for range 20 {
				if n, err := c.TryRead(buf); n != 0 || err != nil {
					t.Fatalf("TryRead on half a record: %d, %v", n, err)
				}
			}
			g.release(l - l/2)
			if got := tryRead(t, c, len(rec(0))); !bytes.Equal(got, rec(0)) {
				t.Fatal("record differs after the half-record TryReads")
			}
			send <- rec(1)
			g.release(g.records(1))
			n, err := io.ReadFull(c, buf[:len(rec(1))])
			if err != nil || !bytes.Equal(buf[:n], rec(1)) {
				t.Fatalf("Read after: %d, %v", n, err)
			}
		}},
		{"close_notify", func(t *testing.T, c *Conn, g *gate, send chan<- []byte) {
			send <- rec(0)
			close(send) // the server closes: close_notify after the data
			g.release(g.records(2))
			got := tryRead(t, c, len(rec(0)))
			if !bytes.Equal(got, rec(0)) {
				t.Fatal("data before close_notify differs")
			}
			if n, err := c.Read(make([]byte, 10)); n != 0 || err != io.EOF {
				t.Fatalf("Read after close_notify: %d, %v; want EOF", n, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send := make(chan []byte)
			cfg := &tls.Config{Certificates: []tls.Certificate{cert}, SessionTicketsDisabled: true,
				DynamicRecordSizingDisabled: true} // one record per server Write
			raw, g := newGate(t, cfg, func(s *tls.Conn) {
				for p := range send {
					if _, err := s.Write(p); err != nil {
						return
					}
				}
				s.Close()
			})
			c := Client(raw, &tls.Config{InsecureSkipVerify: true})
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if err := c.Handshake(); err != nil {
				t.Fatal(err)
			}
			g.hold()
			tt.run(t, c, g, send)
		})
	}
}

// TestTryReadTicket checks that a post-handshake message (a TLS 1.3 session
// ticket) met by TryRead is consumed without waiting and without harm.
func TestTryReadTicket(t *testing.T) {
	cert, _ := nettest.SelfSigned(t, "tlsconf.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	next := make(chan struct{})
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.(*tls.Conn).Handshake() // sends the tickets
		<-next
		c.Write([]byte("after the ticket"))
		io.Copy(io.Discard, c)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Client(raw, &tls.Config{InsecureSkipVerify: true, ClientSessionCache: tls.NewLRUClientSessionCache(1)})
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	for range 50 { // the tickets arrive meanwhile; TryRead takes them in
		if n, err := c.TryRead(buf); n != 0 || err != nil {
			t.Fatalf("TryRead: %d, %v", n, err)
		}
		time.Sleep(time.Millisecond)
	}
	close(next)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "after the ticket" {
		t.Fatalf("Read: %q, %v", buf[:n], err)
	}
}
