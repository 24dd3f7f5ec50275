package harness

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TCPServer accepts connections on loopback and hands each to a handler in a
// goroutine of its own; Close stops accepting, closes every connection and
// waits for the handlers.
type TCPServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// ServeTCP listens on a free loopback port and runs handle for each
// connection. The handler need not close the connection.
func ServeTCP(handle func(net.Conn)) (*TCPServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &TCPServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				handle(c)
				c.Close()
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}()
		}
	}()
	return s, nil
}

// Addr returns the listening address ("127.0.0.1:port").
func (s *TCPServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server and waits for its handlers.
func (s *TCPServer) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// EchoTCP writes back everything it reads.
func EchoTCP(c net.Conn) {
	buf := make([]byte, 64<<10)
	io.CopyBuffer(c, c, buf)
}

// TCPEcho starts a TCP echo server for t and returns its address.
func TCPEcho(t testing.TB) string {
	t.Helper()
	s, err := ServeTCP(EchoTCP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr()
}

// UDPServer echoes every datagram back to its sender.
type UDPServer struct {
	pc   net.PacketConn
	done chan struct{}
}

// ServeUDPEcho starts a UDP echo server on a free loopback port.
func ServeUDPEcho() (*UDPServer, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &UDPServer{pc: pc, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
	return s, nil
}

// Addr returns the listening address.
func (s *UDPServer) Addr() string { return s.pc.LocalAddr().String() }

// Close stops the server.
func (s *UDPServer) Close() error {
	err := s.pc.Close()
	<-s.done
	return err
}

// UDPEcho starts a UDP echo server for t and returns its address.
func UDPEcho(t testing.TB) string {
	t.Helper()
	s, err := ServeUDPEcho()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr()
}

// HTTPBody is what the test HTTP server answers on every path.
const HTTPBody = "hello from the skiff test origin\n"

// HTTPOrigin starts an HTTP server for t that answers HTTPBody with the
// request path in the X-Path header, and returns its address.
func HTTPOrigin(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Path", r.URL.Path)
			io.WriteString(w, HTTPBody)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("http origin: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// Sink/source protocol: the client sends one command byte.
const (
	// SinkDownload asks the server to send data until the client closes.
	SinkDownload byte = 'D'
	// SinkUpload asks the server to read and discard until EOF.
	SinkUpload byte = 'U'
)

// SinkSource serves the benchmark's data: after the command byte it either
// streams from a fixed random buffer (SinkDownload) or discards what it reads
// (SinkUpload).
func SinkSource(c net.Conn) {
	var cmd [1]byte
	if _, err := io.ReadFull(c, cmd[:]); err != nil {
		return
	}
	switch cmd[0] {
	case SinkDownload:
		go func() {
			// Notice the client closing (it never sends more).
			io.Copy(io.Discard, c)
			c.Close()
		}()
		buf := randomBlock()
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	case SinkUpload:
		buf := make([]byte, 256<<10)
		io.CopyBuffer(io.Discard, c, buf)
	}
}

var randomBlock = sync.OnceValue(func() []byte {
	b := make([]byte, 256<<10)
	// Incompressible but cheap: a xorshift stream, not crypto.
	x := uint64(0x9E3779B97F4A7C15)
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for j := 0; j < 8; j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	return b
})
