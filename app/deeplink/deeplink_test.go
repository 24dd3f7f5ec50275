package deeplink

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Link
		notLink bool
		err     string
	}{
		{in: "clash://install-config?url=https%3A%2F%2Fsub.example.com%2Fapi%3Ftoken%3Dab%26flag%3Dclash&name=%E6%9C%BA%E5%9C%BA",
			want: Link{URL: "https://sub.example.com/api?token=ab&flag=clash", Name: "机场"}},
		{in: "CLASH://install-config/?url=http://a.example/s", want: Link{URL: "http://a.example/s"}},
		{in: "clashmeta://install-config?url=http://a.example/s&name=m", want: Link{URL: "http://a.example/s", Name: "m"}},
		{in: "sing-box://import-remote-profile?url=https%3A%2F%2Fa.example%2Fs.json#My%20sub",
			want: Link{URL: "https://a.example/s.json", Name: "My sub"}},
		{in: "--config-dir", notLink: true},
		{in: "https://a.example/s", notLink: true},
		{in: "vless://uuid@a.example:443", notLink: true},
		{in: "clash://install-config", err: "no url="},
		{in: "clash://install-config?url=file%3A%2F%2F%2Fetc%2Fpasswd", err: "not http(s)"},
		{in: "clash://install-config?url=javascript:alert(1)", err: "not http(s)"},
		{in: "clash://install-config?url=https%3A%2F%2F", err: "not http(s)"},
		{in: "clash://run?url=https://a.example/", err: "not an import"},
		{in: "sing-box://install-config?url=https://a.example/", err: "not an import"},
		{in: "clash://install-config/../x?url=https://a.example/", err: "not an import"},
		{in: "clash://install-config?url=https://a.example/&name=a%0Ab%00c", want: Link{URL: "https://a.example/", Name: "abc"}},
		{in: "clash://install-config?url=https://a.example/" + strings.Repeat("a", maxLen), err: "more than"},
		{in: "clash://install-config?url=%zz", err: "invalid URL escape"},
	} {
		got, err := Parse(tt.in)
		switch {
		case tt.notLink:
			if !errors.Is(err, ErrNotLink) {
				t.Errorf("Parse(%q) = %v, %v; want ErrNotLink", tt.in, got, err)
			}
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, ErrNotLink) {
				t.Errorf("Parse(%q) error = %v; want one with %q", tt.in, err, tt.err)
			}
		case err != nil || got != tt.want:
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("clash://install-config?url=https%3A%2F%2Fa.example%2Fs&name=x")
	f.Add("sing-box://import-remote-profile?url=http://a.example/#t")
	f.Add("clash://")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			if l != (Link{}) {
				t.Fatalf("Parse(%q) returned %+v with error %v", s, l, err)
			}
			return
		}
		if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") {
			t.Fatalf("Parse(%q) accepted %q", s, l.URL)
		}
		for _, r := range l.Name {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("Parse(%q) kept a control character in the name %q", s, l.Name)
			}
		}
	})
}
