package h2

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/nettest"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// noLeak fails the test if goroutines started during it outlive it; call
// it first so that its cleanup runs after the others.
func noLeak(t testing.TB) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// realServer serves h on loopback with golang.org/x/net/http2's server,
// prior knowledge (the client does not care what is under it); accepted
// counts the connections.
func realServer(t testing.TB, srv *http2.Server, h http.Handler) (dial func(context.Context) (net.Conn, error), accepted *atomic.Int32) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int32)
	nettest.Serve(t, ln, func(c net.Conn) {
		accepted.Add(1)
		srv.ServeConn(c, &http2.ServeConnOpts{Handler: h})
	})
	addr := ln.Addr().String()
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}, accepted
}

// echo answers 200 and sends the request body back.
func echo(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			w.(http.Flusher).Flush()
		}
		if err != nil {
			return
		}
	}
}

func closeWrite(c net.Conn) error { return c.(interface{ CloseWrite() error }).CloseWrite() }

// TestConcurrentStreams: many streams at once on one connection, each
// echoing its own bytes.
func TestConcurrentStreams(t *testing.T) {
	noLeak(t)
	for _, tc := range []struct {
		streams, size int
	}{{1, 1 << 20}, {16, 256 << 10}, {64, 64 << 10}, {100, 1000}} {
		t.Run(fmt.Sprint(tc.streams), func(t *testing.T) {
			dial, accepted := realServer(t, &http2.Server{}, http.HandlerFunc(echo))
			c, _ := New(Config{Host: "h2.test"}, dial)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs := make(chan error, tc.streams)
			for range tc.streams {
				go func() {
					errs <- func() error {
						conn, err := c.Dial(ctx)
						if err != nil {
							return err
						}
						defer conn.Close()
						data := make([]byte, tc.size)
						rand.Read(data)
						go func() {
							conn.Write(data)
							closeWrite(conn)
						}()
						got, err := io.ReadAll(conn)
						if err != nil {
							return err
						}
						if !bytes.Equal(got, data) {
							return fmt.Errorf("echo: %d bytes differ from the %d sent", len(got), len(data))
						}
						return nil
					}()
				}()
			}
			for range tc.streams {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			if n := accepted.Load(); n != 1 {
				t.Errorf("%d connections, want 1", n)
			}
		})
	}
}

// TestRequestFields: what each request says, as the server sees it.
func TestRequestFields(t *testing.T) {
	noLeak(t)
	type seen struct {
		method, host, path, header string
	}
	got := make(chan seen, 1)
	dial, _ := realServer(t, &http2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.Host, r.URL.Path, r.Header.Get("X-Skiff")}
		w.WriteHeader(http.StatusOK)
	}))
	for _, tc := range []struct {
		cfg  Config
		want seen
	}{
		{Config{Host: "a.test"}, seen{"PUT", "a.test", "/", ""}},
		{Config{Host: "b.test", Path: "ray"}, seen{"PUT", "b.test", "/ray", ""}},
		{Config{Host: "c.test:8443", Path: "/x/y", Method: "POST"}, seen{"POST", "c.test:8443", "/x/y", ""}},
		{Config{Host: "d.test", Method: "GET", Headers: map[string]string{"X-Skiff": "yes"}}, seen{"GET", "d.test", "/", "yes"}},
		{Config{Host: "e.test", Headers: map[string]string{"x-skiff": "lower"}}, seen{"PUT", "e.test", "/", "lower"}},
		// x/net's server refuses a request with connection-specific fields.
		{Config{Host: "f.test", Headers: map[string]string{"Host": "other.test", "Connection": "keep-alive", "Upgrade": "h2c", "X-Skiff": "1"}}, seen{"PUT", "f.test", "/", "1"}},
	} {
		c, _ := New(tc.cfg, dial)
		conn, err := c.Dial(context.Background())
		if err != nil {
			t.Fatalf("%+v: %v", tc.cfg, err)
		}
		if s := <-got; s != tc.want {
			t.Errorf("%+v: server saw %+v, want %+v", tc.cfg, s, tc.want)
		}
		conn.Close()
		c.Close()
	}
}

