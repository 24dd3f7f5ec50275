package window

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"github.com/skiffvpn/skiff/core/api"
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
				// Home with everything it can say at once: the error with
				// Details, a failure note, the reason.
				h.ui.tabs.SelectIndex(0)
				h.pump()
				fixedHome(h)
				home := h.ui.home
				home.showError(tr("explain.portInUse") + " " + tr("explain.noServer"))
				home.noteFailure(api.Notice{Kind: api.NoticeFlowFailed, Time: time.Unix(0, 0), Error: &api.Error{Code: api.CodeServerAuth}})
				h.pump()
				home.reason.SetText(tr("explain.serverAuth"))
				w.Content().Refresh()
				w.Resize(sz.AddWidthHeight(1, 0))
				w.Resize(sz)
				name := filepath.Join(dir, code+"-"+th+"-"+itoa(int(sz.Width))+"-0-busy.png")
				f, err := os.Create(name)
				if err != nil {
					t.Fatal(err)
				}
				png.Encode(f, w.Canvas().Capture())
				f.Close()
				home.showError("")
				home.flowBox.Hide()
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
