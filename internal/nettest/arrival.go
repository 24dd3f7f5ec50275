package nettest

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// Arrivals is a transport whose bytes arrive in steps, for the tests of a
// conn's reads without waiting (readwait.TryReader): Avail is what has
// arrived, which TryRead returns from; a Read of an empty Avail takes the
// next of Later (the network delivering more), and once Later is empty
// returns End (nil: io.EOF is not assumed). What is written is kept in
// Sent. It is not safe for concurrent use.
type Arrivals struct {
	net.Conn
	Sent  bytes.Buffer
	Avail []byte
	Later [][]byte
	End   error
	Waits int // Reads that had to take from Later: they would have waited
}

// Write appends p to Sent.
func (a *Arrivals) Write(p []byte) (int, error) { return a.Sent.Write(p) }

// Close does nothing.
func (a *Arrivals) Close() error { return nil }

// Read returns what has arrived, or else the next step of Later, or End.
func (a *Arrivals) Read(p []byte) (int, error) {
	if len(a.Avail) == 0 {
		if len(a.Later) == 0 {
			return 0, a.End
		}
		a.Waits++
		a.Avail, a.Later = a.Later[0], a.Later[1:]
	}
	n := copy(p, a.Avail)
	a.Avail = a.Avail[n:]
	return n, nil
}

// TryRead returns what has arrived and never waits.
func (a *Arrivals) TryRead(p []byte) (int, error) {
	n := copy(p, a.Avail)
	a.Avail = a.Avail[n:]
	return n, nil
}

// Arrive makes the next step of Later arrive without a Read.
func (a *Arrivals) Arrive() {
	a.Avail = append(a.Avail, a.Later[0]...)
	a.Later = a.Later[1:]
}

// Steps sets Later to stream in steps of the given sizes, then the rest.
func (a *Arrivals) Steps(stream []byte, sizes ...int) {
	for _, n := range sizes {
		a.Later = append(a.Later, stream[:n])
		stream = stream[n:]
	}
	a.Later = append(a.Later, stream)
}

// Every sets Later to stream in steps of step bytes (the last shorter).
func (a *Arrivals) Every(stream []byte, step int) {
	for len(stream) > 0 {
		n := min(step, len(stream))
		a.Later = append(a.Later, stream[:n])
		stream = stream[n:]
	}
}

// ReadSizes reads from r into b once per size in want and fails tb unless
// each Read returns that many bytes and no error. It returns the bytes
// read.
func ReadSizes(tb testing.TB, r io.Reader, b []byte, want []int) []byte {
	tb.Helper()
	var got []byte
	for i, w := range want {
		n, err := r.Read(b)
		if err != nil || n != w {
			tb.Fatalf("Read %d: %d, %v; want %d", i, n, err, w)
		}
		got = append(got, b[:n]...)
	}
	return got
}
