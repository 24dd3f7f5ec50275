package vmess

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/skiffvpn/skiff/core/transport/readwait"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// tryStream is a stream whose response header is in, on a transport
// whose bytes arrive in steps, and the server's chunk sealer for it.
func tryStream(t *testing.T, sec byte, raw bool) (*conn, *nettest.Arrivals, func(p []byte) []byte) {
	t.Helper()
	ac := &nettest.Arrivals{End: io.EOF}
	rq := request{security: sec, opt: optChunkStream | optChunkMasking, cmd: cmdTCP}
	if raw {
		rq.opt = 0
	}
	c := newConn(ac, &Client{addr: "test"}, &rq, nil, raw)
	c.reqSent.Store(true)
	rk, riv := respKeys(&c.rq)
	c.resp = true
	if raw {
		return c, ac, func(p []byte) []byte { return p }
	}
	c.rbody = newBody(sec, rq.opt, &rk, &riv)
	enc := newBody(sec, rq.opt, &rk, &riv)
	return c, ac, func(p []byte) []byte { return enc.seal(nil, p) }
}

func fill(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }

// TestReadOpensAvailableChunks checks that one Read (and one TryRead)
// opens as many whole chunks as have arrived and fit the caller's buffer,
// completing a chunk from the transport's TryRead when its rest has
// arrived, and waits only for the first.
func TestReadOpensAvailableChunks(t *testing.T) {
	const k = maxChunkPayload
	const sealed = k + 2 + tagSize // on the wire, with masking and no padding
	for _, tc := range []struct {
		name    string
		chunks  []int // payload sizes, in order; 0 is the end chunk
		arrive  []int // bytes of the stream that arrive in each step; the rest is the last
		buf     int   // the caller's buffer
		want    []int // what each Read returns
		wantTry int   // what one TryRead after the Reads returns
		wantErr error // what a Read after those returns; nil: none is made
	}{
		{name: "three whole chunks, one Read", chunks: []int{k, k, k}, buf: 60 << 10, want: []int{3 * k}},
		{name: "as many as fit the buffer", chunks: []int{k, k, k, k}, buf: 3*k + 100, want: []int{3*k + 100, k - 100}},
		{name: "a short buffer", chunks: []int{100, 100}, buf: 30, want: []int{30, 30, 30, 30, 30}, wantTry: 30},
		{name: "a part of the last chunk", chunks: []int{k, k, k}, arrive: []int{2*sealed + 100}, buf: 60 << 10, want: []int{2 * k, k}},
		{name: "the first chunk in parts", chunks: []int{k, 1000}, arrive: []int{1, 10}, buf: 60 << 10, want: []int{k + 1000}},
		{name: "the end after data", chunks: []int{1000, 0}, buf: 60 << 10, want: []int{1000}, wantErr: io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ac, seal := tryStream(t, secAES128GCM, false)
			var stream, plain []byte
			for i, n := range tc.chunks {
				p := fill(n, byte('a'+i))
				plain = append(plain, p...)
				stream = append(stream, seal(p)...)
			}
			ac.Steps(stream, tc.arrive...)
			b := make([]byte, tc.buf)
			got := nettest.ReadSizes(t, c, b, tc.want)
			n, err := c.TryRead(b)
			if n != tc.wantTry || err != nil {
				t.Fatalf("TryRead after the Reads: %d, %v; want %d", n, err, tc.wantTry)
			}
			got = append(got, b[:n]...)
			if !bytes.Equal(got, plain[:len(got)]) {
				t.Fatal("the bytes read differ from those sent")
			}
			if tc.wantErr != nil {
				if n, err := c.Read(b); n != 0 || !errors.Is(err, tc.wantErr) {
					t.Fatalf("last Read: %d, %v; want %v", n, err, tc.wantErr)
				}
			}
		})
	}
}

// TestReadErrorAfterData checks that a Read returns the chunks before a
// failure, then the failure.
func TestReadErrorAfterData(t *testing.T) {
	errReset := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		tail func(seal func([]byte) []byte) []byte
		end  error
		want string // in the error; "" for the end error itself
	}{
		{"bad tag", func(seal func([]byte) []byte) []byte {
			c := seal(fill(100, 'z'))
			c[len(c)-3] ^= 0x80
			return c
		}, io.EOF, "does not open"},
		{"EOF inside a chunk", func(seal func([]byte) []byte) []byte { return seal(fill(100, 'z'))[:50] }, io.EOF, io.ErrUnexpectedEOF.Error()},
		{"reset between chunks", func(func([]byte) []byte) []byte { return nil }, errReset, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ac, seal := tryStream(t, secAES128GCM, false)
			ac.End = tc.end
			good := append(seal(fill(1000, 'a')), seal(fill(1000, 'b'))...)
			ac.Later = [][]byte{append(good, tc.tail(seal)...)}
			b := make([]byte, 60<<10)
			n, err := c.Read(b)
			if n != 2000 || err != nil || b[0] != 'a' || b[1999] != 'b' {
				t.Fatalf("Read: %d, %v; want the 2000 bytes before the failure", n, err)
			}
			n, err = c.Read(b)
			if n != 0 || err == nil || tc.want == "" && !errors.Is(err, tc.end) || tc.want != "" && !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("next Read: %d, %v; want an error with %q", n, err, tc.want)
			}
		})
	}
}

