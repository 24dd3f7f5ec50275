package safetext

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Tokyo 01", "Tokyo 01"},
		{"东京 🇯🇵", "东京 🇯🇵"},
		{"a\x1b[2Jb", "a[2Jb"},
		{"bell\a", "bell"},
		{"\x1b]0;owned\a名", "]0;owned名"},
		{"c1\u009b31m", "c131m"},
		{"\u202egpj.exe", "gpj.exe"},
		{"\u2066x\u2069\u200e\u200f\u061c", "x"},
		{"tab\tnew\nline\r", "tabnewline"},
		{"del\x7f", "del"},
		{"bad\x9bbyte", "bad\ufffdbyte"},
		{"\u2028\u2029", ""},
		{"zwj 👨\u200d👩 ok", "zwj 👨\u200d👩 ok"}, // joiners draw, they do not steer
	} {
		if got := Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLine(t *testing.T) {
	if got := Line("a\tb\nc\x1b[0m"); got != "a b c[0m" {
		t.Errorf("Line = %q", got)
	}
}

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	in := "ok\t1\n\x1b[2J\a\u009b\u202ex\n名前\r\n"
	// One byte per Write: runes split across Writes are still whole.
	for i := range len(in) {
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got, want := out.String(), "ok\t1\n[2Jx\n名前\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "a\x1b[2J", "\u009b", "\u202e\u2066", "\xff\xc2", "名\a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Clean(s)
		if !utf8.ValidString(c) {
			t.Fatalf("Clean(%q) = %q: not UTF-8", s, c)
		}
		for _, r := range c {
			if Forbidden(r) {
				t.Fatalf("Clean(%q) = %q keeps %U", s, c, r)
			}
		}
		if Clean(c) != c {
			t.Fatalf("Clean not idempotent on %q", s)
		}
		if l := Line(s); strings.ContainsFunc(l, Forbidden) || !utf8.ValidString(l) {
			t.Fatalf("Line(%q) = %q", s, l)
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		w.Write([]byte(s[:len(s)/2]))
		w.Write([]byte(s[len(s)/2:]))
		if !utf8.Valid(out.Bytes()) || bytes.ContainsFunc(out.Bytes(), func(r rune) bool { return Forbidden(r) && r != '\n' && r != '\t' }) {
			t.Fatalf("Writer passed %q", out.String())
		}
	})
}
