package core

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/inbound/mixed"
	"github.com/skiffvpn/skiff/core/outbound/direct"
	"github.com/skiffvpn/skiff/core/route"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// proxy runs the mixed inbound on loopback with the engine and the direct
// outbound: the real path of a flow, with local servers as destinations.
type proxy struct {
	addr  string
	stats *stats.Stats
}

func startProxy(t testing.TB) *proxy {
	t.Helper()
	st := stats.New()
	eng := NewEngine(&route.Final{Name: "direct", Outbound: direct.New(nil)}, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv, err := mixed.Listen(mixed.Config{Listen: "127.0.0.1:0"}, eng)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &proxy{addr: srv.Addr().String(), stats: st}
}

// socksRequest opens a SOCKS5 connection to proxy and sends cmd for
// host:port (host a name or an IP). It returns the conn and the reply.
func socksRequest(t testing.TB, proxy string, cmd byte, host string, port uint16) (net.Conn, byte, netip.AddrPort) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := []byte{5, 1, 0, 5, cmd, 0}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is4() {
		req = append(req, 1)
		req = append(req, ip.AsSlice()...)
	} else if err == nil {
		req = append(req, 4)
		req = append(req, ip.AsSlice()...)
	} else {
		req = append(req, 3, byte(len(host)))
		req = append(req, host...)
	}
	req = binary.BigEndian.AppendUint16(req, port)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var greet [2]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil || greet != [2]byte{5, 0} {
		t.Fatalf("greeting reply %v, %v", greet, err)
	}
	var rep [4]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if rep[3] != 1 {
		t.Fatalf("reply address type %d, want IPv4", rep[3])
	}
	var bnd [6]byte
	if _, err := io.ReadFull(c, bnd[:]); err != nil {
		t.Fatalf("reply address: %v", err)
	}
	c.SetDeadline(time.Time{})
	return c, rep[1], netip.AddrPortFrom(netip.AddrFrom4([4]byte(bnd[:4])), binary.BigEndian.Uint16(bnd[4:]))
}

func splitPort(t testing.TB, addr string) (string, uint16) {
	ap := netip.MustParseAddrPort(addr)
	return ap.Addr().String(), ap.Port()
}

func TestSOCKSConnect(t *testing.T) {
	p := startProxy(t)
	echo := nettest.TCPEcho(t).String()
	_, port := splitPort(t, echo)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			c, rep, _ := socksRequest(t, p.addr, 1, host, port)
			if rep != 0 {
				t.Fatalf("reply %#x, want success", rep)
			}
			msg := bytes.Repeat([]byte(host), 10_000)
			go c.Write(msg)
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("echo: %v", err)
			}
			conns := p.stats.Connections()
			if len(conns) != 1 || conns[0].Outbound != "direct" || conns[0].Inbound != "socks" ||
				conns[0].Destination != net.JoinHostPort(host, fmt.Sprint(port)) {
				t.Fatalf("connection table = %+v", conns)
			}
			c.(*net.TCPConn).CloseWrite()
			if _, err := c.Read(got[:1]); err != io.EOF {
				t.Errorf("after half-close: %v, want EOF passed back", err)
			}
			waitFor(t, func() bool { return p.stats.ConnCount() == 0 })
		})
	}
	if up, down := p.stats.Totals(); up != 9*10_000+9*10_000 || down != up {
		t.Errorf("totals %d/%d, want %d both ways", up, down, 18*10_000)
	}
}

func TestSOCKSConnectFailure(t *testing.T) {
	p := startProxy(t)
	_, port := splitPort(t, nettest.ClosedPort(t).String())
	for _, tc := range []struct {
		host string
		want byte
	}{
		{"127.0.0.1", 0x05},            // connection refused
		{"no-such-host.invalid", 0x04}, // host unreachable: the name does not resolve
	} {
		_, rep, _ := socksRequest(t, p.addr, 1, tc.host, port)
		if rep != tc.want {
			t.Errorf("%s: reply %#x, want %#x", tc.host, rep, tc.want)
		}
	}
	if n := p.stats.ConnCount(); n != 0 {
		t.Errorf("%d connections tracked after failed dials", n)
	}
}

func TestSOCKSUnsupportedCommand(t *testing.T) {
	p := startProxy(t)
	_, rep, _ := socksRequest(t, p.addr, 2 /* BIND */, "127.0.0.1", 80)
	if rep != 0x07 {
		t.Errorf("BIND reply %#x, want 0x07", rep)
	}
}

