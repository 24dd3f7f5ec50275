package mux

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
)

func TestSessionHeader(t *testing.T) {
	if h := sessionHeader(codeYamux, false); !bytes.Equal(h, []byte{0, codeYamux}) {
		t.Fatalf("unpadded header % x", h)
	}
	for range 50 {
		h := sessionHeader(codeH2, true)
		if h[0] != 1 || h[1] != codeH2 || h[2] != 1 {
			t.Fatalf("padded header starts % x", h[:3])
		}
		n := int(binary.BigEndian.Uint16(h[3:]))
		if n < 256 || n > 767 || len(h) != 5+n {
			t.Fatalf("padding of %d bytes in a %d-byte header", n, len(h))
		}
	}
}

func TestStreamRequest(t *testing.T) {
	for _, tt := range []struct {
		udp  bool
		dst  flow.Addr
		want []byte
	}{
		{false, flow.AddrFromAddrPort(netipMust("1.2.3.4:80")), []byte{0, 0, 1, 1, 2, 3, 4, 0, 80}},
		{true, flow.NameAddr("a.example", 53), append(append([]byte{0, 1, 3, 9}, "a.example"...), 0, 53)},
		{false, flow.AddrFromAddrPort(netipMust("[2001:db8::1]:443")), append(append([]byte{0, 0, 4}, net.ParseIP("2001:db8::1").To16()...), 1, 187)},
	} {
		got, err := streamRequest(nil, tt.udp, tt.dst)
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("%v udp=%v: % x, %v; want % x", tt.dst, tt.udp, got, err, tt.want)
		}
	}
	if _, err := streamRequest(nil, false, flow.Addr{}); err == nil {
		t.Error("no destination: no error")
	}
}

func TestReadStatus(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
		want error // nil: ok; ErrRefused; other: any error
		msg  string
	}{
		{"ok", []byte{0, 'x'}, nil, ""},
		{"refused", append([]byte{1, 5}, "nope!"...), ErrRefused, "nope!"},
		{"bad status", []byte{7}, io.EOF, ""},
		{"empty", nil, io.EOF, ""},
		{"truncated message", []byte{1, 5, 'a'}, io.EOF, ""},
		{"huge message", []byte{1, 0xff, 0xff, 0x03}, ErrRefused, ""},
	} {
		err := readStatus(bytes.NewReader(tt.in))
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want == ErrRefused && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.msg)):
			t.Errorf("%s: %v, want refused with %q", tt.name, err, tt.msg)
		case tt.want != nil && err == nil:
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// TestPadding: what paddingConn writes it reads back, for writes of any
// size, the first paddedFrames frames padded and the rest plain.
func TestPadding(t *testing.T) {
	sizes := []int{1, 0, 100, maxFrameData, maxFrameData + 1, 3 * maxFrameData, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 50000}
	var want bytes.Buffer
	wire := &bytes.Buffer{}
	w := newPaddingConn(fakeConn{Writer: wire})
	for _, n := range sizes {
		p := make([]byte, n)
		rand.Read(p)
		want.Write(p)
		if m, err := w.Write(p); m != n || err != nil {
			t.Fatalf("write %d: %d, %v", n, m, err)
		}
	}
	if w.wframes != paddedFrames {
		t.Fatalf("%d padded frames written, want %d", w.wframes, paddedFrames)
	}
	raw := wire.Bytes()
	// The wire: 16 frames, then the plain rest.
	off, data := 0, 0
	for range paddedFrames {
		d, p := int(binary.BigEndian.Uint16(raw[off:])), int(binary.BigEndian.Uint16(raw[off+2:]))
		off += 4 + d + p
		data += d
	}
	if len(raw)-off != want.Len()-data {
		t.Fatalf("after the padded frames %d bytes, want %d", len(raw)-off, want.Len()-data)
	}
	r := newPaddingConn(fakeConn{Reader: bytes.NewReader(raw)})
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), err, want.Len())
	}
	// Cut anywhere inside a padded frame: an error, never a clean end.
	for _, cut := range []int{1, 3, 5, off - 1} {
		r := newPaddingConn(fakeConn{Reader: bytes.NewReader(raw[:cut])})
		if _, err := io.ReadAll(r); err == nil {
			t.Errorf("cut at %d: no error", cut)
		}
	}
}

