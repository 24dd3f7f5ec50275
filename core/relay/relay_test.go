package relay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/nettest"
)

type counter struct{ n atomic.Int64 }

func (c *counter) Add(n int64) { c.n.Add(n) }

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.AcceptTCP()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	c, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	s := <-ch
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestStreamHalfClose checks that each side's EOF reaches the other side
// while the opposite direction keeps flowing, and that bytes are counted.
func TestStreamHalfClose(t *testing.T) {
	app, appRelay := tcpPair(t) // app ⇄ relay
	upRelay, up := tcpPair(t)   // relay ⇄ upstream server
	var upN, downN counter
	done := make(chan error, 1)
	go func() { done <- Stream(context.Background(), NewBuffers(0), appRelay, upRelay, &upN, &downN) }()

	request := bytes.Repeat([]byte("q"), 100_000)
	reply := bytes.Repeat([]byte("r"), 300_000)

	// The app sends its request and closes its sending half, as `nc -N` does.
	go func() {
		app.Write(request)
		app.CloseWrite()
	}()
	got, err := io.ReadAll(up) // ends only if the half-close was passed on
	if err != nil || !bytes.Equal(got, request) {
		t.Fatalf("upstream read %d bytes, err %v; want %d", len(got), err, len(request))
	}
	// The upstream answers after the app's EOF: the other direction is open.
	if _, err := up.Write(reply); err != nil {
		t.Fatal(err)
	}
	up.CloseWrite()
	got, err = io.ReadAll(app)
	if err != nil || !bytes.Equal(got, reply) {
		t.Fatalf("app read %d bytes, err %v; want %d", len(got), err, len(reply))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not return after both halves closed")
	}
	if upN.n.Load() != int64(len(request)) || downN.n.Load() != int64(len(reply)) {
		t.Errorf("counted up %d down %d, want %d %d", upN.n.Load(), downN.n.Load(), len(request), len(reply))
	}
}

// TestStreamContextCancel checks that ending ctx closes both sides.
func TestStreamContextCancel(t *testing.T) {
	app, appRelay := tcpPair(t)
	upRelay, up := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Stream(ctx, NewBuffers(0), appRelay, upRelay, nil, nil) }()
	app.Write([]byte("x"))
	buf := make([]byte, 1)
	if _, err := io.ReadFull(up, buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Stream = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not return after cancel")
	}
	for name, c := range map[string]net.Conn{"app": app, "up": up} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(buf); err == nil {
			t.Errorf("%s: read after cancel succeeded", name)
		}
	}
}

// noCloseWrite hides a conn's CloseWrite, as a WebSocket stream has none.
type noCloseWrite struct{ net.Conn }

// TestStreamNoCloseWrite checks the relay when the upstream cannot pass a
// half-close on: the app's EOF does not cut the upstream off, its reply
// still reaches the app, and the flow ends when the upstream closes.
func TestStreamNoCloseWrite(t *testing.T) {
	for _, tt := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{
		{"no CloseWrite", func(c net.Conn) net.Conn { return noCloseWrite{c} }},
		// A conn whose CloseWrite depends on what it wraps (reqconn over
		// WebSocket) says so with errors.ErrUnsupported: the same. It
		// ended both directions, and the reply never came.
		{"CloseWrite unsupported", func(c net.Conn) net.Conn { return unsupportedCloseWrite{c} }},
	} {
		t.Run(tt.name, func(t *testing.T) { testStreamNoCloseWrite(t, tt.wrap) })
	}
}

// unsupportedCloseWrite has a CloseWrite that cannot.
type unsupportedCloseWrite struct{ net.Conn }

func (unsupportedCloseWrite) CloseWrite() error { return errors.ErrUnsupported }

