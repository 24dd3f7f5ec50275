package shadowsocks

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// tryStream is a 2022 stream on a nettest.Arrivals whose request went out,
// and the codec that seals the server's chunks for it.
func tryStream(t *testing.T) (*streamConn, *nettest.Arrivals, func(payload []byte) []byte) {
	t.Helper()
	s, pw := newTestServer(t, "2022-blake3-aes-128-gcm", false)
	c := newClient(t, &node.Node{Protocol: node.Shadowsocks, Server: "127.0.0.1", Port: 1,
		Shadowsocks: &node.ShadowsocksOptions{Method: s.method, Password: pw}})
	ac := &nettest.Arrivals{End: io.EOF}
	sc := newStreamConn(ac, c, testDst)
	if _, err := sc.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	rsalt := make([]byte, 16)
	rand.Read(rsalt)
	out := newCodec(s.sessionAEAD(rsalt))
	hdr := []byte{1}
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(time.Now().Unix()))
	hdr = append(hdr, ac.Sent.Bytes()[:16]...)
	hdr = binary.BigEndian.AppendUint16(hdr, 1)
	resp := append(rsalt, out.seal(hdr)...)
	resp = append(resp, out.seal([]byte("h"))...)
	// The response header and its one byte of data, read at once.
	ac.Avail = resp
	b := make([]byte, 8)
	if n, err := sc.Read(b); n != 1 || err != nil || b[0] != 'h' {
		t.Fatalf("first Read: %q, %v", b[:n], err)
	}
	return sc, ac, out.chunk
}

func fill(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }

// TestReadOpensAvailableChunks checks that one Read (and one TryRead)
// opens as many whole chunks as have arrived and fit the caller's buffer,
// completing a chunk from the transport's TryRead when its rest has
// arrived, and never waits for more than the first.
func TestReadOpensAvailableChunks(t *testing.T) {
	const k = 16 << 10
	for _, tc := range []struct {
		name    string
		chunks  []int // payload sizes, in order
		arrive  []int // how many bytes of the sealed stream arrive before each Read; the rest is later
		buf     int   // the caller's buffer
		want    []int // what each Read returns
		wantTry int   // what one TryRead after the Reads returns
	}{
		{name: "three whole chunks, one Read", chunks: []int{k, k, k}, buf: 60 << 10, want: []int{3 * k}},
		{name: "as many as fit the buffer", chunks: []int{k, k, k, k}, buf: 3*k + 100, want: []int{3*k + 100, k - 100}},
		{name: "a chunk larger than the buffer", chunks: []int{0xffff, k}, buf: 60 << 10, want: []int{60 << 10, 0xffff - 60<<10 + k}},
		// A chunk larger than the buffer is not begun behind another's
		// rest: it is left whole, for a relay to borrow (Lend).
		{name: "a short buffer", chunks: []int{100, 100}, buf: 30, want: []int{30, 30, 30, 10, 30}, wantTry: 30},
		{name: "a part of the last chunk", chunks: []int{k, k, k}, arrive: []int{2*k + 2*(2+2*tagLen) + 100}, buf: 60 << 10, want: []int{2 * k, k}},
		{name: "the first chunk in parts", chunks: []int{k, 1000}, arrive: []int{10, 2 + tagLen + 5}, buf: 60 << 10, want: []int{k + 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, ac, chunk := tryStream(t)
			var stream, plain []byte
			for i, n := range tc.chunks {
				p := fill(n, byte('a'+i))
				plain = append(plain, p...)
				stream = append(stream, chunk(p)...)
			}
			ac.Steps(stream, tc.arrive...)
			b := make([]byte, tc.buf)
			got := nettest.ReadSizes(t, sc, b, tc.want)
			n, err := sc.TryRead(b)
			if n != tc.wantTry || err != nil {
				t.Fatalf("TryRead after the Reads: %d, %v; want %d", n, err, tc.wantTry)
			}
			got = append(got, b[:n]...)
			if !bytes.Equal(got, plain[:len(got)]) {
				t.Fatal("the bytes read differ from those sent")
			}
		})
	}
}