// TestStatus: an answer other than 200 is a *StatusError with it.
func TestStatus(t *testing.T) {
	noLeak(t)
	for _, status := range []int{301, 400, 403, 404, 500, 502} {
		dial, _ := realServer(t, &http2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
		}))
		c, _ := New(Config{Host: "h2.test", Path: "/p"}, dial)
		_, err := c.Dial(context.Background())
		var se *StatusError
		if !errors.As(err, &se) || se.Status != status || se.Target != "h2.test/p" {
			t.Errorf("server answering %d: %v", status, err)
		}
		c.Close()
	}
}

// TestStreamLimit: with the server's MAX_CONCURRENT_STREAMS at 2, five
// streams open at once use three connections, no more than 2 on each.
func TestStreamLimit(t *testing.T) {
	noLeak(t)
	var mu sync.Mutex
	open := map[string]int{}
	most := 0
	dial, accepted := realServer(t, &http2.Server{MaxConcurrentStreams: 2}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		open[r.RemoteAddr]++
		most = max(most, open[r.RemoteAddr])
		mu.Unlock()
		defer func() {
			mu.Lock()
			open[r.RemoteAddr]--
			mu.Unlock()
		}()
		echo(w, r)
	}))
	c, _ := New(Config{Host: "h2.test"}, dial)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	conns := make([]net.Conn, 5)
	errs := make([]error, 5)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = c.Dial(ctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	for _, conn := range conns {
		conn.Write([]byte("x"))
		b := make([]byte, 1)
		if _, err := io.ReadFull(conn, b); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	m := most
	mu.Unlock()
	if m > 2 {
		t.Errorf("%d streams open on one connection, the server allows 2", m)
	}
	if n := accepted.Load(); n != 3 {
		t.Errorf("%d connections, want 3", n)
	}
	for _, conn := range conns {
		conn.Close()
	}
}

// TestSlowReader: a 16 MiB answer read slowly arrives whole, and the
// client never holds more of it than one stream window.
func TestSlowReader(t *testing.T) {
	noLeak(t)
	const size = 16 << 20
	pattern := func(i int) byte { return byte(i*7 + i>>11) }
	dial, _ := realServer(t, &http2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		buf := make([]byte, 64<<10)
		for off := 0; off < size; off += len(buf) {
			for i := range buf {
				buf[i] = pattern(off + i)
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	c, _ := New(Config{Host: "h2.test"}, dial)
	defer c.Close()
	conn, err := c.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s := conn.(*stream)
	want := sha256.New()
	for i := range size {
		want.Write([]byte{pattern(i)})
	}
	got := sha256.New()
	buf := make([]byte, 48<<10)
	total := 0
	for reads := 0; ; reads++ {
		if reads < 20 {
			time.Sleep(10 * time.Millisecond) // let the server fill the window
		}
		s.mu.Lock()
		held := s.buf.n
		s.mu.Unlock()
		if held > maxStreamWindow {
			t.Fatalf("holding %d unread bytes, more than a stream window", held)
		}
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", total, err)
		}
	}
	if total != size || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("got %d bytes (hash equal: %v), want %d", total, bytes.Equal(got.Sum(nil), want.Sum(nil)), size)
	}
}

// TestReadDeadline: a Read blocked when the deadline passes returns
// os.ErrDeadlineExceeded; a later deadline makes the stream usable again.
func TestReadDeadline(t *testing.T) {
	noLeak(t)
	dial, _ := realServer(t, &http2.Server{}, http.HandlerFunc(echo))
	c, _ := New(Config{Host: "h2.test"}, dial)
	defer c.Close()
	conn, err := c.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	buf := make([]byte, 10)
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		send     bool
		want     error
	}{
		{"past", -time.Second, false, os.ErrDeadlineExceeded},
		{"during a read", 50 * time.Millisecond, false, os.ErrDeadlineExceeded},
		{"later, with data", time.Second, true, nil},
		{"none, with data", 0, true, nil},
	} {
		if tc.deadline != 0 {
			conn.SetReadDeadline(time.Now().Add(tc.deadline))
		} else {
			conn.SetReadDeadline(time.Time{})
		}
		if tc.send {
			conn.Write([]byte("hi"))
		}
		start := time.Now()
		_, err := conn.Read(buf)
		if !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if el := time.Since(start); el > max(tc.deadline, 0)+time.Second {
			t.Errorf("%s: read took %v", tc.name, el)
		}
	}
}

// fakeConn is the server end of a connection to a hand-written server:
// frames are read by a goroutine into in (pings answered if pong), and
// the test writes frames with fr.
type fakeConn struct {
	nc   net.Conn
	wmu  sync.Mutex
	fr   *http2.Framer
	henc *hpack.Encoder
	hbuf bytes.Buffer
	in   chan http2.Frame // a copy of what matters: see readFrames
	pong bool
	done chan struct{}
}

// event is a frame the client sent, copied out of the framer's buffer.
type event struct {
	http2.FrameHeader
	fields []hpack.HeaderField
	ping   bool
}

// fakeServer returns a dial whose connections go to serve, one goroutine
// each, after the preface and the server's settings.
func fakeServer(t testing.TB, pong bool, settings []http2.Setting, serve func(f *fakeConn, events <-chan event)) (dial func(context.Context) (net.Conn, error), accepted *atomic.Int32) {
	accepted = new(atomic.Int32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ends []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range ends {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return func(ctx context.Context) (net.Conn, error) {
		cc, sc := net.Pipe()
		accepted.Add(1)
		mu.Lock()
		ends = append(ends, sc)
		mu.Unlock()
		f := &fakeConn{nc: sc, fr: http2.NewFramer(sc, nil), pong: pong, done: make(chan struct{})}
		f.henc = hpack.NewEncoder(&f.hbuf)
		events := make(chan event, 1024)
		wg.Add(2)
		go func() {
			defer wg.Done()
			defer close(events)
			f.readFrames(events)
		}()
		go func() {
			defer wg.Done()
			defer sc.Close()
			f.write(func() error { return f.fr.WriteSettings(settings...) })
			serve(f, events)
		}()
		return cc, nil
	}, accepted
}

func (f *fakeConn) readFrames(events chan<- event) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(f.nc, preface); err != nil {
		return
	}
	fr := http2.NewFramer(nil, f.nc)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	for {
		fm, err := fr.ReadFrame()
		if err != nil {
			return
		}
		ev := event{FrameHeader: fm.Header()}
		switch fm := fm.(type) {
		case *http2.MetaHeadersFrame:
			ev.fields = fm.Fields
		case *http2.PingFrame:
			if fm.IsAck() {
				continue
			}
			ev.ping = true
			if f.pong {
				f.write(func() error { return f.fr.WritePing(true, fm.Data) })
			}
		}
		select {
		case events <- ev:
		default: // nobody looks: drop
		}
	}
}

func (f *fakeConn) write(fn func() error) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return fn()
}

func (f *fakeConn) headers(id uint32, end bool, kv ...string) error {
	return f.write(func() error {
		f.hbuf.Reset()
		for i := 0; i+1 < len(kv); i += 2 {
			f.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: f.hbuf.Bytes(), EndHeaders: true, EndStream: end})
	})
}

