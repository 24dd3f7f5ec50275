package ws

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"

	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// seen is what the test server saw of one upgrade request.
type seen struct {
	host, path, ua string
	early          []byte // decoded early data
	edErr          error
}

// server is a real WebSocket server (gobwas/ws server side) that echoes
// every data message. With edHeader set it decodes early data from that
// header and sends it back first, as a proxy server would process it.
type server struct {
	t        *testing.T
	path     string
	edHeader string
	echoProt bool // answer with the requested subprotocol, as Xray does
	onConn   func(net.Conn)
	secure   bool // serve over TLS; the client dials through tlsconf.Conn

	mu   sync.Mutex
	reqs []seen
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.path {
		http.NotFound(w, r)
		return
	}
	sn := seen{host: r.Host, path: r.URL.RequestURI(), ua: r.Header.Get("User-Agent")}
	if s.edHeader != "" {
		if v := r.Header.Get(s.edHeader); v != "" {
			sn.early, sn.edErr = base64.RawURLEncoding.DecodeString(v)
		}
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, sn)
	s.mu.Unlock()
	u := ws.HTTPUpgrader{Protocol: func(string) bool { return s.echoProt }}
	conn, _, _, err := u.Upgrade(r, w)
	if err != nil {
		s.t.Errorf("server upgrade: %v", err)
		return
	}
	defer conn.Close()
	if s.onConn != nil {
		s.onConn(conn)
		return
	}
	if len(sn.early) > 0 {
		if err := wsutil.WriteServerBinary(conn, sn.early); err != nil {
			return
		}
	}
	for {
		msg, op, err := wsutil.ReadClientData(conn)
		if err != nil {
			return
		}
		if err := wsutil.WriteServerMessage(conn, op, msg); err != nil {
			return
		}
	}
}

func (s *server) start(t *testing.T) string {
	var ts *httptest.Server
	if s.secure {
		ts = httptest.NewUnstartedServer(s)
		ts.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS errors of torn-down test conns
		ts.StartTLS()
	} else {
		ts = httptest.NewServer(s)
	}
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(strings.TrimPrefix(ts.URL, "http://"), "https://")
}

// forEachTransport runs f over plain TCP and over TLS (tlsconf.Conn, the
// transport that can TryRead).
func forEachTransport(t *testing.T, f func(t *testing.T, secure bool)) {
	for _, secure := range []bool{false, true} {
		name := "tcp"
		if secure {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) { f(t, secure) })
	}
}

func (s *server) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