// TestTryRead checks the stream's TryRead: it returns what has arrived,
// whole chunks only, never waits for the network, keeps a chunk that
// fails for the next Read after the bytes before it, and leaves EOF to
// Read.
func TestTryRead(t *testing.T) {
	sc, ac, chunk := tryStream(t)
	b := make([]byte, 60<<10)
	if n, err := sc.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of a quiet stream: %d, %v; want 0, nil", n, err)
	}
	if sc.rbuf != nil {
		t.Fatal("a TryRead that found nothing kept the read buffer")
	}
	c1, c2 := chunk(fill(1000, 'a')), chunk(fill(2000, 'b'))
	// A chunk and a half: TryRead returns the whole one.
	ac.Later = [][]byte{append(c1, c2[:100]...), c2[100:]}
	ac.Arrive()
	if n, err := sc.TryRead(b); n != 1000 || err != nil {
		t.Fatalf("TryRead of a chunk and a half: %d, %v; want 1000", n, err)
	}
	if n, err := sc.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of half a chunk: %d, %v; want 0, nil", n, err)
	}
	ac.Arrive()
	if n, err := sc.TryRead(b); n != 2000 || err != nil || b[0] != 'b' {
		t.Fatalf("TryRead once the rest came: %d, %v; want 2000", n, err)
	}
	// A chunk that fails authentication after a good one: the good one,
	// then the error on Read.
	good := chunk(fill(300, 'c'))
	bad := chunk(fill(500, 'd'))
	bad[len(bad)-1] ^= 1
	ac.Avail = append(good, bad...)
	if n, err := sc.TryRead(b); n != 300 || err != nil || b[0] != 'c' {
		t.Fatalf("TryRead before a bad chunk: %d, %v; want 300", n, err)
	}
	if n, err := sc.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead at the bad chunk: %d, %v; want 0, nil (Read reports it)", n, err)
	}
	if n, err := sc.Read(b); n != 0 || !errors.Is(err, errAuth) {
		t.Fatalf("Read at the bad chunk: %d, %v; want %v", n, err, errAuth)
	}
	if ac.Waits != 0 {
		t.Fatalf("%d transport Reads: TryRead waited", ac.Waits)
	}
}

// TestReadErrorAfterData checks that a Read returns the chunks before a
// failure, then the failure: a chunk that does not open, the stream's end
// in the middle of a chunk, and the orderly end between chunks.
func TestReadErrorAfterData(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail func(chunk func([]byte) []byte) []byte
		end  error
		want error
	}{
		{"bad tag", func(chunk func([]byte) []byte) []byte {
			c := chunk(fill(100, 'z'))
			c[len(c)-5] ^= 0x80
			return c
		}, io.EOF, errAuth},
		{"bad length", func(chunk func([]byte) []byte) []byte {
			c := chunk(fill(100, 'z'))
			c[0] ^= 0x80
			return c
		}, io.EOF, errAuth},
		{"EOF inside a chunk", func(chunk func([]byte) []byte) []byte { return chunk(fill(100, 'z'))[:50] }, io.EOF, io.ErrUnexpectedEOF},
		{"EOF between chunks", func(func([]byte) []byte) []byte { return nil }, io.EOF, io.EOF},
		{"reset", func(func([]byte) []byte) []byte { return nil }, errReset, errReset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, ac, chunk := tryStream(t)
			ac.End = tc.end
			good := append(chunk(fill(1000, 'a')), chunk(fill(1000, 'b'))...)
			ac.Later = [][]byte{append(good, tc.tail(chunk)...)}
			b := make([]byte, 60<<10)
			n, err := sc.Read(b)
			if n != 2000 || err != nil || b[0] != 'a' || b[1999] != 'b' {
				t.Fatalf("Read: %d, %v; want the 2000 bytes before the failure", n, err)
			}
			if n, err := sc.Read(b); n != 0 || !errors.Is(err, tc.want) {
				t.Fatalf("next Read: %d, %v; want %v", n, err, tc.want)
			}
		})
	}
}

var errReset = errors.New("connection reset")

// TestTryReadAllocs: TryRead opens chunks and finds nothing without
// allocating.
func TestTryReadAllocs(t *testing.T) {
	sc, ac, chunk := tryStream(t)
	// Each round's chunk, sealed beforehand (each takes the next nonce).
	var chunks [][]byte
	for range 110 {
		chunks = append(chunks, chunk(fill(16<<10, 'a')))
	}
	b := make([]byte, 60<<10)
	round := func() {
		ac.Avail, chunks = chunks[0], chunks[1:]
		if n, _ := sc.TryRead(b); n != 16<<10 {
			t.Fatalf("TryRead: %d", n)
		}
		if n, _ := sc.TryRead(b); n != 0 {
			t.Fatalf("TryRead of nothing: %d", n)
		}
	}
	round()
	if a := testing.AllocsPerRun(100, round); a > 0 {
		t.Errorf("%.1f allocations per TryRead, want 0", a)
	}
}

