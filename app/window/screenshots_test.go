package window

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2"
)

// TestScreenshots draws every tab in both themes, in English and
// Simplified Chinese, at 800×600 and 1920×1080, into the folder
// SKIFF_SCREENSHOTS names (skipped without it), for a person to look
// at: nothing cut, nothing drawn over anything else.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("SKIFF_SCREENSHOTS")
	if dir == "" {
		t.Skip("SKIFF_SCREENSHOTS names no folder")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sizes := []fyne.Size{{Width: 800, Height: 600}, {Width: 1920, Height: 1080}}
	for _, code := range []string{"en", "zh-Hans"} {
		for _, th := range []string{ThemeLight, ThemeDark} {
			h := newHarness(t, Prefs{Language: code, Theme: th}, sampleProfile(t))
			w := h.ui.Window()
			for _, sz := range sizes {
				w.Resize(sz)
				for i, it := range h.ui.tabs.Items {
					h.ui.tabs.SelectIndex(i)
					h.pump()
					if i == 0 {
						fixedHome(h)
					}
					name := filepath.Join(dir, code+"-"+th+"-"+itoa(int(sz.Width))+"-"+itoa(i)+"-"+safe(it.Text)+".png")
					f, err := os.Create(name)
					if err != nil {
						t.Fatal(err)
					}
					if err := png.Encode(f, w.Canvas().Capture()); err != nil {
						t.Fatal(err)
					}
					f.Close()
				}
			}
		}
	}
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// safe keeps a tab's title for a file name (ASCII letters only).
func safe(s string) string {
	var b []byte
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b = append(b, c)
		}
	}
	return string(b)
}