func (s *server) dial(t *testing.T, addr string, cfg Config) *Conn {
	t.Helper()
	var raw net.Conn
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if s.secure {
		tc := tlsconf.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		raw = tc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Client(ctx, raw, cfg)
	if err != nil {
		raw.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

func TestEcho(t *testing.T) {
	forEachTransport(t, func(t *testing.T, secure bool) {
		s := &server{t: t, secure: secure, path: "/tunnel"}
		addr := s.start(t)
		c := s.dial(t, addr, Config{Host: "example.com", Path: "/tunnel?x=1", Headers: map[string]string{"User-Agent": "skiff-test", "host": "ignored"}})
		for _, n := range []int{1, 125, 126, 65535, 65536, writeChunk + 1, 300 << 10} {
			msg := pattern(n)
			if _, err := c.Write(msg); err != nil {
				t.Fatalf("write %d: %v", n, err)
			}
			got := make([]byte, n)
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatalf("read %d: %v", n, err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatalf("echo of %d bytes differs", n)
			}
		}
		r := s.requests()
		if len(r) != 1 || r[0].host != "example.com" || r[0].path != "/tunnel?x=1" || r[0].ua != "skiff-test" {
			t.Fatalf("server saw %+v", r)
		}
	})
}

func TestEarlyData(t *testing.T) {
	tests := []struct {
		name     string
		header   string // Config.EarlyDataHeader
		srvHdr   string // where the server looks
		echoProt bool
		max      int
		first    int // size of the first write
	}{
		{"protocol header, echoed", "", "Sec-WebSocket-Protocol", true, 2048, 100},
		{"protocol header, not echoed", "", "Sec-WebSocket-Protocol", false, 2048, 100},
		{"protocol header named", "Sec-WebSocket-Protocol", "Sec-WebSocket-Protocol", false, 2048, 2048},
		{"first write longer than max", "", "Sec-WebSocket-Protocol", true, 64, 1000},
		{"custom header", "X-Early", "X-Early", false, 2560, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{t: t, path: "/ws", edHeader: tt.srvHdr, echoProt: tt.echoProt}
			addr := s.start(t)
			c := s.dial(t, addr, Config{Host: addr, Path: "/ws", MaxEarlyData: tt.max, EarlyDataHeader: tt.header})
			if len(s.requests()) != 0 {
				t.Fatal("upgrade before the first write")
			}
			msg := pattern(tt.first)
			if n, err := c.Write(msg); err != nil || n != len(msg) {
				t.Fatalf("write: %d, %v", n, err)
			}
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatalf("read: %v", err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatal("echo differs")
			}
			r := s.requests()
			if len(r) != 1 || r[0].edErr != nil {
				t.Fatalf("server saw %+v", r)
			}
			want := msg[:min(tt.max, len(msg))]
			if !bytes.Equal(r[0].early, want) {
				t.Fatalf("early data: got %d bytes, want %d", len(r[0].early), len(want))
			}
		})
	}
}

// A Read before any Write upgrades without early data.
func TestEarlyDataReadFirst(t *testing.T) {
	forEachTransport(t, func(t *testing.T, secure bool) {
		s := &server{t: t, secure: secure, path: "/", edHeader: "Sec-WebSocket-Protocol", onConn: func(c net.Conn) {
			wsutil.WriteServerBinary(c, []byte("banner"))
			io.Copy(io.Discard, c)
		}}
		addr := s.start(t)
		c := s.dial(t, addr, Config{Host: addr, MaxEarlyData: 2048})
		got := make([]byte, 6)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "banner" {
			t.Fatalf("read: %q, %v", got, err)
		}
		if r := s.requests(); len(r) != 1 || r[0].early != nil {
			t.Fatalf("server saw %+v", r)
		}
	})
}

func TestUpgradeErrors(t *testing.T) {
	s := &server{t: t, path: "/right"}
	addr := s.start(t)
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, err = Client(context.Background(), raw, Config{Host: "cdn.example", Path: "/wrong"})
	if err == nil || err.Error() != "ws: upgrade to cdn.example/wrong: server answered 404" {
		t.Fatalf("err = %v", err)
	}

	// Early data: the same error comes from the first Write, and stays.
	raw2, _ := net.Dial("tcp", addr)
	c, err := Client(context.Background(), raw2, Config{Host: "cdn.example", Path: "/wrong", MaxEarlyData: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "server answered 404") {
		t.Fatalf("write err = %v", err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "server answered 404") {
		t.Fatalf("read err = %v", err)
	}

	// A server that never answers: ctx bounds the upgrade.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	raw3, _ := net.Dial("tcp", ln.Addr().String())
	defer raw3.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Client(ctx, raw3, Config{Host: "h"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("silent server: err = %v", err)
	}
}

func TestControlFrames(t *testing.T) {
	forEachTransport(t, func(t *testing.T, secure bool) {
		pong := make(chan []byte, 1)
		s := &server{t: t, secure: secure, path: "/", onConn: func(c net.Conn) {
			ws.WriteFrame(c, ws.NewPingFrame([]byte("hi")))
			wsutil.WriteServerBinary(c, []byte("data"))
			f, err := ws.ReadFrame(c)
			if err == nil && f.Header.OpCode == ws.OpPong {
				pong <- ws.UnmaskFrame(f).Payload
			}
			ws.WriteFrame(c, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "bye")))
			ws.ReadFrame(c)
		}}
		addr := s.start(t)
		c := s.dial(t, addr, Config{Host: addr})
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "data" {
			t.Fatalf("read: %q, %v", got, err)
		}
		if p := <-pong; string(p) != "hi" {
			t.Fatalf("pong payload %q", p)
		}
		if _, err := c.Read(got); err != io.EOF {
			t.Fatalf("after close frame: %v", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after close frame: %v", err)
		}
	})
}

// TestWriteAllocs runs over plain TCP only: the test server shares the
// process, and over TLS its crypto/tls allocates per record read.
func TestWriteAllocs(t *testing.T) {
	s := &server{t: t, path: "/", onConn: func(c net.Conn) { io.Copy(io.Discard, c) }}
	addr := s.start(t)
	c := s.dial(t, addr, Config{Host: addr})
	msg := pattern(40 << 10)
	c.Write(msg)
	if n := testing.AllocsPerRun(100, func() { c.Write(msg) }); n != 0 {
		t.Fatalf("%v allocs per write", n)
	}
	b := make([]byte, c.FrontHeadroom()+len(msg))
	if n := testing.AllocsPerRun(100, func() { c.WriteFrame(b) }); n != 0 {
		t.Fatalf("%v allocs per WriteFrame", n)
	}
}

func TestReadAllocs(t *testing.T) {
	var blob bytes.Buffer
	for range 64 {
		ws.WriteFrame(&blob, ws.NewBinaryFrame(pattern(1400)))
	}
	s := &server{t: t, path: "/", onConn: func(c net.Conn) {
		for {
			if _, err := c.Write(blob.Bytes()); err != nil {
				return
			}
		}
	}}
	addr := s.start(t)
	c := s.dial(t, addr, Config{Host: addr})
	buf := make([]byte, 1400)
	io.ReadFull(c, buf)
	if n := testing.AllocsPerRun(1000, func() { io.ReadFull(c, buf) }); n != 0 {
		t.Fatalf("%v allocs per read", n)
	}
}

// TestReadAcrossFrames checks that one Read goes on across frames that are
// already buffered (small frames, a ping between them, a masked frame,
// empty frames) and that the payload comes out in order and complete.
func TestReadAcrossFrames(t *testing.T) {
	forEachTransport(t, func(t *testing.T, secure bool) {
		data := pattern(64 * 1400)
		var blob bytes.Buffer
		for i := 0; i < 64; i++ {
			part := data[i*1400 : (i+1)*1400]
			switch i {
			case 10:
				ws.WriteFrame(&blob, ws.NewPingFrame([]byte("p")))
			case 20:
				ws.WriteFrame(&blob, ws.NewBinaryFrame(nil))
			case 30:
				f := ws.NewBinaryFrame(append([]byte(nil), part...))
				f.Header.Masked, f.Header.Mask = true, [4]byte{1, 2, 3, 4}
				ws.WriteFrame(&blob, ws.MaskFrameInPlace(f))
				continue
			}
			ws.WriteFrame(&blob, ws.NewBinaryFrame(part))
		}
		ws.WriteFrame(&blob, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "")))
		s := &server{t: t, secure: secure, path: "/", onConn: func(c net.Conn) {
			c.Write(blob.Bytes())
			io.Copy(io.Discard, c)
		}}
		addr := s.start(t)
		c := s.dial(t, addr, Config{Host: addr})
		var got []byte
		largest := 0
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			largest = max(largest, n)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read after %d bytes: %v", len(got), err)
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("payload differs: got %d bytes, want %d", len(got), len(data))
		}
		if largest <= 1400 {
			t.Fatalf("largest read %d bytes: reads did not go across buffered frames", largest)
		}
	})
}

// TestReadDoesNotWait checks that Read returns what has arrived instead of
// waiting to fill p: the rest of a frame, or the header of the next one,
// may come only after the client answers.
func TestReadDoesNotWait(t *testing.T) {
	frame := func(payload []byte) []byte {
		var b bytes.Buffer
		ws.WriteFrame(&b, ws.NewBinaryFrame(payload))
		return b.Bytes()
	}
	first, second := frame(pattern(200)), frame([]byte("def"))
	tests := []struct {
		name        string
		before      []byte // sent before the client's answer
		after       []byte // sent after it
		want1, want []byte // the first Read's bytes; all payload
	}{
		{"frame split", first[:4+100], first[4+100:], pattern(200)[:100], pattern(200)},
		{"next header split", append(frame([]byte("abc")), second[0]), second[1:], []byte("abc"), []byte("abcdef")},
		{"ping then part", append(mustFrame(ws.NewPingFrame([]byte("p"))), first[:50]...), first[50:],
			pattern(200)[:50-4], pattern(200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachTransport(t, func(t *testing.T, secure bool) {
				s := &server{t: t, secure: secure, path: "/", onConn: func(c net.Conn) {
					c.Write(tt.before)
					for {
						_, op, err := wsutil.ReadClientData(c)
						if err != nil {
							return
						}
						if op == ws.OpBinary {
							break
						}
					}
					c.Write(tt.after)
					io.Copy(io.Discard, c)
				}}
				addr := s.start(t)
				c := s.dial(t, addr, Config{Host: addr})
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 64<<10)
				n, err := c.Read(buf)
				if err != nil || !bytes.Equal(buf[:n], tt.want1) {
					t.Fatalf("first Read: %d bytes, %v; want the %d bytes that arrived", n, err, len(tt.want1))
				}
				if _, err := c.Write([]byte("go")); err != nil {
					t.Fatal(err)
				}
				got := append([]byte(nil), buf[:n]...)
				for len(got) < len(tt.want) {
					n, err := c.Read(buf)
					if err != nil {
						t.Fatalf("Read after %d bytes: %v", len(got), err)
					}
					got = append(got, buf[:n]...)
				}
				if !bytes.Equal(got, tt.want) {
					t.Fatalf("payload %q, want %q", got, tt.want)
				}
			})
		})
	}
}

