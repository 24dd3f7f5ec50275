package link

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that every link it accepts
// prints with Format and parses back to an equal node.
func FuzzParse(f *testing.F) {
	for _, tc := range validCases {
		f.Add(tc.link)
	}
	for _, tc := range badCases {
		f.Add(tc.link)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
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
	})
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
		s := "vmess://" + base64.StdEncoding.EncodeToString([]byte(j))
		n, err := Parse(s)
		if err != nil {
			return
		}
		out, err := Format(n)
		if err != nil {
			t.Fatalf("Parse(%q) ok but Format: %v", j, err)
		}
		m, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) ok, Format gave %q, which does not parse: %v", j, out, err)
		}
		if !reflect.DeepEqual(n, m) {
			t.Fatalf("round trip of %q via %q:\n got %s\nwant %s", j, out, dump(m), dump(n))
		}
	})
}
