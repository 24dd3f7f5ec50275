package h2

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/nettest"
	"golang.org/x/net/http2"
)

// server is an HTTP/2 server that echoes a request's body in its response
// on path /h2 (as V2Ray's http transport server relays), after the 200.
func server(t *testing.T) (addr string, dial func(ctx context.Context) (net.Conn, error)) {
	cert, _ := nettest.SelfSigned(t, "h2.test")
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/h2" || r.Method != http.MethodPut || r.Host != "h2.test" || r.Header.Get("X-Test") != "1" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
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
				w.Write([]byte("<eof>"))
				return
			}
		}
	}))
	ts.EnableHTTP2 = true
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	addr = ts.Listener.Addr().String()
	return addr, func(ctx context.Context) (net.Conn, error) {
		var d tls.Dialer
		d.Config = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}
		return d.DialContext(ctx, "tcp", addr)
	}
}

func TestStreams(t *testing.T) {
	_, dial := server(t)
	c, err := New(Config{Host: "h2.test", Path: "h2", Headers: map[string]string{"X-Test": "1"}}, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Two streams at once, on one connection; each echoes its own bytes.
	for range 2 {
		conn, err := c.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		data := make([]byte, 256<<10)
		rand.Read(data)
		go func() {
			conn.Write(data)
			conn.(interface{ CloseWrite() error }).CloseWrite()
		}()
		got, err := io.ReadAll(conn)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append(data, "<eof>"...)) {
			t.Fatalf("echo: %d bytes, want %d and the half-close", len(got), len(data)+5)
		}
	}
	cancel() // the dial context ending does not end open streams
}

func TestDeadlineAndErrors(t *testing.T) {
	_, dial := server(t)
	c, _ := New(Config{Host: "h2.test", Path: "/h2", Headers: map[string]string{"X-Test": "1"}}, dial)
	defer c.Close()
	ctx := context.Background()
	conn, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := conn.Read(make([]byte, 10)); err != os.ErrDeadlineExceeded {
		t.Fatalf("read past the deadline: %v", err)
	}
	conn.Close()

	bad, _ := New(Config{Host: "h2.test", Path: "/elsewhere"}, dial)
	defer bad.Close()
	if _, err := bad.Dial(ctx); err == nil || !strings.Contains(err.Error(), "server answered 404") {
		t.Fatalf("dial to a wrong path: %v", err)
	}
	if _, err := New(Config{}, dial); err == nil {
		t.Fatal("no host accepted")
	}
}

// TestStreamWindow checks what the client lets a server send on a stream
// before it is read: the settings it opens each connection with.
func TestStreamWindow(t *testing.T) {
	cc, sc := net.Pipe()
	defer sc.Close()
	c, err := New(Config{Host: "h2.test"}, func(context.Context) (net.Conn, error) { return cc, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dialed := make(chan error, 1)
	go func() {
		_, err := c.Dial(ctx)
		dialed <- err
	}()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(sc, preface); err != nil || string(preface) != http2.ClientPreface {
		t.Fatalf("preface %q: %v", preface, err)
	}
	f, err := http2.NewFramer(io.Discard, sc).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	settings, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %v, want SETTINGS", f)
	}
	if v, ok := settings.Value(http2.SettingInitialWindowSize); !ok || v != minStreamWindow {
		t.Errorf("stream window %d (sent: %v), want %d", v, ok, minStreamWindow)
	}
	cancel()
	sc.Close()
	if err := <-dialed; err == nil {
		t.Error("dial without a server succeeded")
	}
}

// TestWaitRead reads a stream's echo waiting before every read, as a relay
// does for an idle stream: the bytes, the half-close and a deadline passing
// during a wait all come through as plain reads would give them.
func TestWaitRead(t *testing.T) {
	_, dial := server(t)
	c, _ := New(Config{Host: "h2.test", Path: "/h2", Headers: map[string]string{"X-Test": "1"}}, dial)
	defer c.Close()
	conn, err := c.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data := make([]byte, 1<<20)
	rand.Read(data)
	go func() {
		for b := data; len(b) > 0; b = b[min(len(b), 60<<10):] {
			conn.Write(b[:min(len(b), 60<<10)])
		}
		conn.(interface{ CloseWrite() error }).CloseWrite()
	}()
	w := conn.(interface{ WaitRead() bool })
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		if !w.WaitRead() {
			t.Fatal("WaitRead reported that it cannot wait")
		}
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, append(data, "<eof>"...)) {
		t.Fatalf("echo: %d bytes, want %d and the half-close", len(got), len(data)+5)
	}

	idle, err := c.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	idle.(interface{ WaitRead() bool }).WaitRead()
	if _, err := idle.Read(buf); err != os.ErrDeadlineExceeded {
		t.Fatalf("read after a wait past the deadline: %v", err)
	}
}

// TestStreamWindowShare: the streams of a client share rxBudget of
// receive window, each between minStreamWindow and maxStreamWindow.
func TestStreamWindowShare(t *testing.T) {
	for _, tc := range []struct{ open, want int }{
		{0, maxStreamWindow}, {1, maxStreamWindow}, {32, maxStreamWindow}, {64, 512 << 10}, {500, 67108}, {1000, minStreamWindow},
	} {
		c := &Client{open: tc.open}
		if got := c.streamWindow(); got != tc.want {
			t.Errorf("%d streams open: window %d, want %d", tc.open, got, tc.want)
		}
	}
}