func testStreamNoCloseWrite(t *testing.T, wrap func(net.Conn) net.Conn) {
	app, appRelay := tcpPair(t)
	upRelay, up := tcpPair(t)
	done := make(chan error, 1)
	go func() { done <- Stream(context.Background(), NewBuffers(0), appRelay, wrap(upRelay), nil, nil) }()

	app.Write([]byte("request"))
	app.CloseWrite()
	buf := make([]byte, 7)
	if _, err := io.ReadFull(up, buf); err != nil || string(buf) != "request" {
		t.Fatalf("upstream read %q, %v", buf, err)
	}
	// The upstream does not see EOF, and is not closed: it can answer.
	time.Sleep(50 * time.Millisecond)
	if _, err := up.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	up.Close()
	got, err := io.ReadAll(app)
	if err != nil || string(got) != "reply" {
		t.Fatalf("app read %q, %v", got, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Stream: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stream did not return")
	}
}

// softClose is a conn whose CloseWrite is only a marker its peer ignores
// (as sing-box's VMess server does with the end chunk).
type softClose struct{ net.Conn }

func (softClose) CloseWrite() error    { return nil }
func (softClose) SoftCloseWrite() bool { return true }

// TestStreamSoftCloseWrite: the app ends its side and the upstream, whose
// CloseWrite its server ignores, never sends EOF: the relay ends the flow
// once the upstream has been idle for HalfCloseIdle, and the reply that
// came before that still reached the app.
func TestStreamSoftCloseWrite(t *testing.T) {
	app, appRelay := tcpPair(t)
	upRelay, up := tcpPair(t)
	done := make(chan error, 1)
	go func() { done <- Stream(context.Background(), NewBuffers(0), appRelay, softClose{upRelay}, nil, nil) }()

	app.Write([]byte("request"))
	app.CloseWrite()
	buf := make([]byte, 7)
	if _, err := io.ReadFull(up, buf); err != nil || string(buf) != "request" {
		t.Fatalf("upstream read %q, %v", buf, err)
	}
	if _, err := up.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(app, got); err != nil || string(got) != "reply" {
		t.Fatalf("app read %q, %v", got, err)
	}
	// The upstream stays open and silent: the flow must still end.
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Stream: %v", err)
		}
	case <-time.After(HalfCloseIdle + 10*time.Second):
		t.Fatal("Stream still relays a flow whose upstream ignores the half-close")
	}
}

