package udpstreams

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
)

// pipeStream frames datagrams with a u16 length over one end of a net.Pipe
// whose other end is an echo server (or, with refuse, one that closes once
// it read the request, as a server that refuses the user does).
type pipeStream struct {
	net.Conn
	once sync.Once
	done chan struct{}
}

func (s *pipeStream) WriteDatagram(p []byte) error {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(p)))
	_, err := s.Write(append(b, p...))
	return err
}

func (s *pipeStream) ReadDatagram(p []byte) (int, error) {
	var h [2]byte
	if _, err := io.ReadFull(s.Conn, h[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint16(h[:]))
	_, err := io.ReadFull(s.Conn, p[:n])
	return n, err
}

func (s *pipeStream) Close() error {
	s.once.Do(func() { close(s.done) })
	return s.Conn.Close()
}

func (s *pipeStream) Done() <-chan struct{} { return s.done }

type server struct {
	mu     sync.Mutex
	dials  int
	refuse bool
	after  int // close the stream after this many echoes; 0: never
}

func (sv *server) dial(_ context.Context, _ flow.Addr) (Stream, error) {
	a, b := net.Pipe()
	sv.mu.Lock()
	sv.dials++
	refuse, after := sv.refuse, sv.after
	sv.mu.Unlock()
	go func() {
		defer b.Close()
		if refuse { // read the request, answer nothing
			io.ReadFull(b, make([]byte, 3))
			return
		}
		for i := 0; after == 0 || i < after; i++ {
			var h [2]byte
			if _, err := io.ReadFull(b, h[:]); err != nil {
				return
			}
			p := make([]byte, binary.BigEndian.Uint16(h[:]))
			if _, err := io.ReadFull(b, p); err != nil {
				return
			}
			if _, err := b.Write(append(h[:], p...)); err != nil {
				return
			}
		}
	}()
	return &pipeStream{Conn: a, done: make(chan struct{})}, nil
}

func (sv *server) count() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.dials
}

func newConn(t *testing.T, sv *server, readAfterWrite bool) *Conn {
	t.Helper()
	pc := New(context.Background(), Config{Proto: "test", Server: "pipe", MaxWrite: 1000, Dial: sv.dial, ReadAfterWrite: readAfterWrite})
	t.Cleanup(func() { pc.Close() })
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	return pc
}

func TestSession(t *testing.T) {
	a, b := flow.NameAddr("a.example", 53), flow.NameAddr("b.example", 53)
	for _, raw := range []bool{false, true} {
		sv := &server{}
		pc := newConn(t, sv, raw)
		buf := make([]byte, MaxDatagram)
		for i, dst := range []flow.Addr{a, b, a} {
			if _, err := pc.WriteTo([]byte{byte(i)}, dst); err != nil {
				t.Fatal(err)
			}
			n, from, err := pc.ReadFrom(buf)
			if err != nil || n != 1 || buf[0] != byte(i) || from.(flow.Addr) != dst {
				t.Fatalf("ReadAfterWrite %v, datagram %d: %d bytes from %v, %v", raw, i, n, from, err)
			}
		}
		if n := sv.count(); n != 2 {
			t.Fatalf("%d streams dialed, want one per destination", n)
		}
		if _, err := pc.WriteTo(make([]byte, 1001), a); err == nil {
			t.Fatal("a datagram over MaxWrite went out")
		}
	}
}

// A stream the server ends after a datagram is dialed again by the next
// WriteTo, and ReadFrom hears nothing of it.
func TestRedial(t *testing.T) {
	sv := &server{after: 1}
	pc := newConn(t, sv, false)
	a := flow.NameAddr("a.example", 53)
	buf := make([]byte, MaxDatagram)
	for i := range 3 {
		if _, err := pc.WriteTo([]byte{byte(i)}, a); err != nil {
			t.Fatal(err)
		}
		if n, _, err := pc.ReadFrom(buf); err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("round %d: %d bytes, %v", i, n, err)
		}
		for deadline := time.Now().Add(5 * time.Second); pc.Has(a); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("stream still open after the server closed it")
			}
		}
	}
	if n := sv.count(); n != 3 {
		t.Fatalf("%d streams, want 3", n)
	}
}

// A stream that ends before its first datagram is how a refused user
// shows: ReadFrom says so.
func TestRefused(t *testing.T) {
	pc := newConn(t, &server{refuse: true}, false)
	if _, err := pc.WriteTo([]byte("x"), flow.NameAddr("a.example", 53)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pc.ReadFrom(make([]byte, 10)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadFrom after a refused stream: %v", err)
	}
}

func TestDeadlinesAndClose(t *testing.T) {
	sv := &server{}
	pc := newConn(t, sv, false)
	pc.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := pc.WriteTo([]byte("x"), flow.NameAddr("later.example", 53)); err == nil {
		t.Fatal("a write past the deadline went out on a stream dialed after it was set")
	}
	pc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := pc.ReadFrom(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadFrom past its deadline: %v", err)
	}
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.WriteTo([]byte("x"), flow.NameAddr("a.example", 53)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteTo after Close: %v", err)
	}
	if _, _, err := pc.ReadFrom(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadFrom after Close: %v", err)
	}
}
