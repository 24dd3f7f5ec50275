package process

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/skiffvpn/skiff/internal/nettest"
)

func TestParseHexAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"00000000:0035", "0.0.0.0:53"},
		{"00000000000000000000000001000000:01BB", "[::1]:443"},
		{"B80D0120000000000000000001000000:0050", "[2001:db8::1]:80"},
		{"0000000000000000FFFF00000100007F:0016", "[::ffff:127.0.0.1]:22"},
	} {
		got, ok := parseHexAddr([]byte(tc.in))
		if !ok || got != netip.MustParseAddrPort(tc.want) {
			t.Errorf("parseHexAddr(%s) = %v, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:", "zz00007F:0050", "01007F:0050", "0100007F:10000"} {
		if _, ok := parseHexAddr([]byte(bad)); ok {
			t.Errorf("parseHexAddr(%q) accepted", bad)
		}
	}
}

// TestFindsItself: a TCP connection and a UDP socket this test opens are
// found as this test binary's.
func TestFindsItself(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := nettest.Dial(t)
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	f := New()
	for _, tc := range []struct {
		network string
		src     netip.AddrPort
	}{
		{"tcp", c.LocalAddr().(*net.TCPAddr).AddrPort()},
		{"udp", u.LocalAddr().(*net.UDPAddr).AddrPort()},
	} {
		info, err := f.Find(tc.network, tc.src)
		if err != nil {
			t.Fatalf("Find(%s %v): %v", tc.network, tc.src, err)
		}
		if info.PID != os.Getpid() || filepath.Base(info.Path) != filepath.Base(exe) || info.Name() != filepath.Base(exe) {
			t.Errorf("Find(%s %v) = %+v; want pid %d, %s", tc.network, tc.src, info, os.Getpid(), exe)
		}
	}
	// A port nobody holds.
	if _, err := f.Find("tcp", netip.MustParseAddrPort("127.0.0.1:1")); err != ErrNotFound {
		t.Errorf("an unheld port: %v, want ErrNotFound", err)
	}
}

type countingFinder struct{ n int }

func (c *countingFinder) find(string, netip.AddrPort) (Info, error) {
	c.n++
	return Info{PID: 7, Path: "/usr/bin/curl"}, nil
}

func TestFinderCaches(t *testing.T) {
	os := &countingFinder{}
	f := newFinder(os, DefaultTTL)
	src := netip.MustParseAddrPort("10.0.0.2:40000")
	for range 5 {
		if info, err := f.Find("tcp", src); err != nil || info.Name() != "curl" {
			t.Fatalf("Find = %+v, %v", info, err)
		}
	}
	f.Find("udp", src)
	if os.n != 2 {
		t.Errorf("%d look-ups for 6 finds of 2 keys", os.n)
	}
	f = newFinder(os, 0)
	f.Find("tcp", src)
	f.Find("tcp", src)
	if os.n != 4 {
		t.Errorf("with no TTL the answers were kept (%d look-ups)", os.n)
	}
}

func BenchmarkFindNewSocket(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	f := newOSFinder()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.find("tcp", c.LocalAddr().(*net.TCPAddr).AddrPort()); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
