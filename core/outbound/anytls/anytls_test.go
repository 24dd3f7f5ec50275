package anytls

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/internal/nettest"
)

func TestDefaultPaddingScheme(t *testing.T) {
	s := defaultScheme
	if s.stop != 8 || len(s.plan) != 8 {
		t.Fatalf("stop %d, %d packets", s.stop, len(s.plan))
	}
	if got := s.sizes(0); len(got) != 1 || got[0] != 30 {
		t.Errorf("packet 0 sizes %v, want [30]", got)
	}
	p2 := s.sizes(2)
	if len(p2) != 9 || p2[1] != checkMark || p2[0] < 400 || p2[0] > 500 {
		t.Errorf("packet 2 sizes %v", p2)
	}
	if s.sizes(8) != nil {
		t.Error("packet 8 is padded; stop is 8")
	}
	for _, bad := range []string{"stop=x", "0=5-1", "0=abc", "x=1-2", "0=0-0", "stop=99999", "0=1-70000", "=3", "noequals"} {
		if _, err := parsePaddingScheme(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// recorder is a net.Conn that records each Write.
type recorder struct {
	net.Conn
	writes [][]byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(p))
	return len(p), nil
}

// TestWriteConnPads checks the cutting and padding of one scheme write:
// data shorter than the sizes is filled with waste frames, longer data is
// cut to the sizes, a check mark stops once the data is used up.
func TestWriteConnPads(t *testing.T) {
	ps, err := parsePaddingScheme("stop=3\n0=10-10\n1=100-100,c,50-50\n2=40-40,30-30")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pkt  int
		data int
		want []int // record sizes
	}{
		{1, 20, []int{100}},          // padded to 100; the check mark then stops
		{1, 130, []int{100, 50}},     // cut to 100, the rest padded to 50
		{1, 200, []int{100, 50, 50}}, // cut to 100 and 50, the rest as it is
		{2, 10, []int{40, 30}},       // no check mark: the second record is all waste
		{3, 5000, []int{5000}},       // past stop: as it is
		{1, 98, []int{98}},           // no room for a waste frame header (needs 7)
		{1, 93, []int{100}},          // exactly room for an empty waste frame
	}
	for _, tt := range tests {
		r := &recorder{}
		s := &session{conn: r, scheme: ps, pkt: tt.pkt}
		data := bytes.Repeat([]byte{0xab}, tt.data)
		if err := s.writeConn(data); err != nil {
			t.Fatal(err)
		}
		var sizes []int
		var all []byte
		for _, w := range r.writes {
			sizes = append(sizes, len(w))
			all = append(all, w...)
		}
		if !slicesEqual(sizes, tt.want) {
			t.Errorf("packet %d, %d bytes: records %v, want %v", tt.pkt, tt.data, sizes, tt.want)
		}
		if !bytes.HasPrefix(all, data) {
			t.Errorf("packet %d, %d bytes: data not sent first and whole", tt.pkt, tt.data)
		}
		// What follows the data is waste frames only.
		rest := all[len(data):]
		for len(rest) > 0 {
			if len(rest) < frameHeaderLen || rest[0] != cmdWaste {
				t.Fatalf("packet %d: trailer %x is not waste frames", tt.pkt, rest)
			}
			h := parseFrameHeader(rest)
			rest = rest[frameHeaderLen+h.n:]
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fakeServer is a minimal AnyTLS server for the client's tests: it checks
// the password, echoes each stream's data after its destination, and
// counts sessions.
type fakeServer struct {
	addr     netip.AddrPort
	pin      string
	sessions atomic.Int64
	reject   bool
}

func newFakeServer(t *testing.T, password string, reject bool) *fakeServer {
	fs := &fakeServer{reject: reject}
	want := sha256.Sum256([]byte(password))
	fs.addr, fs.pin = nettest.StreamServer(t, nettest.StreamSpec{TLS: true}, "localhost", func(rw io.ReadWriter) {
		var auth [34]byte
		if _, err := io.ReadFull(rw, auth[:]); err != nil || !bytes.Equal(auth[:32], want[:]) || fs.reject {
			return
		}
		if _, err := io.CopyN(io.Discard, rw, int64(binary.BigEndian.Uint16(auth[32:]))); err != nil {
			return
		}
		fs.sessions.Add(1)
		var wmu sync.Mutex
		write := func(cmd byte, id uint32, data []byte) {
			wmu.Lock()
			defer wmu.Unlock()
			rw.Write(append(appendFrameHeader(nil, cmd, id, len(data)), data...))
		}
		gotAddr := map[uint32]bool{}
		var hdr [frameHeaderLen]byte
		for {
			if _, err := io.ReadFull(rw, hdr[:]); err != nil {
				return
			}
			h := parseFrameHeader(hdr[:])
			data := make([]byte, h.n)
			if _, err := io.ReadFull(rw, data); err != nil {
				return
			}
			switch h.cmd {
			case cmdSettings:
				write(cmdServerSettings, 0, []byte("v=2"))
			case cmdSYN:
				write(cmdSYNACK, h.id, nil)
			case cmdPSH:
				if !gotAddr[h.id] {
					gotAddr[h.id] = true
					if _, n, err := flow.ParseHostPort(data, socksTypes); err == nil {
						data = data[n:]
					}
				}
				if len(data) > 0 {
					write(cmdPSH, h.id, data)
				}
			case cmdFIN:
				delete(gotAddr, h.id)
			}
		}
	})
	return fs
}

func testClient(t *testing.T, fs *fakeServer, password string, o node.AnyTLSOptions) *Client {
	o.Password = password
	n := &node.Node{Name: "t", Protocol: node.AnyTLS, Server: "127.0.0.1", Port: fs.addr.Port(),
		TLS: &node.TLS{SNI: "localhost", Insecure: true, PinSHA256: fs.pin}, AnyTLS: &o}
	c, err := New(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func echo(t *testing.T, c *Client, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("example.com", 80))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != msg {
		t.Fatalf("echo %q, %v", got, err)
	}
}

// TestSessionReuse: sequential flows share a session; concurrent ones
// need one each; idle sessions are closed after the idle timeout.
func TestSessionReuse(t *testing.T) {
	fs := newFakeServer(t, "pw", false)
	c := testClient(t, fs, "pw", node.AnyTLSOptions{IdleSessionCheckInterval: time.Second, IdleSessionTimeout: 100 * time.Millisecond})
	echo(t, c, "one")
	echo(t, c, "two")
	if n := fs.sessions.Load(); n != 1 {
		t.Fatalf("%d sessions for two flows one after the other, want 1", n)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("example.com", 80))
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			msg := strings.Repeat("x", 100000+i)
			conn.Write([]byte(msg))
			got := make([]byte, len(msg))
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(conn, got); err != nil {
				t.Error(err)
			}
			time.Sleep(100 * time.Millisecond) // stay open while the others dial
		}()
	}
	wg.Wait()
	if n := fs.sessions.Load(); n != 3 {
		t.Errorf("%d sessions after three concurrent flows (one reused), want 3", n)
	}
	c.mu.Lock()
	idle := len(c.idle)
	c.mu.Unlock()
	if idle != 3 {
		t.Errorf("%d idle sessions, want 3", idle)
	}
	time.Sleep(2500 * time.Millisecond) // two checks
	c.mu.Lock()
	idle = len(c.idle)
	c.mu.Unlock()
	if idle != 0 {
		t.Errorf("%d idle sessions after the idle timeout, want 0", idle)
	}
	echo(t, c, "three")
	if n := fs.sessions.Load(); n != 4 {
		t.Errorf("%d sessions, want 4 (a new one after the cleanup)", n)
	}
}

// TestIdlePoolCap: after more flows at once than maxIdle, the newest
// maxIdle sessions stay idle and the older ones are closed at once, not at
// the idle timeout; the kept ones still carry flows.
func TestIdlePoolCap(t *testing.T) {
	fs := newFakeServer(t, "pw", false)
	c := testClient(t, fs, "pw", node.AnyTLSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var conns []net.Conn
	for range maxIdle + 5 { // each dialled while the others are open: a session each
		conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("example.com", 80))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		// A round trip, so the server has counted the session before the
		// pool closes it: a session closed with its reply unread is reset,
		// and the server may lose the request it had not read yet.
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if _, err := conn.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, b[:]); err != nil {
			t.Fatal(err)
		}
	}
	if n := fs.sessions.Load(); n != int64(len(conns)) {
		t.Fatalf("%d sessions for %d flows open at once, want one each", n, len(conns))
	}
	c.mu.Lock()
	var all []*session
	for s := range c.all {
		all = append(all, s)
	}
	c.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
	var idle []*session
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		idle = slices.Clone(c.idle)
		n := len(c.all)
		c.mu.Unlock()
		if n == maxIdle && len(idle) == maxIdle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions, %d of them idle, after %d flows closed; want %d idle and no others", n, len(idle), len(conns), maxIdle)
		}
	}
	for _, s := range all {
		if kept := slices.Contains(idle, s); kept != (s.seq > uint64(len(all)-maxIdle)) || kept != s.alive() {
			t.Errorf("session %d: idle %v, alive %v; want the newest %d kept", s.seq, kept, s.alive(), maxIdle)
		}
	}
	echo(t, c, "again")
	if n := fs.sessions.Load(); n != int64(len(conns)) {
		t.Errorf("%d sessions, want %d (the next flow on a kept one)", n, len(conns))
	}
}

