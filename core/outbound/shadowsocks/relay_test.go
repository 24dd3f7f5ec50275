package shadowsocks

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/relay"
	"github.com/skiffvpn/skiff/core/relay/relaytest"
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
			f := relaytest.Relay(t, fc)
			app := f.App
			app.SetDeadline(time.Now().Add(20 * time.Second))

			// A small message first, echoed before the bulk: a read
			// that fits one chunk whatever the timing (the relay reads
			// whatever has arrived once its source is readable, so the
			// bulk's reads may all be large).
			small := []byte("one chunk, sealed in place")
			if _, err := app.Write(small); err != nil {
				t.Fatal(err)
			}
			back := make([]byte, len(small))
			if _, err := io.ReadFull(app, back); err != nil || !bytes.Equal(back, small) {
				t.Fatalf("small echo: %q, %v", back, err)
			}
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
			if err := <-f.Done(); err != nil {
				t.Fatal(err)
			}
			if fc.framed == 0 {
				t.Errorf("no write sealed in place")
			}
		})
	}
}

// BenchmarkRelayDownload moves 64 MiB per iteration from a server through
// relay.Stream to an app's TCP conn, with the server's chunks of the sizes
// below: what the client's read side costs per byte (the server and the
// app run in the same process and are counted too).
func BenchmarkRelayDownload(b *testing.B) {
	for _, bc := range []struct {
		method string
		chunk  int
	}{
		{"2022-blake3-aes-128-gcm", 0xffff},
		{"2022-blake3-aes-128-gcm", 16 << 10},
		{"aes-128-gcm", 0x3fff},
	} {
		b.Run(fmt.Sprintf("%s/%d", bc.method, bc.chunk), func(b *testing.B) {
			const size = 64 << 20
			s, pw := newTestServer(b, bc.method, false)
			s.source, s.sourceChunk = size, bc.chunk
			n, _, _ := listen(b, s, pw)
			c := newClient(b, n)
			bufs := relay.NewBuffers(0)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			buf := make([]byte, 128<<10)
			b.SetBytes(size)
			var writes atomic.Int64
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				up, err := c.DialContext(context.Background(), "tcp", testDst)
				if err != nil {
					b.Fatal(err)
				}
				app, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				appRelay, err := ln.Accept()
				if err != nil {
					b.Fatal(err)
				}
				go relay.Stream(context.Background(), bufs, &writeCounter{Conn: appRelay, n: &writes}, up, nil, nil)
				app.Write([]byte{1})
				got := 0
				for got < size+1 {
					m, err := app.Read(buf)
					got += m
					if err != nil {
						b.Fatalf("after %d bytes: %v", got, err)
					}
				}
				app.Close()
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/size, "cpu-ns/B")
			b.ReportMetric(float64(writes.Load())/float64(b.N)/(size>>20), "app-writes/MiB")
		})
	}
}

// writeCounter counts the writes to its conn.
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.n.Add(1)
	return w.Conn.Write(p)
}

// cpuTime is the CPU time the process has used (user and system): on a
// machine shared with other work, a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
