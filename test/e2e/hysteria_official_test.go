package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestOfficialHysteria2 runs skiff against the official Hysteria 2 server
// (apernet/hysteria core v2.7.1, test/peers/hysteria), not sing-box's: UDP
// datagrams of 1400 and 3000 bytes and every size from 1 to 3000 bytes in
// each direction separately (a datagram from the server must arrive whole
// even when the server has to fragment it), TCP both ways checked by
// SHA-256, a destination the server cannot reach (refused, the server
// up), and a server restart.
func TestOfficialHysteria2(t *testing.T) {
	s := newServer(t, setup{kind: harness.Hysteria2})
	srv := harness.StartHysteria(t, s)
	proxy := startClient(t, s)
	udpTarget := directionalUDP(t)
	tcpTarget := hashTCP(t)

	// The server's own client carries the same datagrams: what fails
	// below is the client's.
	t.Run("official-client-udp", func(t *testing.T) {
		out, err := exec.Command(harness.NeedHysteria(t), "udpcheck", "-server", s.Addr(), "-password", s.Password,
			"-echo", harness.UDPEcho(t), "-sizes", "1,1200,1400,3000").CombinedOutput()
		if err != nil {
			t.Fatalf("official client: %v\n%s", err, out)
		}
	})
	t.Run("udp-down-1400-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, harness.Download, []int{1400, 3000}) })
	t.Run("udp-up-1400-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, harness.Upload, []int{1400, 3000}) })
	t.Run("udp-down-1-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, harness.Download, harness.SizeRange(1, 3000)) })
	t.Run("udp-up-1-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, harness.Upload, harness.SizeRange(1, 3000)) })
	t.Run("tcp-up-4MiB", func(t *testing.T) { testTCPHash(t, proxy, tcpTarget, harness.Upload, 4<<20) })
	t.Run("tcp-down-4MiB", func(t *testing.T) { testTCPHash(t, proxy, tcpTarget, harness.Download, 4<<20) })
	t.Run("tcp-echo-1MiB", func(t *testing.T) { testTCPEcho(t, proxy, 1<<20) })
	t.Run("refused-destination", func(t *testing.T) { targetRefused(t, linkOutbound(t, s.Link(s.Trusting()), nil)) })
	t.Run("server-restart", func(t *testing.T) {
		srv.Stop()
		srv = harness.StartHysteria(t, s)
		// The old QUIC connection is dead on the server; skiff notices
		// on its first stream request and dials anew.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := tryTCPHash(proxy, tcpTarget, harness.Download, 256<<10)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no TCP through the restarted server in 30 s: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		testUDPSizes(t, proxy, udpTarget, harness.Download, []int{1400, 3000})
		testUDPSizes(t, proxy, udpTarget, harness.Upload, []int{1400, 3000})
	})
}

// directionalUDP starts a directional UDP server (harness.CheckUDPSizes)
// for t and returns its address.
func directionalUDP(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		harness.ServeDirectionalUDP(pc)
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// testUDPSizes checks through the SOCKS5 proxy that a datagram of each size
// crosses in direction dir (harness.Download or Upload) intact.
func testUDPSizes(t *testing.T, proxy, target string, dir byte, sizes []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := harness.AssociateUDP(ctx, proxy)
	if err != nil {
		t.Fatalf("socks udp associate: %v", err)
	}
	defer a.Close()
	start := time.Now()
	if err := harness.CheckUDPSizes(harness.SOCKSDatagrams{A: a, Target: target}, dir, sizes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d sizes (%d to %d bytes) arrived intact in %v", harness.DirectionName(dir), len(sizes), sizes[0], sizes[len(sizes)-1], time.Since(start).Round(time.Millisecond))
}

// The hash TCP server checks each direction of a TCP path by SHA-256:
//
//	'U' len:uint64 data   -> sha256(data)
//	'D' len:uint64 seed:[8]byte -> len bytes of downPayload-style stream
//
// The client hashes what it receives and compares with its own copy.
func hashTCP(t testing.TB) string {
	t.Helper()
	s, err := harness.ServeTCP(hashConn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr()
}

// hashConn serves one connection of the hash TCP server (hashTCP).
func hashConn(c net.Conn) {
	var hdr [9]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return
	}
	n := int64(binary.BigEndian.Uint64(hdr[1:]))
	switch hdr[0] {
	case 'U':
		h := sha256.New()
		if _, err := io.CopyN(h, c, n); err != nil {
			return
		}
		c.Write(h.Sum(nil))
	case 'D':
		var seed [8]byte
		if _, err := io.ReadFull(c, seed[:]); err != nil {
			return
		}
		io.Copy(c, io.LimitReader(newStream(seed[:]), n))
	}
}

// stream is an endless deterministic byte stream: SHA-256 of the seed and
// a counter.
type stream struct {
	seed []byte
	i    uint64
	buf  []byte
}

func newStream(seed []byte) *stream { return &stream{seed: seed} }

func (s *stream) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.buf) == 0 {
			var block [16]byte
			copy(block[:], s.seed)
			binary.BigEndian.PutUint64(block[8:], s.i)
			s.i++
			h := sha256.Sum256(block[:])
			s.buf = h[:]
		}
		k := copy(p[n:], s.buf)
		s.buf = s.buf[k:]
		n += k
	}
	return n, nil
}

// testTCPHash moves size bytes through the proxy in direction dir ('U' to
// the server, 'D' from it) and checks their SHA-256.
func testTCPHash(t *testing.T, proxy, target string, dir byte, size int64) {
	t.Helper()
	start := time.Now()
	if err := tryTCPHash(proxy, target, dir, size); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("%s: %d KiB intact in %v (%.0f Mbit/s)", harness.DirectionName(dir), size>>10, el.Round(time.Millisecond), float64(size)*8/el.Seconds()/1e6)
}

func tryTCPHash(proxy, target string, dir byte, size int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := harness.DialSOCKS(ctx, proxy, target)
	if err != nil {
		return fmt.Errorf("socks connect to %s: %w", target, err)
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	hdr := make([]byte, 9, 17)
	hdr[0] = dir
	binary.BigEndian.PutUint64(hdr[1:], uint64(size))
	seed := make([]byte, 8)
	rand.Read(seed)
	want := sha256.New()
	io.Copy(want, io.LimitReader(newStream(seed), size))
	if dir == harness.Download {
		if _, err := c.Write(append(hdr, seed...)); err != nil {
			return err
		}
		got := sha256.New()
		n, err := io.CopyN(got, c, size)
		if err != nil {
			return fmt.Errorf("download: got %d of %d bytes: %w", n, size, err)
		}
		if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
			return fmt.Errorf("download of %d bytes: SHA-256 differs", size)
		}
		return nil
	}
	if _, err := c.Write(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(c, io.LimitReader(newStream(seed), size)); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	sum := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, sum); err != nil {
		return fmt.Errorf("upload of %d bytes: no hash back: %w", size, err)
	}
	if !bytes.Equal(sum, want.Sum(nil)) {
		return fmt.Errorf("upload of %d bytes: the server's SHA-256 differs", size)
	}
	return nil
}

// TestQUICDatagramSizes checks every UDP size from 1 to 3000 bytes each way
// through the QUIC protocols against sing-box's servers: Skiff's QUIC
// connections advertise a max_datagram_frame_size of 1200 (for the
// official Hysteria 2 server, see quicconn.MaxDatagramFrameSize), and
// servers that could send larger datagrams must fragment instead.
func TestQUICDatagramSizes(t *testing.T) {
	for _, su := range []setup{
		{name: "hysteria2", kind: harness.Hysteria2},
		{name: "hysteria2-salamander", kind: harness.Hysteria2, salamander: true},
		{name: "tuic-native", kind: harness.TUIC},
		{name: "tuic-quic", kind: harness.TUIC, udpMode: "quic"},
	} {
		t.Run(su.name, func(t *testing.T) {
			s := newServer(t, su)
			startServer(t, s)
			proxy := startClient(t, s)
			target := directionalUDP(t)
			testUDPSizes(t, proxy, target, harness.Download, harness.SizeRange(1, 3000))
			testUDPSizes(t, proxy, target, harness.Upload, harness.SizeRange(1, 3000))
		})
	}
}
