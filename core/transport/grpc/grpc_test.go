package grpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		service string
		multi   bool
		want    string
	}{
		{"", false, "//Tun"},
		{"gun", false, "/gun/Tun"},
		{"gun", true, "/gun/TunMulti"},
		{"a b/c", false, "/a%20b%2Fc/Tun"},
		{"/a/b/c", false, "/a/b/c"},
		{"/a/b/c", true, "/a/b/c"},
		{"/my service/x/Stream", false, "/my%20service/x/Stream"},
		{"/svc/Tun|Multi", false, "/svc/Tun"},
		{"/svc/Tun|Multi", true, "/svc/Multi"},
	} {
		if got := Path(tc.service, tc.multi); got != tc.want {
			t.Errorf("Path(%q, %v) = %q, want %q", tc.service, tc.multi, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	f := func(kv ...string) (h []hpackField) {
		for i := 0; i < len(kv); i += 2 {
			h = append(h, hpackField{Name: kv[i], Value: kv[i+1]})
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		fields []hpackField
		end    bool
		want   string // "" no error
	}{
		{"response", f(":status", "200", "content-type", "application/grpc"), false, ""},
		{"response +proto", f("content-type", "application/grpc+proto"), false, ""},
		{"not grpc", f("content-type", "text/html"), false, `content-type "text/html"`},
		{"no type", f(), false, `content-type ""`},
		{"trailers ok", f("grpc-status", "0"), true, ""},
		{"trailers none", f(), true, ""},
		{"trailers error", f("grpc-status", "14", "grpc-message", "upstream%20gone"), true, "status 14 (Unavailable): upstream gone"},
		{"trailers-only", f("content-type", "application/grpc", "grpc-status", "12"), true, "status 12 (Unimplemented)"},
		{"odd code", f("grpc-status", "99"), true, "status 99"},
	} {
		err := check(tc.fields, tc.end)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: check = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// server is a gRPC-gun server on x/net/http2 over h2c: what its handler
// is given decides the case.
type server struct {
	ln    net.Listener
	conns atomic.Int32
	wg    sync.WaitGroup
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln}
	h2s := &http2.Server{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				h2s.ServeConn(c, &http2.ServeConnOpts{Handler: h})
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *server) client(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.Plain, cfg.Authority = true, "example.com"
	c, err := New(cfg, func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", s.ln.Addr().String())
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// echo answers a call by echoing each message's data back in messages
// of its own (a MultiHunk of two fields per message when multi).
func echo(t *testing.T, wantPath string, multi bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wantPath || r.Method != "POST" || r.Header.Get("Content-Type") != "application/grpc" || r.Header.Get("Te") != "trailers" {
			t.Errorf("request %s %s %v", r.Method, r.URL.Path, r.Header)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		rd := &reader{r: r.Body}
		buf := make([]byte, 20000)
		for {
			n, err := rd.Read(buf)
			if n > 0 {
				var msg []byte
				if multi && n > 1 {
					h := n / 2
					msg = appendMulti(nil, buf[:h], buf[h:n])
				} else {
					msg = append(appendHeader(nil, n), buf[:n]...)
				}
				if _, err := w.Write(msg); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			if err != nil {
				w.Header().Set("Grpc-Status", "0")
				return
			}
		}
	}
}

// appendMulti appends a MultiHunk message with one field per part.
func appendMulti(b []byte, parts ...[]byte) []byte {
	var body []byte
	for _, p := range parts {
		body = append(body, tagData)
		body = appendUvarint(body, uint64(len(p)))
		body = append(body, p...)
	}
	b = append(b, 0, byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body)))
	return append(b, body...)
}

func TestEcho(t *testing.T) {
	for _, multi := range []bool{false, true} {
		s := newServer(t, echo(t, Path("svc", multi), multi))
		c := s.client(t, Config{ServiceName: "svc", Multi: multi})
		const streams = 8
		var wg sync.WaitGroup
		for i := 0; i < streams; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := c.Dial(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				data := make([]byte, 1<<20+7)
				rand.Read(data)
				go func() {
					conn.Write(data)
					conn.(interface{ CloseWrite() error }).CloseWrite()
				}()
				got, err := io.ReadAll(conn)
				if err != nil {
					t.Errorf("multi %v: read: %v", multi, err)
				}
				if sha256.Sum256(got) != sha256.Sum256(data) {
					t.Errorf("multi %v: echoed %d bytes, sent %d, or they differ", multi, len(got), len(data))
				}
			}()
		}
		wg.Wait()
		if n := s.conns.Load(); n != 1 {
			t.Errorf("multi %v: %d streams took %d connections, want 1", multi, streams, n)
		}
	}
}

// The server's verdicts reach the caller as errors that say what it was.
func TestServerErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		dialErr string // Dial's error (it returns once the request is sent)
		readErr string
	}{
		{"trailers-only", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "12")
			w.Header().Set("Grpc-Message", "unknown service")
			w.WriteHeader(200)
		}, "", "status 12 (Unimplemented): unknown service"},
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "", "answered 404"},
		{"not grpc", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }, "", "not application/grpc"},
		{"status in trailers", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
			w.WriteHeader(200)
			w.Write(append(appendHeader(nil, 5), "hello"...))
			w.Header().Set("Grpc-Status", "14")
			w.Header().Set("Grpc-Message", "backend down")
		}, "", "status 14 (Unavailable): backend down"},
		{"compressed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.WriteHeader(200)
			w.Write(append(appendHeader(nil, 5), "hello"...))
			w.Write([]byte{1, 0, 0, 0, 1, 0})
		}, "", "compressed"},
		{"cut", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.WriteHeader(200)
			w.Write(append(appendHeader(nil, 5), "hel"...))
		}, "", "stream ended inside a message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.h)
			c := s.client(t, Config{ServiceName: "svc"})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			conn, err := c.Dial(ctx)
			if tc.dialErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.dialErr) {
					t.Fatalf("Dial: %v, want %q", err, tc.dialErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			got, err := io.ReadAll(conn)
			if err == nil || !strings.Contains(err.Error(), tc.readErr) {
				t.Fatalf("read %q, %v; want error %q", got, err, tc.readErr)
			}
			if tc.name == "status in trailers" {
				var se *StatusError
				if string(got) != "hello" || !errors.As(err, &se) || se.Code != 14 {
					t.Errorf("got %q, %#v: want the bytes before the trailers, then status 14", got, err)
				}
			}
		})
	}
}