// TestTryRead checks the stream's TryRead: it returns whole chunks that
// have arrived, never waits for the network, leaves a failure and the end
// to Read, and holds no buffer when it found nothing.
func TestTryRead(t *testing.T) {
	c, ac, seal := tryStream(t, secAES128GCM, false)
	b := make([]byte, 60<<10)
	if n, err := c.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of a quiet stream: %d, %v; want 0, nil", n, err)
	}
	if c.buf != nil {
		t.Fatal("a TryRead that found nothing kept the read buffer")
	}
	c1, c2 := seal(fill(1000, 'a')), seal(fill(2000, 'b'))
	ac.Later = [][]byte{append(c1, c2[:100]...), c2[100:]}
	ac.Arrive()
	if n, err := c.TryRead(b); n != 1000 || err != nil {
		t.Fatalf("TryRead of a chunk and a half: %d, %v; want 1000", n, err)
	}
	if n, err := c.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of half a chunk: %d, %v; want 0, nil", n, err)
	}
	if !c.WaitRead() {
		t.Fatal("WaitRead: half a chunk is not ready (its rest is on the way: the Read may wait for it)")
	}
	ac.Arrive()
	if n, err := c.TryRead(b); n != 2000 || err != nil || b[0] != 'b' {
		t.Fatalf("TryRead once the rest came: %d, %v; want 2000", n, err)
	}
	good := seal(fill(300, 'c'))
	bad := seal(fill(500, 'd'))
	bad[len(bad)-1] ^= 1
	ac.Avail = append(good, bad...)
	if n, err := c.TryRead(b); n != 300 || err != nil || b[0] != 'c' {
		t.Fatalf("TryRead before a bad chunk: %d, %v; want 300", n, err)
	}
	if n, err := c.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead at the bad chunk: %d, %v; want 0, nil (Read reports it)", n, err)
	}
	if !c.WaitRead() {
		t.Fatal("WaitRead: a failed stream is not ready")
	}
	if n, err := c.Read(b); n != 0 || err == nil {
		t.Fatalf("Read at the bad chunk: %d, %v; want its error", n, err)
	}
	if ac.Waits != 0 {
		t.Fatalf("%d transport Reads: TryRead waited", ac.Waits)
	}
}

// TestTryReadRaw checks TryRead with security zero (no chunks): the
// transport's TryRead.
func TestTryReadRaw(t *testing.T) {
	c, ac, _ := tryStream(t, secNone, true)
	b := make([]byte, 100)
	if n, err := c.TryRead(b); n != 0 || err != nil {
		t.Fatalf("TryRead of a quiet stream: %d, %v", n, err)
	}
	ac.Avail = []byte("hello")
	if n, err := c.TryRead(b); n != 5 || err != nil || string(b[:n]) != "hello" {
		t.Fatalf("TryRead: %q, %v", b[:n], err)
	}
}

// TestTryReadAllocs: TryRead opens chunks, and finds nothing, without
// allocating.
func TestTryReadAllocs(t *testing.T) {
	c, ac, seal := tryStream(t, secAES128GCM, false)
	var chunks [][]byte
	for range 110 {
		chunks = append(chunks, seal(fill(maxChunkPayload, 'a')))
	}
	b := make([]byte, 60<<10)
	round := func() {
		ac.Avail, chunks = chunks[0], chunks[1:]
		if n, _ := c.TryRead(b); n != maxChunkPayload {
			t.Fatalf("TryRead: %d", n)
		}
		if n, _ := c.TryRead(b); n != 0 {
			t.Fatalf("TryRead of nothing: %d", n)
		}
	}
	round()
	if a := testing.AllocsPerRun(100, round); a > 0 {
		t.Errorf("%.1f allocations per TryRead, want 0", a)
	}
}

// TestReadWaiters checks that the stream offers a relay its TryRead only
// on a transport that has one.
func TestReadWaiters(t *testing.T) {
	c, _, _ := tryStream(t, secAES128GCM, false)
	if w, tr := readwait.For(c); w == nil || tr == nil {
		t.Fatalf("For(a stream over a TryReader) = %v, %v; want both", w, tr)
	}
	if w, tr := readwait.For(testConn(discard{}, secAES128GCM)); w == nil || tr != nil {
		t.Fatalf("For(a stream over a conn without TryRead) = %v, %v; want a Waiter only", w, tr)
	}
}
