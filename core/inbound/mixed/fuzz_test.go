package mixed

import (
	"bytes"
	"testing"
)

// FuzzParseSOCKSAddr feeds arbitrary bytes to the SOCKS5 address parser
// (the part of a CONNECT request and of every UDP datagram a client
// controls): it must never panic, never claim more bytes than it was given,
// and whatever it accepts must be a usable address that encodes back to
// one that parses the same.
func FuzzParseSOCKSAddr(f *testing.F) {
	for _, seed := range [][]byte{
		{atypIPv4, 127, 0, 0, 1, 0, 80},
		append(append([]byte{atypDomain, 11}, "example.com"...), 1, 187),
		{atypIPv6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1, 0, 53},
		{atypDomain, 1, '.', 0, 80},
		{atypDomain, 0},
		{9},
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, n, err := parseSOCKSAddr(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if !a.IsValid() {
			t.Fatalf("accepted an address that names nothing: %+v from %x", a, b[:n])
		}
		again, m, err := parseSOCKSAddr(appendSOCKSAddr(nil, a))
		if err != nil || again != a || m == 0 {
			t.Fatalf("round trip of %+v: %+v, %v", a, again, err)
		}
		// The stream reader agrees with the slice parser.
		r, err := readSOCKSAddr(bytes.NewReader(b))
		if err != nil || r != a {
			t.Fatalf("readSOCKSAddr = %+v, %v; parseSOCKSAddr = %+v", r, err, a)
		}
	})
}
