package process

import (
	"net/netip"
	"testing"
)

func TestParseHexAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"00000000:0035", "0.0.0.0:53"},
		{"00000000000000000000000001000000:01BB", "[::1]:443"},
		{"B80D0120000000000000000001000000:0050", "[2001:db8::1]:80"},
		{"0000000000000000FFFF00000100007F:0016", "[::ffff:127.0.0.1]:22"},
	} {
		got, ok := parseHexAddr([]byte(tc.in))
		if !ok || got != netip.MustParseAddrPort(tc.want) {
			t.Errorf("parseHexAddr(%s) = %v, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:", "zz00007F:0050", "01007F:0050", "0100007F:10000"} {
		if _, ok := parseHexAddr([]byte(bad)); ok {
			t.Errorf("parseHexAddr(%q) accepted", bad)
		}
	}
}