// TestReadWaiters checks what the stream offers a relay: TryRead only on
// a transport that has one, and a WaitRead that returns at once on half a
// chunk (its rest is on the way) and on opened bytes left.
func TestReadWaiters(t *testing.T) {
	sc, ac, chunk := tryStream(t)
	if w, tr := readwait.For(halfCloser{sc}); w == nil || tr == nil {
		t.Fatalf("For(a stream over a TryReader) = %v, %v; want both", w, tr)
	}
	c := chunk(fill(100, 'a'))
	ac.Avail = c[:50]
	b := make([]byte, 200)
	if n, err := sc.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of half a chunk: %d, %v", n, err)
	}
	if !sc.WaitRead() {
		t.Fatal("WaitRead: half a chunk is not ready (its rest is on the way: the Read may wait for it)")
	}
	ac.Avail = c[50:]
	if n, err := sc.TryRead(b); n != 100 || err != nil {
		t.Fatalf("TryRead of the whole chunk: %d, %v", n, err)
	}
	ac.Avail = chunk(fill(10, 'b'))
	sc.TryRead(b[:5])
	if !sc.WaitRead() {
		t.Fatal("WaitRead: opened bytes left are not ready")
	}
	sc2 := newStreamConn(&memConn{w: io.Discard, r: bytes.NewReader(nil)}, sc.c, testDst)
	if w, tr := readwait.For(sc2); w == nil || tr != nil {
		t.Fatalf("For(a stream over a conn without TryRead) = %v, %v; want a Waiter only", w, tr)
	}
}

// TestLend checks that Lend hands out a chunk larger than min, opened in
// place in the stream's buffer, only when it is whole; leaves smaller
// chunks to Read; lends the opened rest of a chunk a Read began; and keeps
// a failing chunk for the next Read. A TryRead right after a Lend that
// found nothing does not ask the transport again.
func TestLend(t *testing.T) {
	const min = 60 << 10
	sc, ac, chunk := tryStream(t)
	a, b, c, d := fill(0xffff, 'a'), fill(0xffff, 'b'), fill(100, 'c'), fill(0xffff, 'd')
	sa, sb := chunk(a), chunk(b)
	ac.Steps(append(sa, sb[:1000]...), len(sa)+1000)
	ac.Arrive()
	if got := sc.Lend(min); !bytes.Equal(got, a) {
		t.Fatalf("Lend of a whole chunk: %d bytes", len(got))
	} else if &got[0] != &(*sc.rbuf)[sc.r-tagLen-len(a)] {
		t.Fatal("Lend copied the chunk out of the stream's buffer")
	}
	if got := sc.Lend(min); got != nil {
		t.Fatalf("Lend of a chunk in part: %d bytes", len(got))
	}
	// The relay's TryRead right after that Lend does not look again.
	ac.Avail = append(sb[1000:], chunk(c)...)
	if n, err := sc.TryRead(make([]byte, min)); n != 0 || err != nil {
		t.Fatalf("TryRead after a Lend that found nothing: %d, %v", n, err)
	}
	if got := sc.Lend(min); !bytes.Equal(got, b) {
		t.Fatalf("Lend after the rest came: %d bytes", len(got))
	}
	if got := sc.Lend(min); got != nil {
		t.Fatalf("Lend of a small chunk: %d bytes", len(got))
	}
	p := make([]byte, min)
	if n, err := sc.Read(p); n != len(c) || err != nil || !bytes.Equal(p[:n], c) {
		t.Fatalf("Read of the small chunk: %d, %v", n, err)
	}
	// A Read into a small buffer begins a large chunk; Lend hands out
	// the rest when it is more than min.
	ac.Avail = chunk(d)
	small := make([]byte, 100)
	if n, err := sc.Read(small); n != 100 || err != nil {
		t.Fatalf("Read of a large chunk's start: %d, %v", n, err)
	}
	if got := sc.Lend(1000); !bytes.Equal(got, d[100:]) {
		t.Fatalf("Lend of the rest: %d bytes", len(got))
	}
	// A chunk that fails: nothing lent, the next Read says why.
	bad := chunk(a)
	bad[len(bad)-1] ^= 1
	ac.Avail = bad
	if got := sc.Lend(min); got != nil {
		t.Fatalf("Lend of a bad chunk: %d bytes", len(got))
	}
	if n, err := sc.Read(p); n != 0 || err == nil {
		t.Fatalf("Read after a bad chunk: %d, %v", n, err)
	}
}
