package window

import (
	"encoding/json"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/lang"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/stats"
	"github.com/skiffvpn/skiff/core/subscription"
	"github.com/skiffvpn/skiff/internal/i18n"
)

// Nodes with the names users of the field have: CJK, emoji flags.
const (
	cjkHy2Link   = "hysteria2://secret@127.0.0.1:9/?insecure=1#🇭🇰 香港 Hy2 01"
	cjkVLESSLink = "vless://b831381d-6324-4d53-ad4f-8cda48b30811@127.0.0.1:443?type=ws&security=tls&path=%2Fws#日本 VLESS 东京"
)

// keyLike is a text that is a message key shown as itself: a key the
// bundles lack.
var keyLike = regexp.MustCompile(`^[a-z]+\.[a-zA-Z0-9.]+$`)

// texts returns every text the objects show, with the object.
func texts(objs []fyne.CanvasObject) map[string]fyne.CanvasObject {
	out := map[string]fyne.CanvasObject{}
	add := func(s string, o fyne.CanvasObject) {
		if s != "" {
			out[s] = o
		}
	}
	for _, o := range objs {
		switch w := o.(type) {
		case *widget.Label:
			add(w.Text, o)
		case *widget.Button:
			add(w.Text, o)
		case *widget.Check:
			add(w.Text, o)
		case *widget.Select:
			add(w.PlaceHolder, o)
			for _, s := range w.Options {
				add(s, o)
			}
		case *widget.Entry:
			add(w.PlaceHolder, o)
		case *canvas.Text:
			add(w.Text, o)
		}
	}
	return out
}

// cut returns the shown texts that do not fit where they were laid out:
// a label, button or check narrower than its text (widgets that ellipsise
// or wrap on purpose are left out), or a text that reaches past the
// window's edge.
func cut(c fyne.Canvas, objs []fyne.CanvasObject) []string {
	var out []string
	drv := fyne.CurrentApp().Driver()
	for _, o := range objs {
		if !o.Visible() || o.Size().IsZero() {
			continue
		}
		var name string
		switch w := o.(type) {
		case *widget.Label:
			if w.Truncation != fyne.TextTruncateOff || w.Wrapping != fyne.TextWrapOff {
				continue
			}
			name = "label " + w.Text
		case *widget.Button:
			name = "button " + w.Text
		case *widget.Check:
			name = "check " + w.Text
		case *canvas.Text:
			if w.Text == "" {
				continue
			}
			if right := drv.AbsolutePositionForObject(o).X + fyne.MeasureText(w.Text, w.TextSize, w.TextStyle).Width; right > c.Size().Width+1 {
				out = append(out, fmt.Sprintf("text %q ends at x=%.0f, past the window's %.0f", w.Text, right, c.Size().Width))
			}
			continue
		default:
			continue
		}
		if min, got := o.MinSize(), o.Size(); got.Width+0.5 < min.Width {
			out = append(out, fmt.Sprintf("%s: %.0f px wide, needs %.0f", name, got.Width, min.Width))
		}
	}
	return out
}

// shownObjects returns o and everything under it that is shown (a hidden
// container hides what it holds, which keeps its last, stale, layout).
func shownObjects(o fyne.CanvasObject) []fyne.CanvasObject {
	if !o.Visible() {
		return nil
	}
	out := []fyne.CanvasObject{o}
	switch c := o.(type) {
	case *fyne.Container:
		for _, x := range c.Objects {
			out = append(out, shownObjects(x)...)
		}
	case fyne.Widget:
		for _, x := range test.WidgetRenderer(c).Objects() {
			out = append(out, shownObjects(x)...)
		}
	}
	return out
}

// sampleProfile has CJK nodes, a greyed node and a failover group.
func sampleProfile(t *testing.T) func(p *profile.Profile) {
	links := addLinks(t, cjkHy2Link, cjkVLESSLink, hy2Link, vlessLink, vmessLink)
	return func(p *profile.Profile) {
		links(p)
		subscription.ApplyGroups(p, "", nil)
	}
}

