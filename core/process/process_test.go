//go:build linux || windows || darwin

package process

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestFindsItself: TCP connections over IPv4 and IPv6 and a UDP socket
// that this test opens are found as this test binary's.
func TestFindsItself(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type flow struct {
		network string
		src     netip.AddrPort
	}
	flows := []flow{{"tcp", nettest.Dial(t).LocalAddr().(*net.TCPAddr).AddrPort()}}
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback, IPv6 TCP not tried: %v", err)
	} else {
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		src := c.LocalAddr().(*net.TCPAddr).AddrPort()
		if underWine() {
			// Wine 8.0's GetExtendedTcpTable gives its programs' IPv6
			// sockets the owner PID 0.
			if _, err := New().Find("tcp", src); err != ErrNotFound {
				t.Errorf("under Wine, IPv6 TCP %v: %v; want ErrNotFound (Wine reports PID 0)", src, err)
			}
			t.Logf("under Wine, IPv6 sockets have no owner PID: IPv6 TCP not found, as expected here")
		} else {
			flows = append(flows, flow{"tcp", src})
		}
	}
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		u, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	}
	switch {
	case err == nil:
		defer u.Close()
		flows = append(flows, flow{"udp", u.LocalAddr().(*net.UDPAddr).AddrPort()})
	case runtime.GOOS == "windows" && errors.Is(err, syscall.Errno(10045)):
		// Wine 8.0 answers Go's SIO_UDP_CONNRESET with WSAEOPNOTSUPP
		// (see /work/shared/reference/platforms.md); Windows does not.
		t.Logf("UDP sockets do not open on this system (Wine?), the UDP look-up is not tried: %v", err)
	default:
		t.Fatal(err)
	}
	f := New()
	for _, tc := range flows {
		info, err := f.Find(tc.network, tc.src)
		if err != nil {
			t.Fatalf("Find(%s %v): %v", tc.network, tc.src, err)
		}
		if info.PID != os.Getpid() || !sameName(info.Name(), filepath.Base(exe)) {
			t.Errorf("Find(%s %v) = %+v; want pid %d, %s", tc.network, tc.src, info, os.Getpid(), exe)
		}
		t.Logf("%s %v: %+v", tc.network, tc.src, info)
	}
	// A port nobody holds.
	if _, err := f.Find("tcp", netip.MustParseAddrPort("127.0.0.1:1")); err != ErrNotFound {
		t.Errorf("an unheld port: %v, want ErrNotFound", err)
	}
}

// sameName compares executable names as the system does (Windows ignores
// case).
func sameName(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
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