// request waits for the client's next HEADERS and answers it with 200.
func (f *fakeConn) request(events <-chan event) (uint32, bool) {
	for ev := range events {
		if ev.Type == http2.FrameHeaders {
			return ev.StreamID, f.headers(ev.StreamID, false, ":status", "200") == nil
		}
	}
	return 0, false
}

// waitClosed waits until the client closes the connection (or the test ends).
func waitClosed(events <-chan event) {
	for range events {
	}
}

// TestGoAway: after GOAWAY the stream it let through finishes, and new
// streams go to a new connection.
func TestGoAway(t *testing.T) {
	noLeak(t)
	finish := make(chan struct{})
	var served atomic.Int32
	dial, accepted := fakeServer(t, true, nil, func(f *fakeConn, events <-chan event) {
		first := served.Add(1) == 1
		id, ok := f.request(events)
		if !ok {
			return
		}
		if first {
			f.write(func() error { return f.fr.WriteGoAway(id, http2.ErrCodeNo, nil) })
			<-finish
			f.write(func() error { return f.fr.WriteData(id, true, []byte("old")) })
		} else {
			f.write(func() error { return f.fr.WriteData(id, true, []byte("new")) })
		}
		waitClosed(events)
	})
	c, _ := New(Config{Host: "h2.test"}, dial)
	defer c.Close()
	old, err := c.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	// The GOAWAY comes right after the 200; give it time to be read.
	deadline := time.Now().Add(2 * time.Second)
	for {
		c.mu.Lock()
		n := len(c.conns)
		c.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("GOAWAY did not retire the connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fresh, err := c.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if n := accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	close(finish)
	for _, tc := range []struct {
		conn net.Conn
		want string
	}{{old, "old"}, {fresh, "new"}} {
		got, err := io.ReadAll(tc.conn)
		if err != nil || string(got) != tc.want {
			t.Errorf("read %q, %v; want %q", got, err, tc.want)
		}
	}
}

// TestMisbehavingServer: frames a server must not send end the stream or
// the connection with an error: no panic, no hang, no goroutine left.
func TestMisbehavingServer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		send     func(f *fakeConn, id uint32) error
		connDies bool
		want     string
	}{
		{"reset", func(f *fakeConn, id uint32) error { return f.fr.WriteRSTStream(id, http2.ErrCodeInternal) }, false, "reset by the server"},
		{"data on an unopened stream", func(f *fakeConn, id uint32) error { return f.fr.WriteData(id+2, false, []byte("x")) }, true, "unopened"},
		{"data on an even stream", func(f *fakeConn, id uint32) error { return f.fr.WriteData(2, false, []byte("x")) }, true, "unopened"},
		{"headers on an unopened stream", func(f *fakeConn, id uint32) error {
			f.hbuf.Reset()
			f.henc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			return f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id + 10, BlockFragment: f.hbuf.Bytes(), EndHeaders: true})
		}, true, "unopened"},
		{"stream window overflow", func(f *fakeConn, id uint32) error {
			chunk := make([]byte, 16384)
			for range 80 { // 1.25 MiB: more than any stream window
				if err := f.fr.WriteData(id, false, chunk); err != nil {
					return err
				}
			}
			return nil
		}, false, "overflowed the stream window"},
		{"send window overflow", func(f *fakeConn, id uint32) error { return f.fr.WriteWindowUpdate(0, math31) }, true, "overflowed our connection send window"},
		{"push promise", func(f *fakeConn, id uint32) error {
			return f.fr.WritePushPromise(http2.PushPromiseParam{StreamID: id, PromiseID: 2, BlockFragment: []byte{0x88}, EndHeaders: true})
		}, true, "PUSH_PROMISE"},
		{"bad settings length", func(f *fakeConn, id uint32) error {
			return f.fr.WriteRawFrame(http2.FrameSettings, 0, 0, []byte{1, 2, 3})
		}, true, "reading"},
		{"bad window size setting", func(f *fakeConn, id uint32) error {
			return f.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
		}, true, "reading"},
		{"data on stream 0", func(f *fakeConn, id uint32) error { return f.fr.WriteRawFrame(http2.FrameData, 0, 0, []byte("x")) }, true, "reading"},
		{"garbage", func(f *fakeConn, id uint32) error {
			_, err := f.nc.Write(bytes.Repeat([]byte{0xff}, 64))
			return err
		}, true, ""},
		{"eof", func(f *fakeConn, id uint32) error { return f.nc.Close() }, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			sent := make(chan struct{})
			dial, _ := fakeServer(t, true, nil, func(f *fakeConn, events <-chan event) {
				id, ok := f.request(events)
				if !ok {
					return
				}
				f.write(func() error { return tc.send(f, id) })
				close(sent)
				waitClosed(events)
			})
			c, _ := New(Config{Host: "h2.test"}, dial)
			defer c.Close()
			conn, err := c.Dial(context.Background())
			if err != nil {
				// The stream may fail before Dial saw its 200.
				if strings.Contains(err.Error(), tc.want) {
					return
				}
				t.Fatal(err)
			}
			defer conn.Close()
			<-sent // all sent before reading: the stream window fills
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.ReadAll(conn)
			if err == nil || errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("read: %v, want an error with %q", err, tc.want)
			}
			c.mu.Lock()
			n := len(c.conns)
			c.mu.Unlock()
			if tc.connDies && n != 0 {
				t.Errorf("%d connections left, want the broken one gone", n)
			}
			if !tc.connDies && n != 1 {
				t.Errorf("%d connections left, want the one", n)
			}
		})
	}
}