// TestViewsInEveryLanguage opens every tab in every language at 800x600:
// no text is a key the bundles lack or a template gone wrong, nothing is
// cut, and a translated window shows words English does not have.
func TestViewsInEveryLanguage(t *testing.T) {
	english := map[string]bool{}
	for _, l := range i18n.Languages {
		t.Run(l.Code, func(t *testing.T) {
			h := newHarness(t, Prefs{Language: l.Code, Theme: ThemeLight}, sampleProfile(t))
			w := h.ui.Window()
			w.Resize(fyne.NewSize(800, 600))
			h.pump()
			seen := map[string]bool{}
			for i, item := range h.ui.tabs.Items {
				h.ui.tabs.SelectIndex(i)
				h.pump()
				w.Resize(fyne.NewSize(800, 600))
				if got := w.Canvas().Size(); got.Width > 800 || got.Height > 600 {
					t.Errorf("%s: the window grew to %v to fit the tab", item.Text, got)
				}
				objs := shownObjects(w.Canvas().Content())
				for s := range texts(objs) {
					seen[s] = true
					if keyLike.MatchString(s) || strings.Contains(s, "<no value>") || strings.Contains(s, "{{") {
						t.Errorf("%s: shows %q", item.Text, s)
					}
				}
				for _, c := range cut(w.Canvas(), objs) {
					t.Errorf("%s at 800x600: %s", item.Text, c)
				}
			}
			if l.Code == "en" {
				english = seen
				return
			}
			fresh := 0
			for s := range seen {
				if !english[s] {
					fresh++
				}
			}
			if fresh < 50 {
				t.Errorf("only %d texts differ from English", fresh)
			}
		})
	}
}

// TestLanguageSwitchAtOnce: choosing another language in Settings and
// saving rebuilds the views in it, on the same tab.
func TestLanguageSwitchAtOnce(t *testing.T) {
	h := newHarness(t, Prefs{}, addLinks(t, hy2Link))
	h.ui.tabs.SelectIndex(5)
	v := h.ui.settings
	for i, l := range i18n.Languages {
		if l.Code == "zh-Hant" {
			v.langSel.SetSelectedIndex(i + 1)
		}
	}
	h.pump() // picked, not saved: the language applies at once
	if got := h.ui.tabs.Items[0].Text; got != "首頁" {
		t.Errorf("Home tab reads %q after switching to Traditional Chinese", got)
	}
	if h.ui.tabs.SelectedIndex() != 5 {
		t.Errorf("tab %d selected after the switch, want Settings", h.ui.tabs.SelectedIndex())
	}
	if got := h.ui.home.toggle.Text; got != "連線" {
		t.Errorf("the switch reads %q", got)
	}
	if p, _ := loadPrefs(h.ui.prefsDir); p.Language != "zh-Hant" {
		t.Errorf("saved language %q", p.Language)
	}
	if got := bytesString(1536); got != "1.5 KiB" {
		t.Errorf("bytes in zh-Hant: %q", got)
	}
}

// fixedHome draws Home with figures that do not change from run to run.
func fixedHome(h *harness) {
	home := h.ui.home
	home.memAt = time.Time{}
	home.update(api.Status{State: core.Stopped}, core.Snapshot{Memory: stats.Memory{Heap: 3 << 20, RSS: 40 << 20}})
}

// TestGoldenImages compares Home and Profiles, light theme, with the
// images under testdata/ (an image that differs is written to
// testdata/failed/, and can become the new master when the change is
// wanted).
func TestGoldenImages(t *testing.T) {
	for _, code := range []string{"en", "zh-Hans"} {
		t.Run(code, func(t *testing.T) {
			h := newHarness(t, Prefs{Language: code, Theme: ThemeLight}, sampleProfile(t))
			w := h.ui.Window()
			w.Resize(fyne.NewSize(800, 600))
			h.pump()
			fixedHome(h)
			h.ui.tabs.SelectIndex(0)
			test.AssertImageMatches(t, "home_"+code+".png", w.Canvas().Capture())
			h.ui.tabs.SelectIndex(1)
			h.pump()
			test.AssertImageMatches(t, "profiles_"+code+".png", w.Canvas().Capture())
		})
	}
}

// blank reports whether img is one colour.
func blank(img image.Image) bool {
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if img.At(x, y) != first {
				return false
			}
		}
	}
	return true
}

// renderText draws s on a test canvas and returns the image.
func renderText(t *testing.T, s string) image.Image {
	txt := canvas.NewText(s, theme.Color(theme.ColorNameForeground))
	txt.TextSize = 24
	w := test.NewTempWindow(t, txt)
	w.Resize(fyne.NewSize(200, 50))
	return w.Canvas().Capture()
}

