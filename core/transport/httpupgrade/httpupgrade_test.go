package httpupgrade

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve runs an HTTP/1.1 server on loopback whose handler decides the
// case; it returns the server's address.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// upgrade is sing-box's server: check the request, hijack, answer 101
// (with extra behind it when given) and echo.
func upgrade(t *testing.T, extra string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" || r.URL.RequestURI() != "/up?x=1" || r.Host != "cdn.example" ||
			r.Header.Get("Connection") != "Upgrade" || r.Header.Get("Upgrade") != "websocket" ||
			r.Header.Get("X-Token") != "t" || r.Header.Get("Sec-WebSocket-Key") != "" {
			t.Errorf("request %s %s host %q %v", r.Method, r.URL, r.Host, r.Header)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"+extra)
		io.Copy(c, brw)
	}
}

func dial(t *testing.T, addr string, cfg Config, timeout time.Duration) (net.Conn, error) {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return Client(ctx, raw, cfg)
}

var good = Config{Host: "cdn.example", Path: "up?x=1", Headers: map[string]string{"X-Token": "t", "Host": "ignored", "Upgrade": "h2c"}}

func TestEcho(t *testing.T) {
	for _, extra := range []string{"", "hello"} {
		c, err := dial(t, serve(t, upgrade(t, extra)), good, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, isPre := c.(*preConn)
		if isPre != (extra != "") {
			t.Errorf("extra %q: got %T; the raw conn is returned unless bytes came behind the answer", extra, c)
		}
		data := bytes.Repeat([]byte("0123456789"), 100000)
		go c.Write(data)
		want := append([]byte(extra), data...)
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, want) {
			t.Errorf("extra %q: echo: %v", extra, err)
		}
	}
}

// Fast open: the request is sent at once, the answer read by the first
// Read, so the first bytes go without waiting for it.
func TestFastOpen(t *testing.T) {
	addr := serve(t, upgrade(t, "hi"))
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c, err := ClientFastOpen(context.Background(), raw, good)
	if err != nil {
		t.Fatal(err)
	}
	if c.(*fastConn).WaitRead() {
		t.Error("WaitRead before the answer: it cannot wait yet")
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 7)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "hihello" {
		t.Fatalf("read %q, %v", got, err)
	}
	// A refusal is the first Read's error.
	raw2, _ := net.Dial("tcp", serve(t, func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer raw2.Close()
	c, _ = ClientFastOpen(context.Background(), raw2, good)
	raw2.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(got); err == nil || !strings.Contains(err.Error(), "server answered 404") {
		t.Fatalf("Read: %v, want the 404", err)
	}
	if _, err := ClientFastOpen(context.Background(), raw2, Config{Host: "a b"}); err == nil {
		t.Error("a bad host passed")
	}
}

func TestRefused(t *testing.T) {
	answer := func(s string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c, _, _ := w.(http.Hijacker).Hijack()
			defer c.Close()
			io.WriteString(c, s)
			time.Sleep(time.Second) // then silence, not EOF
		}
	}
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		cfg  Config
		want string
	}{
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, good, "server answered 404"},
		{"no upgrade", answer("HTTP/1.1 101 Switching Protocols\r\nConnection: keep-alive\r\n\r\n"), good, "101 without Connection: upgrade"},
		{"h2c", answer("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"), good, "101 without"},
		{"garbage", answer("SSH-2.0-OpenSSH\r\n\r\n"), good, "bad answer"},
		{"endless", answer("HTTP/1.1 101 OK\r\nX: " + strings.Repeat("a", 9000)), good, "answer longer than 8192 bytes"},
		{"closed", func(w http.ResponseWriter, r *http.Request) { c, _, _ := w.(http.Hijacker).Hijack(); c.Close() }, good, "server closed the connection without answering"},
		{"silent", func(w http.ResponseWriter, r *http.Request) { time.Sleep(2 * time.Second) }, good, "context deadline exceeded"},
		{"no host", nil, Config{}, "no host"},
		{"bad host", nil, Config{Host: "a b"}, "not a valid Host"},
		{"bad path", nil, Config{Host: "h", Path: "/a b"}, "space or control"},
		{"newline path", nil, Config{Host: "h", Path: "/a\r\nX: y"}, "space or control"},
		{"bad header", nil, Config{Host: "h", Headers: map[string]string{"X": "a\r\nb"}}, `header "X"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			if h == nil {
				h = upgrade(t, "")
			}
			_, err := dial(t, serve(t, h), tc.cfg, 300*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Client: %v, want %q", err, tc.want)
			}
			if tc.name == "404" {
				var se *StatusError
				if !errors.As(err, &se) || se.Status != 404 {
					t.Errorf("%#v is not a StatusError 404", err)
				}
			}
		})
	}
}

// FuzzAnswer: any answer is taken (101 upgrade, the bytes behind it kept)
// or refused with an error, never a panic, never more than it holds.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 101\r\nConnection: a, Upgrade\r\nUpgrade: WebSocket\r\n\r\n"))
	f.Add([]byte("\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		head, rest, err := readHead(readerConn{bytes.NewReader(in)})
		if err != nil {
			return
		}
		if len(head)+len(rest) > len(in) || !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
			t.Fatalf("head %q rest %q from %q", head, rest, in)
		}
		if !bytes.Equal(append(append([]byte(nil), head...), rest...), in[:len(head)+len(rest)]) {
			t.Fatalf("head and rest are not the input")
		}
		checkResponse(head)
	})
}

type readerConn struct{ r io.Reader }

func (c readerConn) Read(p []byte) (int, error)     { return c.r.Read(p) }
func (readerConn) Write(p []byte) (int, error)      { return len(p), nil }
func (readerConn) Close() error                     { return nil }
func (readerConn) LocalAddr() net.Addr              { return nil }
func (readerConn) RemoteAddr() net.Addr             { return nil }
func (readerConn) SetDeadline(time.Time) error      { return nil }
func (readerConn) SetReadDeadline(time.Time) error  { return nil }
func (readerConn) SetWriteDeadline(time.Time) error { return nil }
