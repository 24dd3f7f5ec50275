package exitline

import (
	"strings"
	"unicode/utf8"
)

// MenuLabel is s as a tray menu shows it: where the menu's font draws no
// flags (menuDrawsFlags), without them, so "🇩🇪 Frankfurt" does not read
// "DE Frankfurt" and the exit line not "DE DE".
func MenuLabel(s string) string { return menuLabel(s, menuDrawsFlags) }

// menuLabel drops the flags of s, and a space beside each, unless
// drawsFlags; a label that is only flags stays (its letters name it).
func menuLabel(s string, drawsFlags bool) string {
	if drawsFlags || !strings.ContainsFunc(s, isIndicator) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isIndicator(r) {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isIndicator(r) {
				break
			}
			i += n
		}
		if i < len(s) && s[i] == ' ' {
			i++
		}
	}
	if out := strings.TrimSpace(b.String()); out != "" {
		return out
	}
	return s
}

// isIndicator reports whether r is a regional indicator letter, half of a
// flag.
func isIndicator(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }
