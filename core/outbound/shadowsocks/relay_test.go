package shadowsocks

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/relay"
)

// frameCounter counts the writes that went out through WriteFrame's
// sealing in place.
type frameCounter struct {
	*streamConn
	framed int
}

func (f *frameCounter) WriteFrame(b []byte) (int, error) {
	if n := len(b) - 2 - 2*tagLen; n > 0 && n <= f.maxChunk && f.reqSent.Load() {
		f.framed++
	}
	return f.streamConn.WriteFrame(b)
}

// TestRelaySealsInPlace sends 4 MiB each way through relay.Stream over a
// stream of every method: the relay hands the stream its buffer with head
// and tail room (relay.TailRoomer), a read that fits one chunk is sealed
// in it (all of them with 2022; with the classic methods, whose chunks
// hold 16 KiB, the small reads, while the relay's 60 KiB ones take Write's
// way), and the echo comes back intact either way.
func TestRelaySealsInPlace(t *testing.T) {
	for _, method := range []string{"2022-blake3-aes-128-gcm", "2022-blake3-chacha20-poly1305", "aes-256-gcm"} {
		t.Run(method, func(t *testing.T) {
			s, pw := newTestServer(t, method, false)
			n, errs, _ := listen(t, s, pw)
			c := newClient(t, n)
			up, err := c.DialContext(context.Background(), "tcp", testDst)
			if err != nil {
				t.Fatal(err)
			}
			sc := up.(halfCloser).streamConn
			fc := &frameCounter{streamConn: sc}
			var _ relay.TailRoomer = fc
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			app, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			appRelay, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			app.SetDeadline(time.Now().Add(20 * time.Second))
			done := make(chan error, 1)
			go func() { done <- relay.Stream(context.Background(), relay.NewBuffers(0), appRelay, fc, nil, nil) }()

			data := make([]byte, 4<<20)
			rand.Read(data)
			go func() { app.Write(data); app.(*net.TCPConn).CloseWrite() }()
			got, err := io.ReadAll(app)
			if err != nil {
				t.Fatalf("read: %v (server: %v)", err, drain(errs))
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("echo of %d bytes came back as %d bytes, or altered", len(data), len(got))
			}
			app.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if fc.framed == 0 {
				t.Errorf("no write sealed in place")
			}
		})
	}
}