func mustFrame(f ws.Frame) []byte {
	var b bytes.Buffer
	ws.WriteFrame(&b, f)
	return b.Bytes()
}

// TestReadAcrossRecords checks that over TLS one Read goes on across
// records that have arrived: a server writing frames of 10 KB, each in its
// own record, is read in chunks larger than one record.
func TestReadAcrossRecords(t *testing.T) {
	data := pattern(600 << 10)
	wrote := make(chan struct{})
	s := &server{t: t, secure: true, path: "/", onConn: func(c net.Conn) {
		for p := data; len(p) > 0; {
			n := min(len(p), 10000)
			if err := wsutil.WriteServerBinary(c, p[:n]); err != nil {
				return
			}
			p = p[n:]
		}
		close(wrote)
		io.Copy(io.Discard, c)
	}}
	addr := s.start(t)
	c := s.dial(t, addr, Config{Host: addr})
	<-wrote // most of it is in the client's socket buffer now
	var got []byte
	largest := 0
	buf := make([]byte, 60<<10)
	for len(got) < len(data) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("Read after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
		largest = max(largest, n)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("payload differs")
	}
	if largest <= 16<<10 {
		t.Fatalf("largest Read %d bytes: reads did not go across TLS records", largest)
	}
}

// TestWriteFrame checks WriteFrame (the frame built in the caller's buffer)
// against the echo server for sizes around the header's length steps and
// past writeChunk (the usual way), also as the first write with early data.
func TestWriteFrame(t *testing.T) {
	forEachTransport(t, func(t *testing.T, secure bool) {
		for _, early := range []int{0, 2048} {
			s := &server{t: t, secure: secure, path: "/", edHeader: "Sec-WebSocket-Protocol"}
			addr := s.start(t)
			c := s.dial(t, addr, Config{Host: addr, MaxEarlyData: early})
			h := c.FrontHeadroom()
			for _, n := range []int{100, 1, 125, 126, 65535, 60 << 10, writeChunk + 1} {
				msg := pattern(n)
				b := make([]byte, h+n)
				copy(b[h:], msg)
				if w, err := c.WriteFrame(b); w != n || err != nil {
					t.Fatalf("early %d: WriteFrame of %d: %d, %v", early, n, w, err)
				}
				got := make([]byte, n)
				if _, err := io.ReadFull(c, got); err != nil {
					t.Fatalf("early %d: read %d: %v", early, n, err)
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("early %d: echo of %d bytes differs", early, n)
				}
			}
			if r := s.requests(); len(r) != 1 || (early > 0) != (len(r[0].early) > 0) {
				t.Fatalf("early %d: server saw %+v", early, r)
			}
		}
	})
}
