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
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestOfficialHysteria2 runs skiff against the official Hysteria 2 server
// (apernet/hysteria core v2.7.1, test/peers/hysteria), not sing-box's: UDP
// datagrams of 1400 and 3000 bytes and every size from 1 to 3000 bytes in
// each direction separately (a datagram from the server must arrive whole
// even when the server has to fragment it), TCP both ways checked by
// SHA-256, and a server restart.
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
	t.Run("udp-down-1400-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, 'D', []int{1400, 3000}) })
	t.Run("udp-up-1400-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, 'U', []int{1400, 3000}) })
	t.Run("udp-down-1-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, 'D', sizeRange(1, 3000)) })
	t.Run("udp-up-1-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, 'U', sizeRange(1, 3000)) })
	t.Run("tcp-up-4MiB", func(t *testing.T) { testTCPHash(t, proxy, tcpTarget, 'U', 4<<20) })
	t.Run("tcp-down-4MiB", func(t *testing.T) { testTCPHash(t, proxy, tcpTarget, 'D', 4<<20) })
	t.Run("tcp-echo-1MiB", func(t *testing.T) { testTCPEcho(t, proxy, 1<<20) })
	t.Run("server-restart", func(t *testing.T) {
		srv.Stop()
		srv = harness.StartHysteria(t, s)
		// The old QUIC connection is dead on the server; skiff notices
		// on its first stream request and dials anew.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := tryTCPHash(proxy, tcpTarget, 'D', 256<<10)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no TCP through the restarted server in 30 s: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		testUDPSizes(t, proxy, udpTarget, 'D', []int{1400, 3000})
		testUDPSizes(t, proxy, udpTarget, 'U', []int{1400, 3000})
	})
}

func sizeRange(lo, hi int) []int {
	s := make([]int, 0, hi-lo+1)
	for n := lo; n <= hi; n++ {
		s = append(s, n)
	}
	return s
}

// The directional UDP server tests each direction of a UDP path on its
// own: small requests one way, the datagram under test the other.
//
//	'D' size:uint16 nonce:[8]byte -> size bytes of downPayload(nonce, size)
//	'U' ...                       -> 'H' len:uint16 sha256(datagram)[:16]
//
// So a download check sends a 11-byte request and checks the size-byte
// answer; an upload check sends the size-byte datagram (starting with 'U')
// and checks its 19-byte receipt.
func directionalUDP(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := directionalReply(buf[:n]); reply != nil {
				pc.WriteTo(reply, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return pc.LocalAddr().String()
}

// directionalReply is the directional UDP server's answer to req; nil: none.
func directionalReply(req []byte) []byte {
	switch {
	case len(req) == 11 && req[0] == 'D':
		return downPayload(req[3:11], int(binary.BigEndian.Uint16(req[1:3])))
	case len(req) >= 1 && req[0] == 'U':
		return uploadReceipt(req)
	}
	return nil
}

// downPayload is the content of a size-byte download datagram: a SHA-256
// stream of the nonce and the size, so every size and run differs.
func downPayload(nonce []byte, size int) []byte {
	out := make([]byte, 0, size+sha256.Size)
	var block [8 + 2 + 4]byte
	copy(block[:], nonce)
	binary.BigEndian.PutUint16(block[8:], uint16(size))
	for i := uint32(0); len(out) < size; i++ {
		binary.BigEndian.PutUint32(block[10:], i)
		h := sha256.Sum256(block[:])
		out = append(out, h[:]...)
	}
	return out[:size]
}

func uploadReceipt(d []byte) []byte {
	h := sha256.Sum256(d)
	r := []byte{'H', 0, 0}
	binary.BigEndian.PutUint16(r[1:], uint16(len(d)))
	return append(r, h[:16]...)
}

// udpProbe is one datagram check: what to send and what must come back.
type udpProbe struct {
	size int
	send []byte
	want []byte
}

// testUDPSizes checks through the SOCKS5 proxy that a datagram of each size
// crosses in direction dir ('D': from the server to the client, 'U': from
// the client to the server) intact. A probe is sent again, up to four
// times, while its answer is missing, so that a loaded machine's odd loss
// does not fail the test; a size that never arrives does.
func testUDPSizes(t *testing.T, proxy, target string, dir byte, sizes []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := harness.AssociateUDP(ctx, proxy)
	if err != nil {
		t.Fatalf("socks udp associate: %v", err)
	}
	defer a.Close()
	nonce := make([]byte, 8)
	rand.Read(nonce)
	probes := make(map[string]*udpProbe, len(sizes)) // by the answer expected
	pending := make(map[*udpProbe]bool, len(sizes))
	for _, n := range sizes {
		p := &udpProbe{size: n}
		if dir == 'D' {
			p.send = []byte{'D', 0, 0}
			binary.BigEndian.PutUint16(p.send[1:], uint16(n))
			p.send = append(p.send, nonce...)
			p.want = downPayload(nonce, n)
		} else {
			p.send = make([]byte, n)
			rand.Read(p.send)
			p.send[0] = 'U'
			p.want = uploadReceipt(p.send)
		}
		probes[string(p.want)] = p
		pending[p] = true
	}
	start := time.Now()
	var bad []string // answers that match no probe
	buf := make([]byte, 65535)
	const window = 32 // probes in flight, so that socket buffers do not overflow
	for round := 1; round <= 4 && len(pending) > 0; round++ {
		var order []*udpProbe
		for _, n := range sizes {
			for p := range pending {
				if p.size == n {
					order = append(order, p)
				}
			}
		}
		inFlight := 0
		read := func(wait time.Duration) bool {
			a.SetReadDeadline(time.Now().Add(wait))
			n, _, err := a.ReadFrom(buf)
			if err != nil {
				return false
			}
			if p, ok := probes[string(buf[:n])]; ok {
				if pending[p] {
					delete(pending, p)
					inFlight--
				}
			} else if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%d bytes", n))
			}
			return true
		}
		for _, p := range order {
			for inFlight >= window && read(200*time.Millisecond) {
			}
			if inFlight >= window {
				inFlight = 0 // answers lost: go on, the next round resends
			}
			if err := a.WriteTo(p.send, target); err != nil {
				t.Fatalf("send %d-byte datagram: %v", len(p.send), err)
			}
			inFlight++
		}
		for len(pending) > 0 && read(2*time.Second) {
		}
	}
	if len(bad) > 0 {
		t.Errorf("answers that match no datagram sent (corrupted?): %v", bad)
	}
	if len(pending) > 0 {
		var missing []int
		for _, n := range sizes {
			for p := range pending {
				if p.size == n {
					missing = append(missing, n)
				}
			}
		}
		t.Fatalf("%s: %d of %d sizes never arrived in 4 tries: %s", dirName(dir), len(missing), len(sizes), sizeRanges(missing))
	}
	t.Logf("%s: %d sizes (%d to %d bytes) arrived intact in %v", dirName(dir), len(sizes), sizes[0], sizes[len(sizes)-1], time.Since(start).Round(time.Millisecond))
}

func dirName(dir byte) string {
	if dir == 'D' {
		return "server to client"
	}
	return "client to server"
}

// sizeRanges writes sorted sizes as ranges: "1216-1400 3000".
func sizeRanges(s []int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		} else {
			fmt.Fprintf(&b, "%d", s[i])
		}
		i = j + 1
	}
	return b.String()
}

// The hash TCP server checks each direction of a TCP path by SHA-256:
//
//	'U' len:uint64 data   -> sha256(data)
//	'D' len:uint64 seed:[8]byte -> len bytes of downPayload-style stream
//
// The client hashes what it receives and compares with its own copy.
func hashTCP(t testing.TB) string {
	t.Helper()
	s, err := harness.ServeTCP(func(c net.Conn) {
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
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr()
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
	t.Logf("%s: %d KiB intact in %v (%.0f Mbit/s)", dirName(dir), size>>10, el.Round(time.Millisecond), float64(size)*8/el.Seconds()/1e6)
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
	if dir == 'D' {
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