// TestCJKDrawnAsGlyphs: CJK node names come out as glyphs, not the boxes
// a font without them draws. Two names of different characters must give
// different images (boxes look alike), and neither may look like the
// rendering of characters no font has (private use).
func TestCJKDrawnAsGlyphs(t *testing.T) {
	test.NewTempApp(t)
	boxes := renderText(t, "\U000F0001\U000F0002")
	a, b := renderText(t, "香港"), renderText(t, "东京")
	for _, img := range []image.Image{a, b} {
		if blank(img) {
			t.Fatal("nothing drawn")
		}
		if sameImage(img, boxes) {
			t.Error("CJK text is drawn as replacement boxes")
		}
	}
	if sameImage(a, b) {
		t.Error("香港 and 东京 render alike: boxes, not glyphs")
	}
}

// sameImage reports whether two images have the same pixels.
func sameImage(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

// TestChosenLanguageWhateverTheSystem: the window shows the language it
// chose under any system locale, including those Fyne has words of its
// own for (whose localiser once answered Skiff's keys with the keys).
func TestChosenLanguageWhateverTheSystem(t *testing.T) {
	defer setLanguage(i18n.Languages[0])
	for _, sys := range []string{"C.UTF-8", "en_US.UTF-8", "zh_CN.UTF-8", "zh_TW.UTF-8", "ru_RU.UTF-8", "de_DE.UTF-8", "pt_BR.UTF-8", "ja_JP.UTF-8"} {
		t.Setenv("LANG", sys)
		t.Setenv("LC_ALL", "")
		t.Setenv("LC_MESSAGES", "")
		t.Setenv("LANGUAGE", "")
		for _, l := range i18n.Languages {
			if err := setLanguage(l); err != nil {
				t.Fatal(err)
			}
			msgs, _ := i18n.Messages(l)
			if got := tr("tab.home"); got != msgs["tab.home"] {
				t.Errorf("system %s, chose %s: tab.home = %q, want %q", sys, l.Code, got, msgs["tab.home"])
			}
			if got, want := nodesString(5), strings.ReplaceAll(msgs[l.Plural("count.nodes", 5)], "{{.N}}", "5"); got != want {
				t.Errorf("system %s, chose %s: 5 nodes = %q, want %q", sys, l.Code, got, want)
			}
			// Fyne's own words (its dialogs' buttons, the file dialog)
			// follow the chosen language too.
			var words map[string]any
			if err := json.Unmarshal(i18n.FyneFile(l), &words); err != nil {
				t.Fatal(err)
			}
			if got := lang.L("Cancel"); got != words["Cancel"] {
				t.Errorf("system %s, chose %s: Fyne's Cancel = %q, want %q", sys, l.Code, got, words["Cancel"])
			}
			if got, want := lang.X("file.name", "Name"), words["file.name"].(map[string]any)["other"]; got != want {
				t.Errorf("system %s, chose %s: Fyne's file.name = %q, want %q", sys, l.Code, got, want)
			}
		}
	}
}

// TestConnectionColumnsFit: the Connections table's columns, each as wide
// as its title in the language needs, fit in an 800 px window, so that
// the last column (each connection's close button) is on screen without
// scrolling sideways. Russian's titles once took 900 px.
func TestConnectionColumnsFit(t *testing.T) {
	defer setLanguage(i18n.Languages[0])
	test.NewTempApp(t)
	for _, l := range i18n.Languages {
		if err := setLanguage(l); err != nil {
			t.Fatal(err)
		}
		var sum float32
		for i := range connColumns {
			sum += connColumnWidth(i) + theme.Padding() // and the space between columns
		}
		t.Logf("%s: %.0f px", l.Code, sum)
		if limit := float32(800) - 2*theme.Padding(); sum > limit {
			t.Errorf("%s: the columns take %.0f px, more than %.0f", l.Code, sum, limit)
		}
	}
}

// TestFyneWordsComplete: each language has Fyne's own words under exactly
// the keys Fyne (the version in go.mod) looks up: those of its English
// file, read from the module.
func TestFyneWordsComplete(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "fyne.io/fyne/v2").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "lang", "translations", "base.en.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fyneEN map[string]any
	if err := json.Unmarshal(b, &fyneEN); err != nil {
		t.Fatal(err)
	}
	for _, l := range i18n.Languages {
		var words map[string]any
		if err := json.Unmarshal(i18n.FyneFile(l), &words); err != nil {
			t.Fatalf("%s: %v", l.Code, err)
		}
		for k := range fyneEN {
			if w, ok := words[k]; !ok || w == "" {
				t.Errorf("%s lacks Fyne's %q", l.Code, k)
			}
		}
		for k := range words {
			if _, ok := fyneEN[k]; !ok {
				t.Errorf("%s has %q, which Fyne does not look up", l.Code, k)
			}
		}
	}
}
