package flow

import (
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
)

func TestAppendHost(t *testing.T) {
	socks := AddrTypes{IPv4: 1, Name: 3, IPv6: 4}
	for _, tc := range []struct {
		a    Addr
		want string
	}{
		{Addr{IP: netip.MustParseAddr("1.2.3.4"), Port: 80}, "0101020304"},
		{Addr{IP: netip.MustParseAddr("::1"), Port: 80}, "04" + "00000000000000000000000000000001"},
		{Addr{Name: "ab.c", Port: 80}, "0304" + hex.EncodeToString([]byte("ab.c"))},
	} {
		b, err := tc.a.AppendHost([]byte{0xee}, socks)
		if err != nil || hex.EncodeToString(b) != "ee"+tc.want {
			t.Errorf("%v: %x, %v; want ee%s", tc.a, b, err, tc.want)
		}
	}
	if _, err := (Addr{Name: strings.Repeat("a", 256)}).AppendHost(nil, socks); err == nil {
		t.Error("a 256-byte name was written")
	}
	if _, err := (Addr{}).AppendHost(nil, socks); err == nil {
		t.Error("an empty address was written")
	}
}
