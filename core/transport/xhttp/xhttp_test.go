package xhttp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// server is an XHTTP server as Xray's hub behaves (default placements),
// echoing each stream: it refuses requests without a valid x_padding,
// reorders packet-up POSTs by seq, and counts what it was sent.
type server struct {
	t        *testing.T
	path     string
	mu       sync.Mutex
	sessions map[string]*session
	requests map[string]int // "GET", "POST seq", "POST stream", "POST one"
	badPad   int
}

type session struct {
	mu   sync.Mutex
	next int
	held map[int][]byte
	up   chan []byte
}

func newServer(t *testing.T) *server {
	return &server{t: t, path: "/xh/", sessions: map[string]*session{}, requests: map[string]int{}}
}

func (s *server) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x := s.sessions[id]; x != nil {
		return x
	}
	x := &session{held: map[int][]byte{}, up: make(chan []byte, 4096)}
	s.sessions[id] = x
	return x
}

func (s *server) count(k string) {
	s.mu.Lock()
	s.requests[k]++
	s.mu.Unlock()
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ref, err := url.Parse(r.Header.Get("Referer"))
	pad := ""
	if err == nil {
		pad = ref.Query().Get("x_padding")
	}
	if len(pad) < 100 || len(pad) > 1000 || strings.Trim(pad, "X") != "" {
		s.mu.Lock()
		s.badPad++
		s.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if !strings.HasPrefix(r.URL.Path, s.path) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	meta := strings.Split(strings.TrimPrefix(r.URL.Path, s.path), "/")
	fl := w.(http.Flusher)
	switch {
	case r.Method == http.MethodPost && meta[0] == "": // stream-one
		s.count("POST one")
		w.WriteHeader(http.StatusOK)
		fl.Flush()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				fl.Flush()
			}
			if err != nil {
				return
			}
		}
	case r.Method == http.MethodGet && len(meta) == 1:
		s.count("GET")
		x := s.session(meta[0])
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl.Flush()
		for {
			select {
			case b := <-x.up:
				if _, err := w.Write(b); err != nil {
					return
				}
				fl.Flush()
			case <-r.Context().Done():
				return
			}
		}
	case r.Method == http.MethodPost && len(meta) == 1: // stream-up
		s.count("POST stream")
		if r.Header.Get("Content-Type") != "application/grpc" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		x := s.session(meta[0])
		w.WriteHeader(http.StatusOK)
		w.Write(bytes.Repeat([]byte("X"), 300)) // keepalive padding the client drops
		fl.Flush()
		for {
			b := make([]byte, 32<<10)
			n, err := r.Body.Read(b)
			if n > 0 {
				x.up <- b[:n]
			}
			if err != nil {
				return
			}
		}
	case r.Method == http.MethodPost && len(meta) == 2: // packet-up
		s.count("POST seq")
		seq, err := strconv.Atoi(meta[1])
		b, rerr := io.ReadAll(r.Body)
		if err != nil || rerr != nil || len(b) > 1_000_000 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		x := s.session(meta[0])
		x.mu.Lock()
		x.held[seq] = b
		for {
			d, ok := x.held[x.next]
			if !ok {
				break
			}
			delete(x.held, x.next)
			x.next++
			x.up <- d
		}
		x.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// start serves s over TLS with h2 (h1: HTTP/1.1 only) and returns a dial
// function for a Client.
func (s *server) start(t *testing.T, h1 bool) func(context.Context) (net.Conn, error) {
	ts := httptest.NewUnstartedServer(s)
	ts.EnableHTTP2 = !h1
	ts.StartTLS()
	t.Cleanup(ts.Close)
	alpn := "h2"
	if h1 {
		alpn = "http/1.1"
	}
	return func(ctx context.Context) (net.Conn, error) {
		d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}}}
		return d.DialContext(ctx, "tcp", ts.Listener.Addr().String())
	}
}

// echo writes size random bytes through c and reads them back.
func echo(t *testing.T, c net.Conn, size int) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	errc := make(chan error, 1)
	go func() {
		// Writes of varied size, as a relay makes them.
		for off, i := 0, 0; off < len(data); i++ {
			n := min(len(data)-off, 1+(i*7919)%40000)
			if _, err := c.Write(data[off : off+n]); err != nil {
				errc <- err
				return
			}
			off += n
		}
		errc <- nil
	}()
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, size)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read back: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write: %v", err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatal("echo differs")
	}
}