func udpConn(t testing.TB) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPacketRelayAndIdle relays datagrams both ways through two sockets
// and checks that the session ends once idle.
func TestPacketRelayAndIdle(t *testing.T) {
	// app side: the relay reads the app's datagrams from appRelay; we fake
	// the app's "destination" by writing from appPeer to appRelay and
	// reading where to go from a fixed echo server address.
	echo := net.UDPAddrFromAddrPort(nettest.UDPEcho(t))
	appPeer := udpConn(t)
	appSide := &fixedDst{UDPConn: udpConn(t), dst: echo, peer: appPeer.LocalAddr()}
	up := udpConn(t)

	var upN, downN counter
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Packet(context.Background(), appSide, up, 300*time.Millisecond, &upN, &downN) }()

	buf := make([]byte, 2048)
	for i := 0; i < 3; i++ {
		if _, err := appPeer.WriteTo([]byte("ping"), appSide.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		appPeer.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := appPeer.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "ping" {
			t.Fatalf("reply %q, %v", buf[:n], err)
		}
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrIdle) {
			t.Errorf("Packet = %v, want ErrIdle", err)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
			t.Errorf("session ended after %v, want about 300ms of idleness", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("session did not end when idle")
	}
	if upN.n.Load() != 12 || downN.n.Load() != 12 {
		t.Errorf("counted up %d down %d, want 12 12", upN.n.Load(), downN.n.Load())
	}
}

// fixedDst is an app-side PacketConn whose datagrams all go to dst and
// whose replies go to peer.
type fixedDst struct {
	*net.UDPConn
	dst, peer net.Addr
}

func (c *fixedDst) ReadFrom(b []byte) (int, net.Addr, error) {
	n, _, err := c.UDPConn.ReadFrom(b)
	return n, c.dst, err
}

func (c *fixedDst) WriteTo(b []byte, _ net.Addr) (int, error) {
	return c.UDPConn.WriteTo(b, c.peer)
}

func TestIdleTimeout(t *testing.T) {
	for _, tc := range []struct {
		port uint16
		want time.Duration
	}{{53, DNSTimeout}, {443, UDPTimeout}, {5353, UDPTimeout}} {
		if got := IdleTimeout(tc.port); got != tc.want {
			t.Errorf("IdleTimeout(%d) = %v, want %v", tc.port, got, tc.want)
		}
	}
}

// BenchmarkStream measures one direction of a relayed loopback TCP stream:
// sender → relay → receiver.
func BenchmarkStream(b *testing.B) {
	src, appRelay := tcpPair(b)
	upRelay, dst := tcpPair(b)
	var upN, downN counter
	go Stream(context.Background(), NewBuffers(0), appRelay, upRelay, &upN, &downN)
	chunk := make([]byte, 256<<10)
	total := int64(b.N) * int64(len(chunk))
	done := make(chan int64, 1)
	go func() {
		n, _ := io.CopyN(io.Discard, dst, total)
		done <- n
	}()
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := src.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if n := <-done; n != total {
		b.Fatalf("received %d of %d bytes", n, total)
	}
}

// sizeConn records the size of the buffer each Read is given.
type sizeConn struct {
	net.Conn
	sizes chan int
}

func (c *sizeConn) Read(p []byte) (int, error) {
	c.sizes <- len(p)
	return c.Conn.Read(p)
}

// TestBufferSizing checks the read buffer of one direction: small at
// first and whenever a read brings less than 16 KiB into a grown buffer
// (the source is drained and the next read may wait long), grown while
// reads fill it or bring 16 KiB or more, and grown only as far as the
// budget allows.
func TestBufferSizing(t *testing.T) {
	const S, M, L = SmallBufferSize, MediumBufferSize, BufferSize
	tests := []struct {
		name  string
		used  int64 // budget in use by others
		write []int // sizes written one at a time, each read before the next
		want  []int // buffer sizes of the reads
	}{
		{"interactive", 0, []int{10, 10}, []int{S, S, S}},
		{"grows, and shrinks once drained", 0, []int{S, 100, 10}, []int{S, L, S, S}},
		{"stays large while reads fill it", 0, []int{S, L, L, 100}, []int{S, L, L, L, S}},
		{"stays large while part-filled reads bring 16 KiB", 0, []int{S, M, L - 1, M - 1, 10}, []int{S, L, L, L, S, S}},
		{"grows again after a quiet read that fills", 0, []int{S, 100, S, 100}, []int{S, L, S, L, S}},
		{"medium when the large share is spent", DefaultBudget / 2, []int{S, M, 100}, []int{S, M, M, S}},
		{"medium drops at a part-filled read", DefaultBudget / 2, []int{S, M - 1, 10}, []int{S, M, S, S}},
		{"small when the budget is spent", DefaultBudget, []int{S, S, 100}, []int{S, S, S, S}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := NewBuffers(0)
			bs.used.Add(tt.used)
			srcApp, srcPeer := net.Pipe()
			dstApp, dstPeer := net.Pipe()
			src := &sizeConn{Conn: srcApp, sizes: make(chan int, 1)}
			done := make(chan error, 1)
			var lu, ld atomic.Bool
			go func() { done <- copyHalf(bs, dstApp, src, nopCounter{}, &lu, &ld) }()
			var got []int
			buf := make([]byte, BufferSize)
			for _, n := range tt.write {
				got = append(got, <-src.sizes)
				go srcPeer.Write(make([]byte, n))
				if _, err := io.ReadFull(dstPeer, buf[:n]); err != nil {
					t.Fatal(err)
				}
			}
			got = append(got, <-src.sizes)
			srcPeer.Close()
			dstPeer.Close()
			<-done
			if !slices.Equal(got, tt.want) {
				t.Fatalf("read sizes %v, want %v", got, tt.want)
			}
			if u := bs.InUse(); u != tt.used {
				t.Fatalf("budget in use %d after the copy ended, want %d", u, tt.used)
			}
		})
	}
}

func repeat(v, n int) []int { return slices.Repeat([]int{v}, n) }

// frameConn is a TCP conn that frames each write as a 4-byte length and the
// payload, and is a FrameWriter with the given headroom. It records how
// writes came in.
type frameConn struct {
	*net.TCPConn
	head, tail    int
	framed, plain atomic.Int64
}

func (c *frameConn) FrontHeadroom() int { return c.head }
func (c *frameConn) TailRoom() int      { return c.tail }

func (c *frameConn) WriteFrame(b []byte) (int, error) {
	c.framed.Add(1)
	if len(b) < c.head+c.tail || c.head < 4 {
		return 0, errors.New("frameConn: no headroom")
	}
	p := b[c.head : len(b)-c.tail]
	for i := range b[len(b)-c.tail:] { // the tail room is the writer's to use
		b[len(b)-c.tail+i] = 0xaa
	}
	hdr := b[c.head-4 : c.head]
	hdr[0], hdr[1], hdr[2], hdr[3] = byte(len(p)>>24), byte(len(p)>>16), byte(len(p)>>8), byte(len(p))
	for i := range p { // modify the payload in place, as a WebSocket mask does
		p[i] ^= 0xff
	}
	if _, err := c.TCPConn.Write(b[c.head-4 : len(b)-c.tail]); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *frameConn) Write(p []byte) (int, error) {
	c.plain.Add(1)
	b := make([]byte, c.head+len(p)+c.tail)
	copy(b[c.head:], p)
	c.framed.Add(-1) // counted as plain, not framed
	return c.WriteFrame(b)
}

