package shadowsocks

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

// TestAppendAddr pins the SOCKS5 address bytes a request and a UDP packet
// carry, and that writing one allocates nothing in a buffer of room.
func TestAppendAddr(t *testing.T) {
	for _, tc := range []struct {
		dst     flow.Addr
		want    []byte
		wantErr string
	}{
		{dst: flow.Addr{IP: netip.MustParseAddr("1.2.3.4"), Port: 443}, want: []byte{1, 1, 2, 3, 4, 1, 0xbb}},
		{dst: flow.Addr{IP: netip.MustParseAddr("2001:db8::1"), Port: 53}, want: append(append([]byte{4}, netip.MustParseAddr("2001:db8::1").AsSlice()...), 0, 53)},
		{dst: flow.NameAddr("example.com", 80), want: append(append([]byte{3, 11}, "example.com"...), 0, 80)},
		{dst: flow.Addr{Name: strings.Repeat("a", 256), Port: 1}, wantErr: "destination name of 256 bytes, at most 255"},
		{dst: flow.Addr{Port: 1}, wantErr: "no destination address"},
	} {
		got, err := appendAddr([]byte{0xaa}, tc.dst)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("appendAddr(%v) = %x, %v; want error %q", tc.dst, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, append([]byte{0xaa}, tc.want...)) {
			t.Errorf("appendAddr(%v) = %x, %v; want aa%x", tc.dst, got, err, tc.want)
		}
		a, n, err := parseAddr(got[1:])
		if err != nil || n != len(tc.want) || a != tc.dst {
			t.Errorf("parseAddr(%x) = %v, %d, %v", got[1:], a, n, err)
		}
		buf := make([]byte, 0, maxAddrLen)
		if allocs := testing.AllocsPerRun(100, func() { appendAddr(buf, tc.dst) }); allocs != 0 {
			t.Errorf("appendAddr(%v): %v allocations", tc.dst, allocs)
		}
	}
}
