package window

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"github.com/go-text/typesetting/font"

	"github.com/skiffvpn/skiff/core/profile"
)

// nodeNameWords are words of node names as Chinese, Japanese and Korean
// subscriptions write them: places, in both Chinese scripts.
const nodeNameWords = "香港 台湾 台灣 臺灣 日本 东京 東京 大阪 新加坡 狮城 獅城 美国 美國 洛杉矶 洛杉磯 硅谷 矽谷 纽约 紐約 " +
	"韩国 韓國 首尔 首爾 英国 英國 伦敦 倫敦 德国 德國 法兰克福 法蘭克福 俄罗斯 俄羅斯 莫斯科 澳门 澳門 " +
	"印度 土耳其 加拿大 澳大利亚 澳大利亞 荷兰 荷蘭 越南 泰国 泰國 马来西亚 馬來西亞 菲律宾 菲律賓 " +
	"专线 專線 高速 直连 直連 中转 中轉 节点 節點 剩余流量 剩餘流量 套餐到期 過期 官网 官網 " +
	"とうきょう トウキョウ 서울 한국 도쿄 「」『』（）【】，。、：！"

// TestCJKSubsetCovers checks the bundled fallback (font.go): it has every
// CJK character of the Chinese bundles and of common node names, nothing
// that Fyne's own font draws (Latin, Cyrillic: their shapes and metrics
// stay Fyne's), and a space with Noto Sans's advance and line metrics, so
// that a line measures the same whichever face Fyne asks for its space.
func TestCJKSubsetCovers(t *testing.T) {
	face, err := font.ParseTTF(bytes.NewReader(cjkSubset))
	if err != nil {
		t.Fatalf("the bundled font does not parse: %v", err)
	}
	has := func(r rune) bool { _, ok := face.NominalGlyph(r); return ok }
	want := map[rune]bool{}
	for _, code := range []string{"zh-Hans", "zh-Hant"} {
		b, err := os.ReadFile("../../internal/i18n/locales/" + code + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var msgs map[string]string
		if err := json.Unmarshal(b, &msgs); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			for _, r := range m {
				want[r] = true
			}
		}
	}
	for _, r := range nodeNameWords {
		want[r] = true
	}
	for r := range want {
		if r >= 0x2E80 && !has(r) {
			t.Errorf("the bundled font lacks %q (U+%04X)", r, r)
		}
	}
	for _, r := range "AZaz09.-·Яя€" {
		if has(r) {
			t.Errorf("the bundled font has %q, which Fyne's font should draw", r)
		}
	}
	noto, err := font.ParseTTF(bytes.NewReader(theme.DefaultTextFont().Content()))
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := face.NominalGlyph(' ')
	nsp, _ := noto.NominalGlyph(' ')
	if !has(' ') || face.HorizontalAdvance(sp) != noto.HorizontalAdvance(nsp) {
		t.Errorf("space: %v, advance %v; want Noto Sans's %v", has(' '), face.HorizontalAdvance(sp), noto.HorizontalAdvance(nsp))
	}
	if a, b := face.Upem(), noto.Upem(); a != b {
		t.Errorf("units per em %d, Noto Sans %d", a, b)
	}
	fe, _ := face.FontHExtents()
	ne, _ := noto.FontHExtents()
	if fe != ne {
		t.Errorf("line extents %+v, want Noto Sans's %+v", fe, ne)
	}
}

// TestCJKFromTheBundledFont: under Skiff's theme, CJK text is drawn by
// the bundled subset, whatever fonts the system has: the image equals the
// one drawn with the subset alone (Fyne then uses no other face), and
// differs from the one drawn with Fyne's own font alone (boxes).
func TestCJKFromTheBundledFont(t *testing.T) {
	a := test.NewTempApp(t)
	a.Settings().SetTheme(themeFor(ThemeLight, true))
	draw := func(s string, src fyne.Resource) []byte {
		txt := canvas.NewText(s, theme.Color(theme.ColorNameForeground))
		txt.TextSize = 24
		txt.FontSource = src
		w := test.NewTempWindow(t, txt)
		w.Resize(fyne.NewSize(200, 50))
		img := w.Canvas().Capture()
		var buf bytes.Buffer
		for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
			for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				buf.Write([]byte{byte(r >> 8), byte(g >> 8), byte(b >> 8)})
			}
		}
		return buf.Bytes()
	}
	for _, s := range []string{"香港 東京", "서울", "とうきょう"} {
		themed, subset, noto := draw(s, nil), draw(s, cjkFont), draw(s, theme.DefaultTextFont())
		switch {
		case bytes.Count(themed, themed[:3]) == len(themed)/3:
			t.Errorf("%q: nothing drawn", s)
		case !bytes.Equal(themed, subset):
			t.Errorf("%q is not drawn by the bundled font", s)
		case bytes.Equal(themed, noto):
			t.Errorf("%q is drawn as Fyne's font draws it: boxes", s)
		}
	}
}

// TestSubsetOnlyWithCJKText: the window takes the CJK subset as its text
// font when it has CJK text to show (a Chinese language, or a CJK name in
// the profile), and not otherwise, where it would cost 3.2 MiB of heap per
// text style for nothing; an import of a CJK node turns it on at once.
func TestSubsetOnlyWithCJKText(t *testing.T) {
	uses := func(h *harness) bool { return h.ui.fa.Settings().Theme().(skiffTheme).cjk }
	h := newHarness(t, Prefs{Language: "ru"}, addLinks(t, hy2Link))
	if uses(h) {
		t.Error("a Russian window with Latin names took the CJK subset")
	}
	add := addLinks(t, cjkVLESSLink)
	if err := h.ui.update(func(p *profile.Profile) error { add(p); return nil }); err != nil {
		t.Fatal(err)
	}
	h.pump()
	if !uses(h) {
		t.Error("a CJK node name did not bring the CJK subset")
	}
	if h := newHarness(t, Prefs{Language: "en"}, addLinks(t, cjkHy2Link)); !uses(h) {
		t.Error("an English window whose profile has a CJK name at start has no CJK subset")
	}
	if h := newHarness(t, Prefs{Language: "zh-Hant"}, addLinks(t, hy2Link)); !uses(h) {
		t.Error("a Traditional Chinese window has no CJK subset")
	}
	for _, tt := range []struct {
		s    string
		want bool
	}{{"Hy2 Home", false}, {"Москва 01", false}, {"🇭🇰 香港 Hy2 01", true}, {"とうきょう", true}, {"서울", true}, {"「」", false}} {
		if got := hasCJK(tt.s); got != tt.want {
			t.Errorf("hasCJK(%q) = %v", tt.s, got)
		}
	}
}
