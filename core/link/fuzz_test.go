package link

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/internal/safetext"
)

// checkRoundTrip fails t unless s is rejected by Parse, or accepted and
// then printed by Format as a link that parses to an equal node.
func checkRoundTrip(t *testing.T, s string) {
	t.Helper()
	n, err := Parse(s)
	if err != nil {
		return
	}
	if strings.ContainsFunc(n.Name, safetext.Forbidden) || !utf8.ValidString(n.Name) {
		t.Fatalf("Parse(%q): name %q holds a control rune or invalid UTF-8", s, n.Name)
	}
	out, err := Format(n)
	if err != nil {
		t.Fatalf("Parse(%q) ok but Format: %v", s, err)
	}
	m, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(%q) ok, Format gave %q, which does not parse: %v", s, out, err)
	}
	if !reflect.DeepEqual(n, m) {
		t.Fatalf("round trip of %q via %q:\n got %s\nwant %s", s, out, dump(m), dump(n))
	}
}

// FuzzParse checks that Parse never panics and that every link it accepts
// prints with Format and parses back to an equal node.
func FuzzParse(f *testing.F) {
	for _, tc := range validCases {
		f.Add(tc.link)
	}
	for _, tc := range badCases {
		f.Add(tc.link)
	}
	f.Fuzz(checkRoundTrip)
}

// FuzzVMessJSON fuzzes the JSON inside vmess:// links, which FuzzParse
// rarely reaches through the base64.
func FuzzVMessJSON(f *testing.F) {
	for _, tc := range validCases {
		if !strings.HasPrefix(tc.link, "vmess://") {
			continue
		}
		if j, ok := decodeBase64(strings.TrimPrefix(tc.link, "vmess://")); ok {
			f.Add(j)
		}
	}
	f.Add(`{"add":"[::1]","port":1,"id":"` + testUUID + `","net":"h2","host":"a","path":"/p","tls":"tls","allowInsecure":true,"pinSHA256":"` + testPin + `"}`)
	f.Fuzz(func(t *testing.T, j string) {
		checkRoundTrip(t, "vmess://"+base64.StdEncoding.EncodeToString([]byte(j)))
	})
}

// FuzzSSBase64 fuzzes what ss:// links carry in base64: the whole legacy
// link body, or SIP002's method:password.
func FuzzSSBase64(f *testing.F) {
	f.Add(false, "aes-256-gcm:test/!@#:@192.168.100.1:8888")
	f.Add(false, "2022-blake3-aes-128-gcm:AQIDBAUGBwgJCgsMDQ4PEA==@[::1]:1")
	f.Add(true, "chacha20-ietf-poly1305:p@ss:w/rd")
	f.Add(true, "none:")
	f.Fuzz(func(t *testing.T, userinfoOnly bool, inner string) {
		if userinfoOnly {
			checkRoundTrip(t, "ss://"+base64.RawURLEncoding.EncodeToString([]byte(inner))+"@example.com:8388/?plugin=obfs-local%3Bobfs%3Dhttp#n")
		} else {
			checkRoundTrip(t, "ss://"+base64.StdEncoding.EncodeToString([]byte(inner))+"#n")
		}
	})
}