const math31 = 1<<31 - 1

// TestKeepalive: a server that stops answering is found out by the
// keepalive ping; one that answers keeps its idle streams.
func TestKeepalive(t *testing.T) {
	for _, tc := range []struct {
		name string
		pong bool
	}{{"dead server", false}, {"live server", true}} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			dial, _ := fakeServer(t, tc.pong, nil, func(f *fakeConn, events <-chan event) {
				if _, ok := f.request(events); ok {
					waitClosed(events)
				}
			})
			c, _ := New(Config{Host: "h2.test"}, dial)
			c.idle, c.ping = 30*time.Millisecond, 30*time.Millisecond
			defer c.Close()
			conn, err := c.Dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			_, err = conn.Read(make([]byte, 1))
			if tc.pong && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("read: %v, want the deadline", err)
			}
			if !tc.pong && (err == nil || !strings.Contains(err.Error(), "keepalive")) {
				t.Errorf("read: %v, want the keepalive's error", err)
			}
		})
	}
}

// TestDialCancel: Dial returns soon after its context ends, wherever it
// waits.
func TestDialCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(ctx context.Context) (net.Conn, error)
	}{
		{"dialling", func(ctx context.Context) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		{"no response", nil}, // a server that never answers the request
		{"server not reading", func(ctx context.Context) (net.Conn, error) {
			cc, sc := net.Pipe()
			context.AfterFunc(ctx, func() { time.Sleep(time.Second); sc.Close() }) // bounds the test
			return cc, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noLeak(t)
			dial := tc.dial
			if dial == nil {
				dial, _ = fakeServer(t, true, nil, func(f *fakeConn, events <-chan event) { waitClosed(events) })
			}
			c, _ := New(Config{Host: "h2.test"}, dial)
			defer c.Close()
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			_, err := c.Dial(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("dial: %v, want context.Canceled", err)
			}
			if el := time.Since(start); el > 500*time.Millisecond {
				t.Errorf("dial returned %v after the start, 50 ms after which it was cancelled", el)
			}
		})
	}
}

