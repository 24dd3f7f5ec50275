package tlsconf

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"testing"

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
// socket in one write and arrives intact, and that small writes pass.
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
		{100 << 10, 1},  // larger than the pooled buffer
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