func TestSOCKSUDPAssociate(t *testing.T) {
	p := startProxy(t)
	echo, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := echo.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			echo.WriteToUDPAddrPort(append([]byte("re:"), buf[:n]...), from)
		}
	}()
	echoAP := echo.LocalAddr().(*net.UDPAddr).AddrPort()

	ctrl, rep, relayAP := socksRequest(t, p.addr, 3, "0.0.0.0", 0)
	if rep != 0 {
		t.Fatalf("UDP ASSOCIATE reply %#x", rep)
	}
	if relayAP.Addr() != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("relay address %v, want on 127.0.0.1 like the TCP listener", relayAP)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()

	datagram := func(frag byte, dstIP netip.AddrPort, payload string) []byte {
		b := []byte{0, 0, frag, 1}
		ip := dstIP.Addr().As4()
		b = append(b, ip[:]...)
		b = binary.BigEndian.AppendUint16(b, dstIP.Port())
		return append(b, payload...)
	}
	buf := make([]byte, 2048)
	for i, payload := range []string{"one", "two", "three"} {
		if i == 1 {
			// A fragment is dropped: its payload never comes back.
			uc.WriteToUDPAddrPort(datagram(1, echoAP, "fragment"), relayAP)
		}
		if _, err := uc.WriteToUDPAddrPort(datagram(0, echoAP, payload), relayAP); err != nil {
			t.Fatal(err)
		}
		uc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		want := datagram(0, echoAP, "re:"+payload)
		if !bytes.Equal(buf[:n], want) {
			t.Fatalf("reply %d = %q, want %q", i, buf[:n], want)
		}
	}
	conns := p.stats.Connections()
	if len(conns) != 1 || conns[0].Network != "udp" || conns[0].Destination != echoAP.String() {
		t.Errorf("connection table = %+v", conns)
	}
	// Closing the TCP control connection ends the association.
	ctrl.Close()
	waitFor(t, func() bool { return p.stats.ConnCount() == 0 })
	if up, down := p.stats.Totals(); up != 11 || down != 20 {
		t.Errorf("totals %d/%d, want 11/20 (the fragment not counted)", up, down)
	}
}

// httpConnect sends CONNECT for target and returns the conn, the status
// code and a reader positioned after the response header.
func httpConnect(t testing.TB, proxy, target string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return c, br, resp
}

func TestHTTPConnect(t *testing.T) {
	p := startProxy(t)
	c, br, resp := httpConnect(t, p.addr, nettest.TCPEcho(t).String())
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	io.WriteString(c, "hello through CONNECT")
	got := make([]byte, len("hello through CONNECT"))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "hello through CONNECT" {
		t.Fatalf("echo %q, %v", got, err)
	}

	_, _, resp = httpConnect(t, p.addr, nettest.ClosedPort(t).String())
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "refused") {
		t.Errorf("CONNECT to a closed port: %d %q, want 502 saying why", resp.StatusCode, body)
	}
}

func TestHTTPPlain(t *testing.T) {
	p := startProxy(t)
	var upstreamConns atomic.Int32
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Connection") != "" || r.RequestURI != "/path?q=1" {
			http.Error(w, "proxy headers or absolute URI leaked: "+r.RequestURI, 500)
			return
		}
		fmt.Fprintf(w, "hello %s", r.Header.Get("X-Test"))
	}))
	origin.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			upstreamConns.Add(1)
		}
	}
	origin.Start()
	defer origin.Close()

	proxyURL, _ := url.Parse("http://" + p.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 10 * time.Second}
	reused := 0
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("GET", origin.URL+"/path?q=1", nil)
		req.Header.Set("X-Test", fmt.Sprint(i))
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) {
				if ci.Reused {
					reused++
				}
			},
		}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != fmt.Sprintf("hello %d", i) {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if reused != 2 || upstreamConns.Load() != 1 {
		t.Errorf("client reused its proxy connection %d times (want 2), origin saw %d connections (want 1)",
			reused, upstreamConns.Load())
	}

	// A response whose end is the server closing (HTTP/1.0, no length).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		http.ReadRequest(bufio.NewReader(c))
		io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")
		c.Close()
	}()
	start := time.Now()
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "until close" || time.Since(start) > 2*time.Second {
		t.Errorf("close-delimited response: %q after %v", body, time.Since(start))
	}

	resp, err = client.Get("http://" + nettest.ClosedPort(t).String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("plain request to a closed port: %d, want 502", resp.StatusCode)
	}
}

func TestCloseConnection(t *testing.T) {
	p := startProxy(t)
	_, port := splitPort(t, nettest.TCPEcho(t).String())
	c, rep, _ := socksRequest(t, p.addr, 1, "127.0.0.1", port)
	if rep != 0 {
		t.Fatalf("reply %#x", rep)
	}
	var id uint64
	waitFor(t, func() bool {
		list := p.stats.Connections()
		if len(list) == 1 {
			id = list[0].ID
		}
		return len(list) == 1
	})
	if !p.stats.CloseConnection(id) {
		t.Fatal("CloseConnection reported false")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("read after CloseConnection succeeded")
	}
	waitFor(t, func() bool { return p.stats.ConnCount() == 0 })
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRateLimit(t *testing.T) {
	var r rateLimit
	if ok, n := r.allow(time.Hour); !ok || n != 0 {
		t.Fatalf("first event: %v, %d", ok, n)
	}
	for i := 0; i < 3; i++ {
		if ok, _ := r.allow(time.Hour); ok {
			t.Fatal("event within the period allowed")
		}
	}
	r.last = time.Now().Add(-2 * time.Hour)
	if ok, n := r.allow(time.Hour); !ok || n != 3 {
		t.Errorf("after the period: %v, %d suppressed; want true, 3", ok, n)
	}
}
