package hostname

import (
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		// The label and length edges are in core/dns's TestCanonicalName.
		{"WWW.Example.org.", "www.example.org", true},
		{"a-", "a-", true},
		{"a.b.", "a.b", true},
		{"a..", "", false},
		{"a:b", "", false},
		{"[::1]", "", false},
		{"x/y", "", false},
		{"\u212Aey.com", "", false}, // the Kelvin sign is not ASCII, though ToLower makes it 'k'
		{strings.Repeat("b", 63), strings.Repeat("b", 63), true},
		{strings.Repeat("b", 60) + "." + strings.Repeat("c", 192), "", false},
	}
	for _, tt := range tests {
		for name, f := range map[string]func(string) (string, bool){
			"Canonical":      Canonical,
			"CanonicalBytes": func(s string) (string, bool) { return CanonicalBytes([]byte(s)) },
		} {
			if got, ok := f(tt.in); got != tt.want || ok != tt.ok {
				t.Errorf("%s(%q) = %q, %v; want %q, %v", name, tt.in, got, ok, tt.want, tt.ok)
			}
		}
	}
}

func TestLower(t *testing.T) {
	for in, want := range map[string]string{"": "", "AbC-1_.Z": "abc-1_.z", "é": "é", "[::1]": "[::1]"} {
		if got := Lower([]byte(in)); got != want {
			t.Errorf("Lower(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCanonical checks that both forms agree and that what they return is
// valid, lower case and canonical already.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"Example.COM.", "a..b", "_x.y", strings.Repeat("a.", 127)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Canonical(s)
		gotB, okB := CanonicalBytes([]byte(s))
		if got != gotB || ok != okB {
			t.Fatalf("Canonical(%q) = %q, %v; CanonicalBytes %q, %v", s, got, ok, gotB, okB)
		}
		if !ok {
			return
		}
		if !Valid(got) || got != strings.ToLower(got) {
			t.Fatalf("Canonical(%q) = %q: not valid lower case", s, got)
		}
		if again, ok := Canonical(got); !ok || again != got {
			t.Fatalf("Canonical(%q) = %q, %v: not stable", got, again, ok)
		}
	})
}
