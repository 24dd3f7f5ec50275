package shadowsocks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound/internal/reqconn"
)

var testMethods = []struct {
	name      string
	multiUser bool
}{
	{"2022-blake3-aes-128-gcm", false},
	{"2022-blake3-aes-256-gcm", false},
	{"2022-blake3-chacha20-poly1305", false},
	{"2022-blake3-aes-128-gcm", true},
	{"2022-blake3-aes-256-gcm", true},
	{"aes-128-gcm", false},
	{"aes-192-gcm", false},
	{"aes-256-gcm", false},
	{"chacha20-ietf-poly1305", false},
	{"xchacha20-ietf-poly1305", false},
}

// newTestServer returns a server for method and the password its client
// uses.
func newTestServer(t testing.TB, method string, multiUser bool) (*testServer, string) {
	t.Helper()
	m := methods[method]
	s := &testServer{method: method, keyLen: m.keyLen, is2022: m.is2022, aesGCM: m.aes, xchacha: m.xchacha}
	if !m.is2022 {
		s.psks = [][]byte{evpBytesToKey("test-password", m.keyLen)}
		return s, "test-password"
	}
	n := 1
	if multiUser {
		n = 3 // two identity PSKs in front of the user's
	}
	var parts []string
	for range n {
		k := make([]byte, m.keyLen)
		rand.Read(k)
		s.psks = append(s.psks, k)
		parts = append(parts, base64.StdEncoding.EncodeToString(k))
	}
	return s, strings.Join(parts, ":")
}

// listen serves s on loopback TCP (and UDP on the same port) and returns
// the node of a client for it, and the errors of the served streams.
func listen(t testing.TB, s *testServer, password string) (*node.Node, <-chan error, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	pc, err := net.ListenPacket("udp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); pc.Close() })
	errs := make(chan error, 16)
	dsts := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { errs <- s.serveTCP(c, dsts) }()
		}
	}()
	go s.serveUDP(pc)
	return &node.Node{Name: "t", Protocol: node.Shadowsocks, Server: "127.0.0.1", Port: uint16(port),
		Shadowsocks: &node.ShadowsocksOptions{Method: s.method, Password: password}}, errs, dsts
}

func newClient(t testing.TB, n *node.Node) *Client {
	t.Helper()
	c, err := New(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var testDst = flow.NameAddr("example.com", 443)

func TestStreamEcho(t *testing.T) {
	for _, tm := range testMethods {
		name := tm.name
		if tm.multiUser {
			name += "-multiuser"
		}
		t.Run(name, func(t *testing.T) {
			s, pw := newTestServer(t, tm.name, tm.multiUser)
			n, errs, dsts := listen(t, s, pw)
			c := newClient(t, n)
			for _, size := range []int{1, 1000, 70000, 1 << 20} {
				conn, err := c.DialContext(context.Background(), "tcp", testDst)
				if err != nil {
					t.Fatal(err)
				}
				conn.SetDeadline(time.Now().Add(10 * time.Second))
				data := make([]byte, size)
				rand.Read(data)
				go conn.Write(data)
				got := make([]byte, size)
				if _, err := io.ReadFull(conn, got); err != nil {
					t.Fatalf("%d bytes: read: %v (server: %v)", size, err, drain(errs))
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("%d bytes: echo differs", size)
				}
				if d := <-dsts; d != "example.com:443" {
					t.Errorf("server saw destination %q", d)
				}
				conn.(interface{ CloseWrite() error }).CloseWrite()
				if _, err := conn.Read(got[:1]); err != io.EOF {
					t.Errorf("after the server's end: %v, want EOF", err)
				}
				conn.Close()
				if err := <-errs; err != nil {
					t.Errorf("%d bytes: server: %v", size, err)
				}
			}
		})
	}
}

func drain(errs <-chan error) error {
	select {
	case err := <-errs:
		return err
	case <-time.After(time.Second):
		return nil
	}
}

// TestReadFirst: a Read before any Write sends the request alone (with
// padding) after reqconn.FirstWriteWait; the server needs data to answer, so the
// test writes after reading started.
func TestReadFirst(t *testing.T) {
	s, pw := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	n, _, _ := listen(t, s, pw)
	conn, err := newClient(t, n).DialContext(context.Background(), "tcp", testDst)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	go func() {
		time.Sleep(2 * reqconn.FirstWriteWait)
		conn.Write([]byte("late"))
	}()
	b := make([]byte, 4)
	if _, err := io.ReadFull(conn, b); err != nil || string(b) != "late" {
		t.Fatalf("got %q, %v", b, err)
	}
}

func TestResponseChecks(t *testing.T) {
	for _, tc := range []struct {
		method string
		bad    misbehaviour
		want   string
	}{
		{"2022-blake3-aes-128-gcm", wrongSaltEcho, "does not echo the request salt"},
		{"2022-blake3-aes-256-gcm", staleTimestamp, "timestamp"},
		{"2022-blake3-chacha20-poly1305", corruptChunk, "authentication failed"},
		{"aes-128-gcm", corruptChunk, "authentication failed"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			s, pw := newTestServer(t, tc.method, false)
			s.misbehav = tc.bad
			n, _, _ := listen(t, s, pw)
			err := echoOnce(t, newClient(t, n))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), n.Address()) {
				t.Fatalf("error %v, want one naming %s and %q", err, n.Address(), tc.want)
			}
		})
	}
}

