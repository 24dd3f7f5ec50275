// Package wsbench compares WebSocket client libraries for Skiff's ws
// transport: coder/websocket, gorilla/websocket and gobwas/ws, each driven
// as a byte stream (the way VLESS uses it) over a loopback TCP connection
// that the benchmark dials itself and hands to the library.
//
// The server side is the same for every client (gobwas/ws server upgrade,
// then either discarding the client's bytes or writing pre-built frames), so
// the figures measure the client: masking and framing on writes, parsing and
// control-frame handling on reads.
//
//	cd test && go test -run '^$' -bench . -benchmem ./wsbench/
package wsbench

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/gobwas/ws"
	gorilla "github.com/gorilla/websocket"

	skiffws "github.com/skiffvpn/skiff/core/transport/ws"
)

// serverMode says what the loopback server does after the upgrade.
type serverMode int

const (
	discard serverMode = iota // read and drop everything the client sends
	push                      // write binary frames of a fixed size forever
)

// startServer listens on loopback and serves one mode; frame is the payload
// size of the frames it pushes.
func startServer(tb testing.TB, mode serverMode, frame int) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	tb.Cleanup(func() { ln.Close(); wg.Wait() })
	// One pre-built frame, repeated: the server costs almost nothing.
	payload := make([]byte, frame)
	var hdr [ws.MaxHeaderSize]byte
	h := ws.Header{Fin: true, OpCode: ws.OpBinary, Length: int64(frame)}
	n := ws.HeaderSize(h)
	bw := &sliceWriter{b: hdr[:0]}
	_ = ws.WriteHeader(bw, h)
	var blob []byte
	for len(blob) < 256<<10 {
		blob = append(blob, bw.b[:n]...)
		blob = append(blob, payload...)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if _, err := ws.Upgrade(c); err != nil {
					return
				}
				switch mode {
				case discard:
					io.Copy(io.Discard, c)
				case push:
					for {
						if _, err := c.Write(blob); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// client is a WebSocket client as a byte stream.
type client interface {
	io.ReadWriteCloser
}

type dialFunc func(tb testing.TB, addr string) client

func dialTCP(tb testing.TB, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// coder/websocket: Dial with an http.Client whose transport returns the
// connection we dialed; websocket.NetConn gives the byte stream.
func dialCoder(tb testing.TB, addr string) client {
	raw := dialTCP(tb, addr)
	var once sync.Once
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			var c net.Conn
			once.Do(func() { c = raw })
			if c == nil {
				return nil, errors.New("second dial")
			}
			return c, nil
		},
	}}
	c, _, err := websocket.Dial(context.Background(), "ws://"+addr+"/", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		tb.Fatal(err)
	}
	c.SetReadLimit(-1)
	return websocket.NetConn(context.Background(), c, websocket.MessageBinary)
}

// gorilla/websocket: NewClient over our connection; a small adapter turns
// messages into a stream.
type gorillaConn struct {
	c *gorilla.Conn
	r io.Reader
}

func dialGorilla(tb testing.TB, addr string) client {
	raw := dialTCP(tb, addr)
	u, _ := url.Parse("ws://" + addr + "/")
	d := gorilla.Dialer{
		NetDialContext:  func(context.Context, string, string) (net.Conn, error) { return raw, nil },
		ReadBufferSize:  32 << 10,
		WriteBufferSize: 32 << 10,
	}
	c, _, err := d.Dial(u.String(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &gorillaConn{c: c}
}

func (g *gorillaConn) Read(p []byte) (int, error) {
	for {
		if g.r == nil {
			_, r, err := g.c.NextReader()
			if err != nil {
				return 0, err
			}
			g.r = r
		}
		n, err := g.r.Read(p)
		if err == io.EOF {
			g.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (g *gorillaConn) Write(p []byte) (int, error) {
	if err := g.c.WriteMessage(gorilla.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (g *gorillaConn) Close() error { return g.c.Close() }

// gobwas/ws: Dialer.Upgrade over our connection, then ws.ReadHeaderBuffer /
// ws.WriteHeaderBuffer / ws.Cipher with reused buffers (what the low-level
// API is for).
type gobwasConn struct {
	c      net.Conn
	br     *bufio.Reader
	left   int64
	hbuf   [ws.MaxHeaderSize]byte
	wbuf   []byte
	mask   [4]byte
	closed bool
}

func dialGobwas(tb testing.TB, addr string) client {
	raw := dialTCP(tb, addr)
	u, _ := url.Parse("ws://" + addr + "/")
	br, _, err := ws.Dialer{}.Upgrade(raw, u)
	if err != nil {
		tb.Fatal(err)
	}
	g := &gobwasConn{c: raw, br: bufio.NewReaderSize(raw, 32<<10), wbuf: make([]byte, 32<<10)}
	if br != nil {
		g.br = bufio.NewReaderSize(io.MultiReader(br, raw), 32<<10)
	}
	rand.Read(g.mask[:])
	return g
}

func (g *gobwasConn) Read(p []byte) (int, error) {
	for g.left == 0 {
		h, err := ws.ReadHeaderBuffer(g.br, g.hbuf[:])
		if err != nil {
			return 0, err
		}
		if h.OpCode.IsControl() {
			if _, err := g.br.Discard(int(h.Length)); err != nil {
				return 0, err
			}
			if h.OpCode == ws.OpClose {
				return 0, io.EOF
			}
			continue
		}
		g.left = h.Length
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, err := g.br.Read(p)
	g.left -= int64(n)
	return n, err
}

func (g *gobwasConn) Write(p []byte) (int, error) {
	h := ws.Header{Fin: true, OpCode: ws.OpBinary, Masked: true, Mask: g.mask, Length: int64(len(p))}
	hs := ws.HeaderSize(h)
	sw := sliceWriter{b: g.wbuf[:0]}
	if err := ws.WriteHeaderBuffer(&sw, h, g.hbuf[:]); err != nil {
		return 0, err
	}
	off, done := hs, 0
	for done < len(p) || off > 0 {
		n := copy(g.wbuf[off:], p[done:])
		ws.Cipher(g.wbuf[off:off+n], g.mask, done)
		if _, err := g.c.Write(g.wbuf[:off+n]); err != nil {
			return done, err
		}
		done += n
		off = 0
	}
	return len(p), nil
}

func (g *gobwasConn) Close() error { return g.c.Close() }

// skiff: the shipped layer, core/transport/ws (gobwas/ws underneath).
func dialSkiff(tb testing.TB, addr string) client {
	raw := dialTCP(tb, addr)
	c, err := skiffws.Client(context.Background(), raw, skiffws.Config{Host: addr, Path: "/"})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

var libs = []struct {
	name string
	dial dialFunc
}{
	{"coder", dialCoder},
	{"gorilla", dialGorilla},
	{"gobwas", dialGobwas},
	{"skiff", dialSkiff},
}

var sizes = []int{64, 1400, 32 << 10}

// BenchmarkWrite: client writes one message per op; the server discards.
func BenchmarkWrite(b *testing.B) {
	for _, l := range libs {
		for _, size := range sizes {
			b.Run(fmt.Sprintf("%s/%d", l.name, size), func(b *testing.B) {
				addr := startServer(b, discard, 0)
				c := l.dial(b, addr)
				// coder/websocket's Close waits for the close handshake:
				// keep it out of the timing.
				defer func() { b.StopTimer(); c.Close() }()
				msg := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := c.Write(msg); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRead: the server pushes messages of size bytes; the client reads
// them into a 32 KiB buffer, one message's worth per op.
func BenchmarkRead(b *testing.B) {
	for _, l := range libs {
		for _, size := range sizes {
			b.Run(fmt.Sprintf("%s/%d", l.name, size), func(b *testing.B) {
				addr := startServer(b, push, size)
				c := l.dial(b, addr)
				// coder/websocket's Close waits for the close handshake:
				// keep it out of the timing.
				defer func() { b.StopTimer(); c.Close() }()
				buf := make([]byte, 32<<10)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					want := size
					for want > 0 {
						n, err := c.Read(buf[:min(want, len(buf))])
						if err != nil {
							b.Fatal(err)
						}
						want -= n
					}
				}
			})
		}
	}
}

// TestEveryClientCarriesBytes checks the benchmark's set-up before any
// figure is trusted: every client, Skiff's included, upgrades over the
// connection it is handed, writes messages the server takes, and reads the
// server's frames back as a byte stream of the right length.
func TestEveryClientCarriesBytes(t *testing.T) {
	for _, l := range libs {
		t.Run(l.name, func(t *testing.T) {
			w := l.dial(t, startServer(t, discard, 0))
			defer w.Close()
			for _, size := range sizes {
				if n, err := w.Write(make([]byte, size)); err != nil || n != size {
					t.Fatalf("write %d: %d, %v", size, n, err)
				}
			}
			r := l.dial(t, startServer(t, push, 1400))
			defer r.Close()
			got, err := io.ReadFull(r, make([]byte, 10*1400+700))
			if err != nil || got != 10*1400+700 {
				t.Fatalf("read %d bytes, %v", got, err)
			}
		})
	}
}