func TestParseConfig(t *testing.T) {
	for _, tt := range []struct {
		proto string
		o     *node.MultiplexOptions
		want  Config
		bad   bool
	}{
		{"", nil, Config{Protocol: protoH2, code: codeH2, MaxConnections: 4, MinStreams: 4}, false},
		{"smux", &node.MultiplexOptions{MaxStreams: 8, Padding: true}, Config{Protocol: protoSmux, code: codeSmux, MaxStreams: 8, Padding: true}, false},
		{"yamux", &node.MultiplexOptions{MaxConnections: 1}, Config{Protocol: protoYamux, code: codeYamux, MaxConnections: 1, MinStreams: 4}, false},
		{"smux", &node.MultiplexOptions{MaxStreams: 8, MinStreams: 2}, Config{}, true},
		{"smux", &node.MultiplexOptions{MaxStreams: -1}, Config{}, true},
		{"mplex", nil, Config{}, true},
	} {
		got, err := ParseConfig(tt.proto, tt.o)
		if (err != nil) != tt.bad || !tt.bad && got != tt.want {
			t.Errorf("%q %+v: %+v, %v", tt.proto, tt.o, got, err)
		}
	}
	var u *node.UnsupportedError
	if _, err := ParseConfig("mplex", nil); !errors.As(err, &u) || u.Lack.Feature != node.FeatureMultiplex {
		t.Errorf("unknown protocol: %v, want unsupported", err)
	}
}

// TestPick: the pool opens sessions as sing-box's does.
func TestPick(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cfg     Config
		streams []int // live sessions' stream counts
		want    int   // the index picked, -1: a new session
	}{
		{"none", Config{MaxConnections: 4, MinStreams: 4}, nil, -1},
		{"below min", Config{MaxConnections: 4, MinStreams: 4}, []int{3}, 0},
		{"at min, room", Config{MaxConnections: 4, MinStreams: 4}, []int{4}, -1},
		{"least loaded", Config{MaxConnections: 2, MinStreams: 4}, []int{9, 5}, 1},
		{"full", Config{MaxConnections: 2, MinStreams: 1}, []int{7, 7}, 0},
		{"max streams room", Config{MaxStreams: 8}, []int{8, 7}, 1},
		{"max streams full", Config{MaxStreams: 8}, []int{8, 8, 8, 8, 8}, -1},
	} {
		c := &Client{cfg: tt.cfg, idle: map[session]time.Time{}, now: time.Now}
		var ss []*fakeSession
		for _, n := range tt.streams {
			s := &fakeSession{n: n}
			ss = append(ss, s)
			c.sessions = append(c.sessions, s)
		}
		dead := &fakeSession{dead: true}
		c.sessions = append(c.sessions, dead) // pruned, and closed
		got := c.pick()
		want := session(nil)
		if tt.want >= 0 {
			want = ss[tt.want]
		}
		if got != want {
			t.Errorf("%s: picked %v, want %v", tt.name, got, want)
		}
		if len(c.sessions) != len(tt.streams) || !dead.closedCalled {
			t.Errorf("%s: the dead session was kept", tt.name)
		}
	}
}

// TestPickIdle: a session without streams for maxIdle is closed and not
// picked; one that carries streams is kept however old.
func TestPickIdle(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &Client{cfg: Config{MaxConnections: 4, MinStreams: 4}, idle: map[session]time.Time{}, now: func() time.Time { return now }}
	quiet, busy := &fakeSession{}, &fakeSession{n: 1}
	c.sessions = []session{quiet, busy}
	if got := c.pick(); got != quiet {
		t.Fatalf("picked %v, want the idle one while it is fresh", got)
	}
	now = now.Add(maxIdle + time.Second)
	if got := c.pick(); got != busy || !quiet.closedCalled || len(c.sessions) != 1 {
		t.Fatalf("after maxIdle: picked %v, idle closed %v, %d sessions", got, quiet.closedCalled, len(c.sessions))
	}
}

type fakeSession struct {
	n            int
	dead         bool
	closedCalled bool
}

func (s *fakeSession) open(context.Context) (net.Conn, error) { return nil, errors.New("fake") }
func (s *fakeSession) streams() int                           { return s.n }
func (s *fakeSession) closed() bool                           { return s.dead || s.closedCalled }
func (s *fakeSession) Close() error                           { s.closedCalled = true; return nil }

// fakeConn is a net.Conn over a reader or a writer.
type fakeConn struct {
	net.Conn
	io.Reader
	io.Writer
}

func (c fakeConn) Read(p []byte) (int, error)  { return c.Reader.Read(p) }
func (c fakeConn) Write(p []byte) (int, error) { return c.Writer.Write(p) }

func FuzzPaddingRead(f *testing.F) {
	var wire bytes.Buffer
	w := newPaddingConn(fakeConn{Writer: &wire})
	w.Write([]byte("hello"))
	w.Write(bytes.Repeat([]byte{1}, 300))
	f.Add(wire.Bytes())
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 0, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := newPaddingConn(fakeConn{Reader: bytes.NewReader(b)})
		got, _ := io.ReadAll(r)
		if len(got) > len(b) {
			t.Fatalf("%d bytes out of %d", len(got), len(b))
		}
	})
}

func FuzzReadStatus(f *testing.F) {
	f.Add([]byte{0})
	f.Add(append([]byte{1, 3}, "err"...))
	f.Add([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		err := readStatus(bytes.NewReader(b))
		if err == nil && (len(b) == 0 || b[0] != 0) {
			t.Fatalf("% x: ok", b)
		}
	})
}

func netipMust(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
