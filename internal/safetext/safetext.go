// Package safetext removes from display strings the runes that a terminal
// or a text renderer acts on instead of showing: C0 and C1 controls (ESC
// starts an escape sequence, BEL rings, U+009B is an 8-bit CSI), DEL, line
// and paragraph separators, and the bidirectional overrides, isolates and
// marks that make a name read differently from what it is (an RLO turns
// "gpj.exe" into "exe.jpg"). Skiff applies Clean to every name and title a
// subscription or link brings, at import, and the CLI to what it prints.
package safetext

import (
	"strings"
	"unicode/utf8"
)

// Forbidden reports whether r is never kept in a display string.
func Forbidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f: // C0 (tab and newlines too: a name is one line), DEL
		return true
	case r >= 0x80 && r <= 0x9f: // C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // ALM, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// Clean returns s without forbidden runes, as valid UTF-8: each invalid
// byte becomes U+FFFD (a lone 0x9b byte is a CSI to an 8-bit terminal).
// Clean(Clean(s)) == Clean(s).
func Clean(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case !Forbidden(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isClean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || Forbidden(r) {
			return false
		}
		i += size
	}
	return true
}

// Line is Clean for one cell of a table: tabs and line breaks become a
// space first, so that words they separated stay apart.
func Line(s string) string {
	return Clean(strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r', 0x2028, 0x2029:
			return ' '
		}
		return r
	}, s))
}
