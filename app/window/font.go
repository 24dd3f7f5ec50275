package window

import (
	_ "embed"
	"strings"
	"unicode"

	"fyne.io/fyne/v2"

	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/internal/i18n"
)

// cjkSubset is the bundled CJK fallback (font/cjk-subset.otf, 2.25 MiB,
// made by font/subset.py from Noto Sans CJK SC under the SIL OFL 1.1, see
// font/LICENSE): every Hanzi of GB 2312 and of Big5's common level, kana,
// the Hangul of KS X 1001, CJK punctuation and full-width forms, 11,596
// characters, and nothing else.
//
// skiffTheme gives it as the text font when the window has CJK text to
// show (needCJK): Fyne parses the text font once per text style (regular,
// bold, italic: 3.2 MiB of heap each for the subset), which a window in
// Russian with Latin node names need not pay. Fyne 2.7 looks a character up in
// the theme's font first, then in its own (Noto Sans: Latin, Cyrillic,
// Greek), then emoji, then the system's fonts through fontscan; the subset
// has no space and no Latin, so Fyne's font still draws those and sets
// every line's metrics, and a CJK node name draws from the subset whether
// or not the system has a CJK font (a fresh Debian installed without
// Recommends has none). A character outside the subset still falls back
// to the system's fonts. It also spares the window reading a whole system
// CJK collection (19.5 MB for NotoSansCJK-Regular.ttc) into memory for a
// few names. Bold text takes the same regular face: the subset would
// double for a bold one.
//
//go:embed font/cjk-subset.otf
var cjkSubset []byte

// cjkFont is cjkSubset as a Fyne resource.
var cjkFont = fyne.NewStaticResource("skiff-cjk-subset.otf", cjkSubset)

// Font implements fyne.Theme: the CJK subset first for proportional text
// when t.cjk (see cjkSubset); monospace and symbol text as Fyne's.
func (t skiffTheme) Font(s fyne.TextStyle) fyne.Resource {
	if !t.cjk || s.Monospace || s.Symbol {
		return t.Theme.Font(s)
	}
	return cjkFont
}

// needCJK reports whether the window has CJK text to show: its language
// is Chinese, or a node, group or subscription of p has a CJK name.
func needCJK(l i18n.Language, p *profile.Profile) bool {
	if strings.HasPrefix(l.Code, "zh") {
		return true
	}
	if p == nil {
		return false
	}
	for _, n := range p.Nodes {
		if hasCJK(n.Name()) {
			return true
		}
	}
	for _, g := range p.Groups {
		if hasCJK(g.Name) {
			return true
		}
	}
	for _, s := range p.Subscriptions {
		if hasCJK(s.DisplayName()) {
			return true
		}
	}
	return false
}

// hasCJK reports whether s has a Han, kana or Hangul character.
func hasCJK(s string) bool {
	for _, r := range s {
		if r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}
