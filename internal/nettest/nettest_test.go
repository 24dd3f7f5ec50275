package nettest

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

func TestTCPEcho(t *testing.T) {
	addr := TCPEcho(t)
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := bytes.Repeat([]byte("echo"), 64<<10)
	go func() {
		c.Write(msg)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c) // ends only if the echo closes after our EOF
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("echoed %d bytes, want the %d sent", len(got), len(msg))
	}
}

// TestTCPEchoCleanupClosesOpenConns checks that a connection the test left
// open does not keep the cleanup waiting, and is closed by it.
func TestTCPEchoCleanupClosesOpenConns(t *testing.T) {
	var c net.Conn
	t.Run("leaves a conn open", func(t *testing.T) {
		var err error
		c, err = net.Dial("tcp", TCPEcho(t).String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
	})
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after cleanup = %d, %v; want EOF", n, err)
	}
}

func TestUDPEcho(t *testing.T) {
	addr := UDPEcho(t)
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 65535)
	for _, size := range []int{1, 1200, 60000} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		if _, err := c.WriteToUDPAddrPort(msg, addr); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if from != addr || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("%d bytes: got %d from %v, want the same back from %v", size, n, from, addr)
		}
	}
}

func TestClosedPort(t *testing.T) {
	addr := ClosedPort(t)
	if !addr.Addr().IsLoopback() || addr.Port() == 0 {
		t.Fatalf("ClosedPort = %v, want a loopback address with a port", addr)
	}
	if c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second); err == nil {
		c.Close()
		t.Fatalf("dial to %v succeeded", addr)
	}
}
