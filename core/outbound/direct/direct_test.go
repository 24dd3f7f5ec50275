package direct

import (
	"context"
	"io"
	"net"
	"net/netip"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/internal/nettest"
)

func TestDialContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	d := New(nil)
	c, err := d.DialContext(context.Background(), "tcp", flow.NameAddr("localhost", port))
	if err != nil {
		// localhost may resolve to ::1 first on some hosts; the IP must work.
		c, err = d.DialContext(context.Background(), "tcp", flow.NameAddr("127.0.0.1", port))
	}
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "hi" {
		t.Errorf("read %q", got)
	}
	ln.Close()
	if _, err := d.DialContext(context.Background(), "tcp", flow.NameAddr("127.0.0.1", port)); err == nil {
		t.Error("dial to a closed port succeeded")
	}
}

// TestListenPacket sends to an IP and to a name, checks that replies come
// back with a flow.Addr source, and that the per-datagram path does not
// allocate.
func TestListenPacket(t *testing.T) {
	echoAP := nettest.UDPEcho(t)
	ipDst := flow.AddrFromAddrPort(echoAP)
	pc, err := New(nil).ListenPacket(context.Background(), ipDst)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()

	buf := make([]byte, 2048)
	ping := []byte("ping")
	for _, dst := range []net.Addr{ipDst, flow.NameAddr("localhost", echoAP.Port()), net.UDPAddrFromAddrPort(echoAP)} {
		roundTrip := func() {
			if _, err := pc.WriteTo(ping, dst); err != nil {
				t.Fatalf("WriteTo %v: %v", dst, err)
			}
			n, src, err := pc.ReadFrom(buf)
			if err != nil || string(buf[:n]) != "ping" {
				t.Fatalf("ReadFrom: %q, %v", buf[:n], err)
			}
			if fa, ok := src.(flow.Addr); !ok || fa.AddrPort() != netip.AddrPortFrom(echoAP.Addr(), echoAP.Port()) {
				t.Fatalf("source %#v, want flow.Addr %v", src, echoAP)
			}
		}
		roundTrip()
		if _, ok := dst.(*net.UDPAddr); ok {
			continue // the caller's boxing, not ours
		}
		if allocs := testing.AllocsPerRun(50, roundTrip); allocs != 0 {
			t.Errorf("%v: %.1f allocations per round trip, want 0", dst, allocs)
		}
	}
	if _, err := pc.WriteTo([]byte("x"), flow.NameAddr("no-such-host.invalid", 53)); err == nil {
		t.Error("WriteTo an unresolvable name succeeded")
	}
}