func echoOnce(t *testing.T, c *Client) error {
	conn, err := c.DialContext(context.Background(), "tcp", testDst)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("hello")); err != nil {
		return err
	}
	b := make([]byte, 5)
	_, err = io.ReadFull(conn, b)
	return err
}

func TestReplayedResponseSalt(t *testing.T) {
	s, pw := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	s.salt = make([]byte, 16) // the same response salt every time
	n, _, _ := listen(t, s, pw)
	c := newClient(t, n)
	if err := echoOnce(t, c); err != nil {
		t.Fatalf("first response: %v", err)
	}
	if err := echoOnce(t, c); err == nil || !strings.Contains(err.Error(), "salt seen before") {
		t.Fatalf("replayed salt: %v", err)
	}
}

func TestWrongPassword(t *testing.T) {
	s, _ := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	_, other := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	n, errs, _ := listen(t, s, other)
	err := echoOnce(t, newClient(t, n))
	if err == nil || !strings.Contains(err.Error(), "wrong password") {
		t.Fatalf("client: %v", err)
	}
	if err := <-errs; err == nil {
		t.Fatal("server accepted a request under another key")
	}
	if strings.Contains(err.Error(), other) {
		t.Fatal("error contains the password")
	}
}

func TestUDPEcho(t *testing.T) {
	for _, tm := range testMethods {
		name := tm.name
		if tm.multiUser {
			name += "-multiuser"
		}
		t.Run(name, func(t *testing.T) {
			s, pw := newTestServer(t, tm.name, tm.multiUser)
			n, _, _ := listen(t, s, pw)
			c := newClient(t, n)
			dst := flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.7:53"))
			pc, err := c.ListenPacket(context.Background(), dst)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			pc.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 65535)
			for _, size := range []int{0, 64, 3000, 30000} {
				data := make([]byte, size)
				rand.Read(data)
				if _, err := pc.WriteTo(data, dst); err != nil {
					t.Fatal(err)
				}
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					t.Fatalf("%d bytes: %v", size, err)
				}
				if !bytes.Equal(buf[:n], data) || from.(flow.Addr) != dst {
					t.Fatalf("%d bytes: got %d bytes from %v", size, n, from)
				}
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	psk16 := base64.StdEncoding.EncodeToString(make([]byte, 16))
	for _, tc := range []struct {
		method, password, plugin, opts, want string
	}{
		{"none", "", "", "", "unencrypted"},
		{"rc4-md5", "secret-pw", "", "", "stream cipher"},
		{"aes-128-cfb", "secret-pw", "", "", "stream cipher"},
		{"rot13", "secret-pw", "", "", "unknown method"},
		{"2022-blake3-aes-256-gcm", psk16, "", "", "base64 of a key"},
		{"2022-blake3-aes-128-gcm", "secret-pw", "", "", "base64 of a key"},
		{"2022-blake3-chacha20-poly1305", base64.StdEncoding.EncodeToString(make([]byte, 32)) + ":" + base64.StdEncoding.EncodeToString(make([]byte, 32)), "", "", "needs an AES method"},
		{"aes-128-gcm", "", "", "", "empty"},
		{"aes-128-gcm", "secret-pw", "kcptun", "", `plugin "kcptun"`},
		{"aes-128-gcm", "secret-pw", "obfs-local", "obfs=quic", "not a mode"},
		{"aes-128-gcm", "secret-pw", "obfs-local", "obfs=http;weird=1", `"weird"`},
		{"aes-128-gcm", "secret-pw", "v2ray-plugin", "mode=quic", "quic"},
		{"aes-128-gcm", "secret-pw", "v2ray-plugin", "tls;fastOpen", `"fastOpen"`},
		{"aes-128-gcm", "secret-pw", "", "obfs=http", "without a plugin"},
	} {
		n := &node.Node{Protocol: node.Shadowsocks, Server: "ss.example", Port: 8388,
			Shadowsocks: &node.ShadowsocksOptions{Method: tc.method, Password: tc.password, Plugin: tc.plugin, PluginOpts: tc.opts}}
		_, err := New(n, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ss.example:8388") {
			t.Errorf("%s %s %s: %v, want an error naming the server and %q", tc.method, tc.plugin, tc.opts, err, tc.want)
			continue
		}
		if tc.password != "" && strings.Contains(err.Error(), tc.password) {
			t.Errorf("%s: the error shows the password", tc.method)
		}
	}
}

func TestNewAcceptsPlugins(t *testing.T) {
	for _, tc := range []struct{ plugin, opts string }{
		{"obfs-local", "obfs=http;obfs-host=www.bing.com"},
		{"simple-obfs", "obfs=http"},
		{"obfs-local", "obfs=tls;obfs-host=www.bing.com"},
		{"v2ray-plugin", ""},
		{"v2ray-plugin", "mode=websocket;tls;host=cdn.example;path=/ws;mux=4"},
		{"v2ray-plugin", "tls;skip-cert-verify=true"},
	} {
		n := &node.Node{Protocol: node.Shadowsocks, Server: "ss.example", Port: 443,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "pw", Plugin: tc.plugin, PluginOpts: tc.opts}}
		if _, err := New(n, nil); err != nil {
			t.Errorf("%s;%s: %v", tc.plugin, tc.opts, err)
		}
	}
}

func TestParsePluginOpts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []pluginOpt
		bad  bool
	}{
		{"", nil, false},
		{"obfs=http;obfs-host=a.b", []pluginOpt{{"obfs", "http"}, {"obfs-host", "a.b"}}, false},
		{"tls;host=x", []pluginOpt{{"tls", ""}, {"host", "x"}}, false},
		{`path=/a\;b\=c;mux=1`, []pluginOpt{{"path", "/a;b=c"}, {"mux", "1"}}, false},
		{"a=b=c", []pluginOpt{{"a", "b=c"}}, false},
		{`x\`, nil, true},
		{"=v", nil, true},
	} {
		got, err := parsePluginOpts(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		if !tc.bad && (len(got) != len(tc.want) || (len(got) > 0 && !equalOpts(got, tc.want))) {
			t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
		}
	}
}

func equalOpts(a, b []pluginOpt) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPacketWindow(t *testing.T) {
	var w packetWindow
	for _, tc := range []struct {
		id uint64
		ok bool
	}{
		{0, true}, {0, false}, {2, true}, {1, true}, {1, false}, {5000, true}, {2, false},
		{5000 - packetWindowSize, true}, {5000 - packetWindowSize - 1, false}, {4999, true}, {1 << 40, true}, {5000, false},
	} {
		if got := w.check(tc.id); got != tc.ok {
			t.Errorf("id %d: %v, want %v", tc.id, got, tc.ok)
		}
	}
}

func TestSaltFilter(t *testing.T) {
	var f saltFilter
	now := time.Now()
	a, b := []byte("salt-a"), []byte("salt-b")
	if !f.add(a, now) || !f.add(b, now) || f.add(a, now.Add(time.Second)) {
		t.Fatal("a fresh salt refused, or a repeated one accepted")
	}
	if !f.add(a, now.Add(saltWindow+time.Second)) {
		t.Fatal("a salt older than the window is still refused")
	}
}

func TestEVPBytesToKey(t *testing.T) {
	// OpenSSL: EVP_BytesToKey(md5, no salt, "password", 1 iteration).
	got := evpBytesToKey("password", 32)
	const want = "5f4dcc3b5aa765d61d8327deb882cf992b95990a9151374abd8ff8c5a7a0fe08"
	if h := hexString(got); h != want {
		t.Fatalf("got %s, want %s", h, want)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// memConn is a transport whose writes go to w and reads come from r.
type memConn struct {
	net.Conn
	w io.Writer
	r io.Reader
}

func (m *memConn) Write(p []byte) (int, error) { return m.w.Write(p) }
func (m *memConn) Read(p []byte) (int, error)  { return m.r.Read(p) }
func (m *memConn) Close() error                { return nil }

// TestStreamAllocs: an established stream seals and opens its chunks
// without allocating.
func TestStreamAllocs(t *testing.T) {
	s, pw := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	c := newClient(t, &node.Node{Protocol: node.Shadowsocks, Server: "127.0.0.1", Port: 1,
		Shadowsocks: &node.ShadowsocksOptions{Method: s.method, Password: pw}})
	var sent bytes.Buffer
	resp := new(bytes.Buffer)
	sc := newStreamConn(&memConn{w: &sent, r: resp}, c, testDst)
	data := make([]byte, 32<<10)
	if _, err := sc.Write(data); err != nil {
		t.Fatal(err)
	}
	// The server's answer: salt, header echoing the request salt, then
	// enough chunks for every read below.
	reqSalt := sent.Bytes()[:16]
	rsalt := make([]byte, 16)
	rand.Read(rsalt)
	out := newCodec(s.sessionAEAD(rsalt))
	hdr := []byte{1}
	hdr = binaryAppendU64(hdr, uint64(time.Now().Unix()))
	hdr = append(hdr, reqSalt...)
	hdr = append(hdr, byte(len(data)>>8), byte(len(data)))
	resp.Write(rsalt)
	resp.Write(out.seal(hdr))
	resp.Write(out.seal(data))
	for range 200 {
		resp.Write(out.chunk(data))
	}
	buf := make([]byte, len(data))
	round := func() {
		sent.Reset()
		if _, err := sc.Write(data); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(sc, buf); err != nil {
			t.Fatal(err)
		}
	}
	round()
	if a := testing.AllocsPerRun(100, round); a > 0 {
		t.Errorf("%.1f allocations per 32 KiB written and read, want 0", a)
	}
}

func binaryAppendU64(b []byte, v uint64) []byte {
	for i := 7; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}