func TestWrongPassword(t *testing.T) {
	fs := newFakeServer(t, "pw", false)
	c := testClient(t, fs, "wrong", node.AnyTLSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The refusal shows on the dial or, when the request went out
	// before the server hung up, on the first read.
	conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("example.com", 80))
	if err == nil {
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 10))
	}
	if !errors.Is(err, outbound.ErrAuthRejected) || strings.Contains(err.Error(), "wrong\"") {
		t.Fatalf("read: %v, want the authentication rejected", err)
	}
}

// FuzzReadFrames feeds a session's reader arbitrary server bytes: it must
// end with an error, never panic or hang, and keep nothing it was not
// asked to.
func FuzzReadFrames(f *testing.F) {
	f.Add(appendFrameHeader(nil, cmdServerSettings, 0, 3), []byte("v=2"))
	f.Add(appendFrameHeader(nil, cmdPSH, 1, 5), []byte("hello"))
	f.Add(appendFrameHeader(nil, cmdUpdatePaddingScheme, 0, len(DefaultPaddingScheme)), []byte(DefaultPaddingScheme))
	f.Add(appendFrameHeader(nil, cmdSYNACK, 1, 4), []byte("fail"))
	f.Add(appendFrameHeader(nil, cmdAlert, 0, 2), []byte("no"))
	f.Add(appendFrameHeader(nil, cmdFIN, 1, 0), []byte{})
	f.Add(appendFrameHeader(nil, cmdHeartRequest, 0, 0), []byte{})
	// Data straight into the reader's buffer: a frame longer than it, two
	// frames back to back, a frame for another stream between, then FIN.
	f.Add(appendFrameHeader(nil, cmdPSH, 1, 300), append(bytes.Repeat([]byte{'a'}, 300), appendFrameHeader(nil, cmdFIN, 1, 0)...))
	f.Add(appendFrameHeader(nil, cmdPSH, 1, 3), append(append([]byte("abc"), appendFrameHeader(nil, cmdPSH, 1, 2)...), "de"...))
	f.Add(appendFrameHeader(nil, cmdPSH, 1, 2), append(append([]byte("ab"), appendFrameHeader(nil, cmdPSH, 9, 2)...), "xy"...))
	f.Add(appendFrameHeader(nil, cmdPSH, 1, 50), []byte("cut short"))
	f.Fuzz(func(t *testing.T, hdr, rest []byte) {
		c := &Client{all: map[*session]struct{}{}}
		c.scheme.Store(defaultScheme)
		client, server := net.Pipe()
		s := &session{c: c, conn: client, scheme: defaultScheme, settings: true, streams: map[uint32]*stream{}, done: make(chan struct{})}
		st := newStream(s, 1)
		s.streams[1] = st
		go func() {
			server.Write(append(hdr, rest...))
			server.Close()
		}()
		go io.Copy(io.Discard, server) // heartbeat answers
		done := make(chan struct{})
		go func() {
			for {
				if _, err := st.Read(make([]byte, 100)); err != nil {
					close(done)
					return
				}
			}
		}()
		s.readLoop()
		<-done
		c.wg.Wait()
		if s.alive() {
			t.Fatal("session alive after its connection ended")
		}
	})
}