func TestReader(t *testing.T) {
	msg := func(parts ...string) []byte {
		var ps [][]byte
		for _, p := range parts {
			ps = append(ps, []byte(p))
		}
		return appendMulti(nil, ps...)
	}
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name string
		in   []byte
		want string
		err  string // "" clean EOF
	}{
		{"empty", nil, "", ""},
		{"one", append(appendHeader(nil, 3), "abc"...), "abc", ""},
		{"multi", msg("ab", "", "cde"), "abcde", ""},
		{"several", cat(msg("a"), msg(), msg("bc")), "abc", ""},
		// A field other than 1 is skipped whatever its type.
		{"other fields", cat([]byte{0, 0, 0, 0, 12, 0x10, 0x96, 0x01, 0x1a, 2, 'x', 'y', 0x0d, 1, 2, 3, 4}, msg("z")), "z", ""},
		{"fixed64", []byte{0, 0, 0, 0, 9, 0x09, 1, 2, 3, 4, 5, 6, 7, 8}, "", ""},
		{"compressed", []byte{1, 0, 0, 0, 0}, "", "compressed"},
		{"bad flag", []byte{7, 0, 0, 0, 0}, "", "flag byte"},
		{"short prefix", []byte{0, 0, 0}, "", "inside a message prefix"},
		{"short data", append(appendHeader(nil, 5), "ab"...), "ab", "inside a message"},
		{"field past message", []byte{0, 0, 0, 0, 2, 0x0a, 5, 'a', 'b', 'c', 'd', 'e'}, "", "field of 5 bytes"},
		{"varint past message", []byte{0, 0, 0, 0, 1, 0x0a}, "", "ends inside a field"},
		{"field zero", []byte{0, 0, 0, 0, 2, 0x02, 0}, "", "field number 0"},
		{"group", []byte{0, 0, 0, 0, 1, 0x0b}, "", "wire type 3"},
		{"long varint", []byte{0, 0, 0, 0, 11, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "", "varint too long"},
	} {
		rd := &reader{r: bytes.NewReader(tc.in)}
		got, err := io.ReadAll(iotestOneByte{rd})
		if string(got) != tc.want {
			t.Errorf("%s: read %q, want %q", tc.name, got, tc.want)
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// iotestOneByte reads in 3-byte steps, so fields cross reads.
type iotestOneByte struct{ r io.Reader }

func (o iotestOneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 3)]) }

func TestWriteChunks(t *testing.T) {
	var b bytes.Buffer
	c := &conn{Conn: fakeConn{&b}}
	data := bytes.Repeat([]byte{'x'}, 2*maxChunk+10)
	if n, err := c.Write(data); n != len(data) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	// Three messages: two full chunks and the rest.
	if want := 3*(prefixLen+1) + 2*3 + 1 + len(data); b.Len() != want {
		t.Errorf("wrote %d bytes, want %d", b.Len(), want)
	}
	got, err := io.ReadAll(&reader{r: &b})
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes, %v", len(got), err)
	}
}

type fakeConn struct{ w io.Writer }

func (f fakeConn) Write(p []byte) (int, error)    { return f.w.Write(p) }
func (fakeConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (fakeConn) Close() error                     { return nil }
func (fakeConn) LocalAddr() net.Addr              { return nil }
func (fakeConn) RemoteAddr() net.Addr             { return nil }
func (fakeConn) SetDeadline(time.Time) error      { return nil }
func (fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (fakeConn) SetWriteDeadline(time.Time) error { return nil }