func TestModes(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		h1   bool
		want string // the upload requests the server must have seen
	}{
		{PacketUp, false, "POST seq"},
		{PacketUp, true, "POST seq"},
		{StreamUp, false, "POST stream"},
		{StreamOne, false, "POST one"},
	} {
		name := string(tc.mode) + map[bool]string{false: "/h2", true: "/h1"}[tc.h1]
		t.Run(name, func(t *testing.T) {
			s := newServer(t)
			dial := s.start(t, tc.h1)
			v := HTTP2
			if tc.h1 {
				v = HTTP1
			}
			c, err := New(Config{Host: "example.com", Path: "xh", Mode: tc.mode, HTTP: v, TLS: true}, dial)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var wg sync.WaitGroup
			for range 3 { // streams share the client's connections
				wg.Add(1)
				go func() {
					defer wg.Done()
					conn, err := c.Dial(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					defer conn.Close()
					echo(t, conn, 3<<20)
				}()
			}
			wg.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.badPad != 0 || s.requests[tc.want] == 0 {
				t.Fatalf("requests %v, %d with bad padding", s.requests, s.badPad)
			}
			if tc.mode == PacketUp && s.requests["POST seq"] < 3 {
				t.Fatalf("requests %v: want several POSTs per stream", s.requests)
			}
		})
	}
}

// A server that refuses the request fails Dial with its status.
func TestDialRefused(t *testing.T) {
	s := newServer(t)
	dial := s.start(t, false)
	for _, m := range []Mode{PacketUp, StreamOne} {
		c, err := New(Config{Host: "example.com", Path: "/elsewhere", Mode: m, TLS: true}, dial)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Dial(context.Background())
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusNotFound {
			t.Fatalf("%s: Dial = %v, want a 404 StatusError", m, err)
		}
		c.Close()
	}
}