// TestReadGathersFrames: frames that have arrived by the time of a Read
// go into its buffer together, each byte straight from TLS, in order.
func TestReadGathersFrames(t *testing.T) {
	fs := newFakeServer(t, "pw", false)
	c := testClient(t, fs, "pw", node.AnyTLSOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", flow.NameAddr("example.com", 80))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var want []byte
	for i := range 200 { // 200 frames each way
		msg := bytes.Repeat([]byte{byte(i)}, 100)
		want = append(want, msg...)
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the echoes arrive
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if n <= 100 {
		t.Errorf("first Read brought %d bytes: the frames waiting were not gathered", n)
	}
	got := append([]byte(nil), buf[:n]...)
	for len(got) < len(want) {
		m, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:m]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("echoed frames came back changed or out of order")
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    *node.Node
		want string
	}{
		{"nil node", nil, "anytls: node has no AnyTLS options"},
		{"no options", &node.Node{Server: "a.example", Port: 443}, "anytls: node has no AnyTLS options"},
		{"no server", &node.Node{Port: 443, AnyTLS: &node.AnyTLSOptions{Password: "p"}}, "anytls: node has no server address"},
		{"no password", &node.Node{Server: "a.example", Port: 443, AnyTLS: &node.AnyTLSOptions{}}, "anytls: a.example:443: empty password"},
		{"transport", &node.Node{Server: "a.example", Port: 443, AnyTLS: &node.AnyTLSOptions{Password: "p"}, Transport: &node.Transport{Type: node.TransportWS}},
			`anytls: a.example:443: transport "ws" is not supported (AnyTLS runs on TLS over TCP)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.n, nil)
			if err == nil {
				c.Close()
				t.Fatal("New accepted the node")
			}
			if err.Error() != tt.want {
				t.Fatalf("err = %q, want %q", err, tt.want)
			}
		})
	}
}
