package flow

import (
	"net/netip"
	"testing"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in      string
		want    Addr
		wantErr bool
	}{
		{in: "example.com:443", want: Addr{Name: "example.com", Port: 443}},
		{in: "example.com.:443", want: Addr{Name: "example.com", Port: 443}},
		{in: "1.2.3.4:53", want: Addr{IP: netip.MustParseAddr("1.2.3.4"), Port: 53}},
		{in: "[::ffff:1.2.3.4]:53", want: Addr{IP: netip.MustParseAddr("1.2.3.4"), Port: 53}},
		{in: "[fe80::1%eth0]:22", want: Addr{IP: netip.MustParseAddr("fe80::1"), Port: 22}},
		{in: "[2001:db8::1]:80", want: Addr{IP: netip.MustParseAddr("2001:db8::1"), Port: 80}},
		{in: "example.com", wantErr: true},
		{in: ":80", wantErr: true},
		{in: "example.com:99999", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseAddr(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("ParseAddr(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// FuzzParseAddr: whatever ParseAddr accepts names something and prints to
// a string that parses back to the same address.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"example.com:443", "[::1]:80", "1.2.3.4:0", "a..:1", "[::%0]:1", ":1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddr(s)
		if err != nil {
			return
		}
		if !a.IsValid() {
			t.Fatalf("ParseAddr(%q) = %+v names nothing", s, a)
		}
		b, err := ParseAddr(a.String())
		if err != nil || b != a {
			t.Fatalf("ParseAddr(%q) = %+v; again from %q: %+v, %v", s, a, a.String(), b, err)
		}
	})
}