// TestKeepaliveBlockedWrite: a server that stops reading and sending while
// a Write is stuck in its full buffer is still found out by the keepalive,
// whose ping cannot be written.
func TestKeepaliveBlockedWrite(t *testing.T) {
	noLeak(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); wg.Wait() })
	dial := func(context.Context) (net.Conn, error) {
		cc, sc := net.Pipe()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sc.Close()
			if _, err := io.ReadFull(sc, make([]byte, len(http2.ClientPreface))); err != nil {
				return
			}
			fr := http2.NewFramer(sc, sc)
			fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
			var id uint32
			var wmu sync.Mutex
			// Our writes go in goroutines: on a pipe, the client's reader
			// may be writing to us while we write to it.
			send := func(f func() error) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					wmu.Lock()
					defer wmu.Unlock()
					f()
				}()
			}
			var acked, updated bool
			for !acked || !updated { // read up to the stream's WINDOW_UPDATE and our SETTINGS' ACK, answer, then stall
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				switch f := f.(type) {
				case *http2.SettingsFrame:
					if !f.IsAck() {
						send(func() error { return fr.WriteSettings() })
					}
					acked = acked || f.IsAck()
				case *http2.PingFrame:
					if !f.IsAck() {
						data := f.Data
						send(func() error { return fr.WritePing(true, data) })
					}
				case *http2.MetaHeadersFrame:
					id = f.StreamID
				}
				updated = updated || f.Header().Type == http2.FrameWindowUpdate && id != 0 && f.Header().StreamID == id
			}
			var hb bytes.Buffer
			hpack.NewEncoder(&hb).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			send(func() error {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
			})
			<-stop
		}()
		return cc, nil
	}
	c, _ := New(Config{Host: "h2.test"}, dial)
	c.idle, c.ping = 50*time.Millisecond, 50*time.Millisecond
	defer c.Close()
	conn, err := c.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wrote := make(chan error, 1)
	go func() {
		_, err := conn.Write(make([]byte, 1<<20))
		wrote <- err
	}()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "keepalive") {
		t.Errorf("read: %v, want the keepalive's error", err)
	}
	if err := <-wrote; err == nil {
		t.Error("write to a dead server succeeded")
	}
}