// TestStreamFrameWriter checks that Stream hands its buffer to a
// FrameWriter with the headroom in front (and a TailRoomer's tail room
// after the payload), that the payload arrives intact and counted once, and
// that a headroom or tail room out of range falls back to Write.
func TestStreamFrameWriter(t *testing.T) {
	tests := []struct {
		name       string
		head, tail int
		wantFramed bool
	}{
		{"headroom 14", 14, 0, true},
		{"headroom 4", 4, 0, true},
		{"headroom 18, tail room 16", 18, 16, true},
		{"headroom too large", maxHeadroom + 1, 0, false},
		{"tail room too large", 14, maxHeadroom + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app, appRelay := tcpPair(t)
			upRelay, up := tcpPair(t)
			fc := &frameConn{TCPConn: upRelay, head: tt.head, tail: tt.tail}
			var upN counter
			done := make(chan error, 1)
			go func() { done <- Stream(context.Background(), NewBuffers(0), appRelay, fc, &upN, nil) }()

			data := make([]byte, 1<<20)
			for i := range data {
				data[i] = byte(i * 7)
			}
			go func() { app.Write(data); app.CloseWrite() }()
			var got []byte
			for {
				var hdr [4]byte
				if _, err := io.ReadFull(up, hdr[:]); err != nil {
					break // EOF: the relay passed the app's EOF on
				}
				n := int(hdr[0])<<24 | int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3])
				p := make([]byte, n)
				if _, err := io.ReadFull(up, p); err != nil {
					t.Fatal(err)
				}
				for i := range p {
					p[i] ^= 0xff
				}
				got = append(got, p...)
			}
			up.Close()
			app.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("upstream got %d bytes, want %d intact", len(got), len(data))
			}
			if n := upN.n.Load(); n != int64(len(data)) {
				t.Fatalf("counted %d bytes, want %d", n, len(data))
			}
			if framed, plain := fc.framed.Load(), fc.plain.Load(); (framed > 0) != tt.wantFramed || (plain > 0) == tt.wantFramed {
				t.Fatalf("%d framed and %d plain writes; want framed: %v", framed, plain, tt.wantFramed)
			}
		})
	}
}

// lendConn is a source whose data is a series of chunks it holds: Lend
// hands out a whole held chunk larger than min, Read copies from the
// chunk in front.
type lendConn struct {
	net.Conn
	chunks [][]byte
	begun  bool // the front chunk was read in part
	lent   int
}

func (c *lendConn) Lend(min int) []byte {
	if len(c.chunks) == 0 || c.begun || len(c.chunks[0]) <= min {
		return nil
	}
	b := c.chunks[0]
	c.chunks = c.chunks[1:]
	c.lent++
	return b
}

func (c *lendConn) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks, c.begun = c.chunks[1:], false
	} else {
		c.begun = true
	}
	return n, nil
}

// TestStreamLender checks that a direction writes what its source lends
// (Lender) as it is, in order with what it reads, and counts it.
func TestStreamLender(t *testing.T) {
	var chunks [][]byte
	var want []byte
	for i, n := range []int{100, 0xffff, 0xffff, 20 << 10, 0xffff, 10, 0xffff} {
		b := bytes.Repeat([]byte{byte('a' + i)}, n)
		chunks = append(chunks, b)
		want = append(want, b...)
	}
	src := &lendConn{chunks: chunks}
	dstApp, dstPeer := net.Pipe()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(dstPeer)
		got <- b
	}()
	var c counter
	var lu, ld atomic.Bool
	if err := copyHalf(NewBuffers(0), dstApp, src, &c, &lu, &ld); err != nil {
		t.Fatal(err)
	}
	dstApp.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("relayed %d bytes, want %d (or they differ)", len(b), len(want))
	}
	if src.lent != 4 {
		t.Fatalf("%d chunks lent, want the 4 larger than the buffer", src.lent)
	}
	if n := c.n.Load(); n != int64(len(want)) {
		t.Fatalf("counted %d bytes, want %d", n, len(want))
	}
}