func TestNewRefuses(t *testing.T) {
	dial := func(context.Context) (net.Conn, error) { return nil, errors.New("no") }
	for _, cfg := range []Config{
		{Path: "/x", Mode: PacketUp},                           // no host
		{Host: "h", Mode: Auto},                                // unresolved mode
		{Host: "h", Mode: StreamOne, HTTP: HTTP1},              // stream-one needs h2
		{Host: "h", Mode: StreamUp, HTTP: HTTP1},               // so does stream-up
		{Host: "h", Mode: PacketUp, Path: "/x?y=1"},            // query in path
		{Host: "h", Mode: PacketUp, Padding: Range{0, 10}},     // padding that may be empty
		{Host: "h", Mode: PacketUp, MaxEachPost: Range{0, 10}}, // empty posts
	} {
		if _, err := New(cfg, dial); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestResolveMode(t *testing.T) {
	for _, tc := range []struct {
		in      Mode
		reality bool
		want    Mode
	}{
		{Auto, false, PacketUp}, {"", false, PacketUp}, {Auto, true, StreamOne},
		{StreamUp, true, StreamUp}, {PacketUp, true, PacketUp}, {StreamOne, false, StreamOne},
	} {
		if got := ResolveMode(tc.in, tc.reality); got != tc.want {
			t.Errorf("ResolveMode(%q, %v) = %q, want %q", tc.in, tc.reality, got, tc.want)
		}
	}
}

func TestParseExtra(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Extra
		err  string // substring; "unsupported:" + key for an *UnsupportedError
	}{
		{in: "", want: Extra{}},
		{in: `{}`, want: Extra{}},
		{in: `{"xPaddingBytes":"200-400","noGRPCHeader":true,"mode":"stream-up","host":"h","path":"/p","headers":{"A":"b"}}`,
			want: Extra{Host: "h", Path: "/p", Mode: StreamUp, Headers: map[string]string{"A": "b"}, Padding: Range{200, 400}, NoGRPCHeader: true}},
		{in: `{"xPaddingBytes":{"from":10,"to":20},"scMaxEachPostBytes":500000,"scMinPostsIntervalMs":"10-50"}`,
			want: Extra{Padding: Range{10, 20}, MaxEachPost: Range{500000, 500000}, MinPostsInterval: Range{10, 50}}},
		{in: `{"xPaddingBytes":0}`, want: Extra{}},
		{in: `{"xmux":{"maxConnections":2},"noSSEHeader":true,"scMaxBufferedPosts":30,"downloadSettings":null,"uplinkHTTPMethod":"POST","sessionPlacement":"path","somethingNew":1}`, want: Extra{MaxConnections: Range{2, 2}}},
		{in: `{"downloadSettings":{"address":"d.example"}}`, err: "unsupported:downloadSettings"},
		{in: `{"xPaddingObfsMode":true}`, err: "unsupported:xPaddingObfsMode"},
		{in: `{"uplinkHTTPMethod":"PUT"}`, err: "unsupported:uplinkHTTPMethod"},
		{in: `{"sessionPlacement":"header"}`, err: "unsupported:sessionPlacement"},
		{in: `{"seqPlacement":"query"}`, err: "unsupported:seqPlacement"},
		{in: `{"uplinkDataPlacement":"cookie"}`, err: "unsupported:uplinkDataPlacement"},
		{in: `{"mode":"sideways"}`, err: "unknown mode"},
		{in: `{"xPaddingBytes":"400-200"}`, err: "bad range"},
		{in: `{"xPaddingBytes":-1}`, err: "bad range"},
		{in: `{"xPaddingBytes":"100-9000"}`, err: "at most 8000"},
		{in: `{"scMaxEachPostBytes":"0-10"}`, err: "carry a byte"},
		{in: `{"a":1} {"b":2}`, err: "after the JSON"},
		{in: `[1]`, err: "extra"},
		{in: `{`, err: "extra"},
	} {
		got, err := ParseExtra(tc.in)
		if tc.err != "" {
			var ue *UnsupportedError
			if k, ok := strings.CutPrefix(tc.err, "unsupported:"); ok {
				if !errors.As(err, &ue) || ue.Key != k {
					t.Errorf("ParseExtra(%s) = %v, want unsupported %s", tc.in, err, k)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseExtra(%s) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseExtra(%s): %v", tc.in, err)
			continue
		}
		if got.Host != tc.want.Host || got.Path != tc.want.Path || got.Mode != tc.want.Mode || got.Padding != tc.want.Padding ||
			got.NoGRPCHeader != tc.want.NoGRPCHeader || got.MaxEachPost != tc.want.MaxEachPost ||
			got.MinPostsInterval != tc.want.MinPostsInterval || got.MaxConnections != tc.want.MaxConnections || len(got.Headers) != len(tc.want.Headers) {
			t.Errorf("ParseExtra(%s) = %+v, want %+v", tc.in, *got, tc.want)
		}
	}
}

// A read past its deadline times out and leaves the stream usable.
func TestPipeDeadline(t *testing.T) {
	p := newPipe(4)
	p.rd.set(time.Now().Add(20 * time.Millisecond))
	if _, err := p.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read = %v, want a timeout", err)
	}
	p.rd.set(time.Time{})
	p.wd.set(time.Now().Add(20 * time.Millisecond))
	if n, err := p.Write([]byte("abcdef")); n != 4 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write of 6 into 4 = %d, %v; want 4 and a timeout", n, err)
	}
	b := make([]byte, 8)
	if n, err := p.Read(b); n != 4 || err != nil || string(b[:n]) != "abcd" {
		t.Fatalf("Read = %q, %v", b[:n], err)
	}
	p.close(io.EOF)
	if _, err := p.Read(b); err != io.EOF {
		t.Fatalf("Read after close = %v, want EOF", err)
	}
}

// FuzzParseExtra: extra comes from share links and subscriptions; any
// input is read or refused, never a panic, and what is read is in bounds.
func FuzzParseExtra(f *testing.F) {
	for _, s := range []string{`{}`, `{"xPaddingBytes":"200-400","xmux":{"maxConnections":2}}`,
		`{"scMaxEachPostBytes":{"from":1,"to":2}}`, `{"downloadSettings":{}}`, `{"mode":"stream-one","headers":{"a":"b"}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExtra(s)
		if err != nil {
			return
		}
		for _, r := range []Range{e.Padding, e.MaxEachPost, e.MinPostsInterval} {
			if r.From < 0 || r.To < r.From {
				t.Fatalf("range %+v from %q", r, s)
			}
		}
		if e.Padding.To > maxPadding || e.MaxEachPost.To > maxPostSize {
			t.Fatalf("out of bounds: %+v", e)
		}
	})
}

// FuzzRange: ranges as links write them.
func FuzzRange(f *testing.F) {
	for _, s := range []string{"100-1000", "5", " 1 - 2 ", "-1", "3-2", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			return
		}
		if r.From < 0 || r.To < r.From {
			t.Fatalf("ParseRange(%q) = %+v", s, r)
		}
		if back, err := ParseRange(r.String()); err != nil || back != r {
			t.Fatalf("ParseRange(%q) = %+v, whose String %q reads as %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// A drained pipe lets go of a burst's buffer.
func TestPipeReleases(t *testing.T) {
	p := newPipe(1 << 20)
	p.Write(make([]byte, 1<<20))
	if _, err := p.take(1 << 20); err != nil {
		t.Fatal(err)
	}
	if c := cap(p.buf); c > keepCap {
		t.Fatalf("drained pipe keeps %d bytes", c)
	}
}

// Streams spread over MaxConnections HTTP/2 connections, then reuse them.
func TestSpread(t *testing.T) {
	s := newServer(t)
	dial := s.start(t, false)
	var mu sync.Mutex
	dials := 0
	counted := func(ctx context.Context) (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return dial(ctx)
	}
	c, err := New(Config{Host: "example.com", Path: "xh", Mode: StreamOne, TLS: true, MaxConnections: 2}, counted)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 6 {
		conn, err := c.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		echo(t, conn, 1000)
		conn.Close()
	}
	if dials != 2 {
		t.Fatalf("%d connections for 6 streams, want 2", dials)
	}
}
