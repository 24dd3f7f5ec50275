package shadowsocks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestIdleStreamHoldsNoBuffer checks that a relayed stream that goes quiet
// after a bulk echo holds no read buffer, neither the stream's own nor the
// relay's (WaitRead), and that the next bytes still come through.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	s, pw := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	n, errs, _ := listen(t, s, pw)
	c := newClient(t, n)
	up, err := c.DialContext(context.Background(), "tcp", testDst)
	if err != nil {
		t.Fatal(err)
	}
	sc := up.(halfCloser).streamConn
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	app, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	appRelay, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	app.SetDeadline(time.Now().Add(20 * time.Second))
	bs := relay.NewBuffers(0)
	done := make(chan error, 1)
	go func() { done <- relay.Stream(context.Background(), bs, appRelay, up, nil, nil) }()

	echo := func(data []byte) {
		t.Helper()
		go app.Write(data)
		got := make([]byte, len(data))
		if _, err := io.ReadFull(app, got); err != nil {
			t.Fatalf("read: %v (server: %v)", err, drain(errs))
		}
		if !bytes.Equal(got, data) {
			t.Fatal("the echo came back altered")
		}
	}
	idle := func(what string) {
		t.Helper()
		nettest.Eventually(t, what, func() (bool, string) {
			sc.rmu.Lock()
			own := sc.rbuf != nil
			sc.rmu.Unlock()
			return !own && bs.Held() == 0, fmt.Sprintf("stream buffer held %v, relay buffers held %d", own, bs.Held())
		})
	}
	echo(bytes.Repeat([]byte("0123456789abcdef"), 64<<10))
	idle("after a 1 MiB echo")
	echo([]byte("next"))
	idle("idle again")
	app.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
