package link

import (
	"reflect"
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
