package mixed

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		allow bool
		ok    bool
	}{
		{"127.0.0.1:1080", false, true},
		{"127.0.0.2:1080", false, true},
		{"[::1]:1080", false, true},
		{"localhost:1080", false, true},
		{"0.0.0.0:1080", false, false},
		{":1080", false, false},
		{"192.168.1.2:1080", false, false},
		{"[::]:1080", false, false},
		{"example.com:1080", false, false},
		{"0.0.0.0:1080", true, true},
		{"127.0.0.1", false, false}, // no port
	} {
		err := checkListen(tc.addr, tc.allow)
		if (err == nil) != tc.ok {
			t.Errorf("checkListen(%q, %v) = %v, want ok=%v", tc.addr, tc.allow, err, tc.ok)
		}
	}
}

func TestSOCKSAddr(t *testing.T) {
	for _, a := range []flow.Addr{
		{IP: netip.MustParseAddr("10.1.2.3"), Port: 80},
		{IP: netip.MustParseAddr("2001:db8::1"), Port: 443},
		{Name: "example.com", Port: 53},
	} {
		b := appendSOCKSAddr([]byte{0xAA}, a)
		got, n, err := parseSOCKSAddr(b[1:])
		if err != nil || got != a || n != len(b)-1 {
			t.Errorf("round trip of %v: %v, %d, %v", a, got, n, err)
		}
		// Every truncation is an error, never a panic.
		for i := 0; i < len(b)-1; i++ {
			if _, _, err := parseSOCKSAddr(b[1 : 1+i]); err == nil {
				t.Errorf("%v truncated to %d bytes parsed", a, i)
			}
		}
		got, err = readSOCKSAddr(bytes.NewReader(b[1:]))
		if err != nil || got != a {
			t.Errorf("readSOCKSAddr(%v) = %v, %v", a, got, err)
		}
	}
	if _, _, err := parseSOCKSAddr([]byte{9, 0, 0}); err != errAtyp {
		t.Errorf("unknown ATYP: %v", err)
	}
}

// TestReadSOCKSAddrNameLengths reads domain names at the boundaries of the
// length byte: 0 (refused), 1, 254 and 255 (RFC 1928's maximum, which once
// overran the reader's buffer), each also truncated by one byte.
func TestReadSOCKSAddrNameLengths(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{{0, false}, {1, true}, {254, true}, {255, true}} {
		name := strings.Repeat("a", tc.n)
		b := append([]byte{atypDomain, byte(tc.n)}, name...)
		b = append(b, 0x01, 0xbb)
		got, err := readSOCKSAddr(bytes.NewReader(b))
		if tc.ok {
			want := flow.Addr{Name: name, Port: 443}
			if err != nil || got != want {
				t.Errorf("%d-byte name: got %+v, %v; want %+v", tc.n, got, err, want)
			}
		} else if err == nil {
			t.Errorf("%d-byte name: accepted %+v", tc.n, got)
		}
		// One byte short: an error, never a panic or a short address.
		if _, err := readSOCKSAddr(bytes.NewReader(b[:len(b)-1])); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%d-byte name truncated: err = %v, want unexpected EOF", tc.n, err)
		}
	}
	// A reader that ends right after ATYP or the length byte.
	for _, b := range [][]byte{{atypDomain}, {atypIPv4, 1, 2}, {atypIPv6}} {
		if _, err := readSOCKSAddr(bytes.NewReader(b)); err == nil {
			t.Errorf("readSOCKSAddr(%x) accepted a truncated address", b)
		}
	}
}

// TestSOCKSPacketConnNoAlloc checks that the UDP association's hot path
// does not allocate per datagram, for IP and name destinations.
func TestSOCKSPacketConnNoAlloc(t *testing.T) {
	relaySock, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer relaySock.Close()
	client, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	clientAP := client.LocalAddr().(*net.UDPAddr).AddrPort()
	relayAP := relaySock.LocalAddr().(*net.UDPAddr).AddrPort()
	pc := &socksPacketConn{UDPConn: relaySock, clientIP: clientAP.Addr()}

	for _, dst := range []flow.Addr{
		{IP: netip.MustParseAddr("192.0.2.1"), Port: 53},
		{Name: "dns.example", Port: 53},
	} {
		dgram := appendSOCKSAddr([]byte{0, 0, 0}, dst)
		dgram = append(dgram, "payload"...)
		buf := make([]byte, 2048)
		reply := []byte("answer")
		var from net.Addr = dst
		rbuf := make([]byte, 2048)
		roundTrip := func() {
			client.WriteToUDPAddrPort(dgram, relayAP)
			n, addr, err := pc.ReadFrom(buf)
			if err != nil || string(buf[:n]) != "payload" || addr.(flow.Addr) != dst {
				t.Fatalf("ReadFrom = %q, %v, %v", buf[:n], addr, err)
			}
			if _, err := pc.WriteTo(reply, from); err != nil {
				t.Fatal(err)
			}
			n, _, err = client.ReadFromUDPAddrPort(rbuf)
			if err != nil || !bytes.HasSuffix(rbuf[:n], reply) {
				t.Fatalf("client got %q, %v", rbuf[:n], err)
			}
		}
		roundTrip() // warm the caches
		if allocs := testing.AllocsPerRun(100, roundTrip); allocs != 0 {
			t.Errorf("%v: %.1f allocations per datagram round trip, want 0", dst, allocs)
		}
	}
}

// TestSOCKSPacketConnFilters checks that datagrams from anyone but the
// client, and fragments, are dropped.
func TestSOCKSPacketConnFilters(t *testing.T) {
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	relaySock, client, stranger := listen(), listen(), listen()
	relayAP := relaySock.LocalAddr().(*net.UDPAddr).AddrPort()
	clientAP := client.LocalAddr().(*net.UDPAddr).AddrPort()
	pc := &socksPacketConn{UDPConn: relaySock, clientIP: clientAP.Addr(), client: clientAP}

	dst := flow.Addr{IP: netip.MustParseAddr("192.0.2.1"), Port: 7}
	dgram := func(frag byte, payload string) []byte {
		return append(appendSOCKSAddr([]byte{0, 0, frag}, dst), payload...)
	}
	stranger.WriteToUDPAddrPort(dgram(0, "from a stranger"), relayAP)
	client.WriteToUDPAddrPort(dgram(1, "a fragment"), relayAP)
	client.WriteToUDPAddrPort([]byte{0, 0}, relayAP) // too short
	client.WriteToUDPAddrPort(dgram(0, "good"), relayAP)
	buf := make([]byte, 2048)
	n, addr, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "good" || addr.(flow.Addr) != dst {
		t.Errorf("ReadFrom = %q, %v, %v; want only the client's whole datagram", buf[:n], addr, err)
	}
}
