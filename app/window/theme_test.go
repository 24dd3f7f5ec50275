package window

import (
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// capture draws tab i of h's window at 800x600.
func capture(h *harness, i int) image.Image {
	h.ui.tabs.SelectIndex(i)
	h.pump()
	if i == 0 {
		fixedHome(h)
	}
	return h.ui.Window().Canvas().Capture()
}

// TestThemeSwitchAtOnce: a window switched from dark to light (and back)
// draws every tab exactly as a window opened in that theme: nothing keeps
// a colour of the theme before.
func TestThemeSwitchAtOnce(t *testing.T) {
	for _, c := range []struct{ from, to string }{{ThemeDark, ThemeLight}, {ThemeLight, ThemeDark}} {
		t.Run(c.from+"-to-"+c.to, func(t *testing.T) {
			want := newHarness(t, Prefs{Theme: c.to}, sampleProfile(t))
			want.ui.Window().Resize(fyne.NewSize(800, 600))
			h := newHarness(t, Prefs{Theme: c.from}, sampleProfile(t))
			h.ui.Window().Resize(fyne.NewSize(800, 600))
			for i := range h.ui.tabs.Items {
				capture(h, i) // drawn once in the first theme
			}
			p := h.ui.Prefs()
			p.Theme = c.to
			if err := h.ui.setPrefs(p); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // Fyne applies a theme on a goroutine of its own
			h.pump()
			for i, item := range h.ui.tabs.Items {
				got, exp := capture(h, i), capture(want, i)
				if !sameImage(got, exp) {
					dir := filepath.Join("testdata", "failed")
					os.MkdirAll(dir, 0o755)
					for name, img := range map[string]image.Image{"switched": got, "fresh": exp} {
						f, _ := os.Create(filepath.Join(dir, "theme-"+c.to+"-"+item.Text+"-"+name+".png"))
						png.Encode(f, img)
						f.Close()
					}
					t.Errorf("%s after switching to %s differs from a window opened in %s (images in %s)", item.Text, c.to, c.to, dir)
				}
			}
		})
	}
}

// luminance is a colour's relative luminance (WCAG 2.x).
func luminance(c color.Color) float64 {
	r, g, b, _ := color.NRGBAModel.Convert(c).RGBA()
	ch := func(v uint32) float64 {
		s := float64(v>>8) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(b)
}

// contrast is the WCAG contrast ratio of two opaque colours.
func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// over blends c over the opaque base.
func over(c, base color.Color) color.Color {
	f := color.NRGBAModel.Convert(c).(color.NRGBA)
	b := color.NRGBAModel.Convert(base).(color.NRGBA)
	a := float64(f.A) / 255
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x)*a + float64(y)*(1-a))) }
	return color.NRGBA{R: mix(f.R, b.R), G: mix(f.G, b.G), B: mix(f.B, b.B), A: 0xff}
}

// TestTextContrast computes the contrast of every pair of theme colours
// the window draws text in, over the surfaces it draws them on, in both
// themes: each must pass WCAG AA for text (4.5:1); the outlines of
// unchecked boxes and entries must pass the 3:1 of controls.
func TestTextContrast(t *testing.T) {
	test.NewTempApp(t)
	texts := []fyne.ThemeColorName{
		theme.ColorNameForeground, theme.ColorNamePlaceHolder, theme.ColorNameDisabled,
		theme.ColorNameError, theme.ColorNameWarning, theme.ColorNameSuccess, theme.ColorNamePrimary,
		theme.ColorNameHyperlink,
	}
	surfaces := []fyne.ThemeColorName{
		theme.ColorNameBackground, theme.ColorNameInputBackground, theme.ColorNameHeaderBackground,
		theme.ColorNameMenuBackground, theme.ColorNameOverlayBackground,
	}
	onColours := map[fyne.ThemeColorName]fyne.ThemeColorName{ // button text on its fill
		theme.ColorNameForegroundOnPrimary: theme.ColorNamePrimary,
		theme.ColorNameForegroundOnError:   theme.ColorNameError,
		theme.ColorNameForegroundOnSuccess: theme.ColorNameSuccess,
		theme.ColorNameForegroundOnWarning: theme.ColorNameWarning,
		theme.ColorNameForeground:          theme.ColorNameButton,
	}
	for _, pref := range []string{ThemeLight, ThemeDark} {
		th := themeFor(pref, false)
		c := func(n fyne.ThemeColorName) color.Color { return th.Color(n, theme.VariantDark) }
		bg := c(theme.ColorNameBackground)
		check := func(what string, fg, back color.Color, min float64) {
			if r := contrast(fg, back); r < min {
				t.Errorf("%s: %s is %.2f:1, under %.1f:1", pref, what, r, min)
			} else {
				t.Logf("%s: %s %.2f:1", pref, what, r)
			}
		}
		for _, fg := range texts {
			for _, s := range surfaces {
				check(string(fg)+" on "+string(s), c(fg), over(c(s), bg), 4.5)
			}
			// a selected or hovered list row
			check(string(fg)+" on selection", c(fg), over(c(theme.ColorNameSelection), bg), 4.5)
		}
		for fg, fill := range onColours {
			check(string(fg)+" on "+string(fill), c(fg), over(c(fill), bg), 4.5)
		}
		// Home's error box: error text on the error tint.
		tint := errorTintOf(c(theme.ColorNameError))
		check("error on the error box", c(theme.ColorNameError), over(tint, bg), 4.5)
		check("foreground on the error box", c(theme.ColorNameForeground), over(tint, bg), 4.5)
		// The graph's legends on its background.
		check("upload legend", c(colorUp), over(c(theme.ColorNameInputBackground), bg), 4.5)
		check("download legend", c(colorDown), over(c(theme.ColorNameInputBackground), bg), 4.5)
		// Controls: an unchecked box's and an entry's outline.
		check("input border on background", c(theme.ColorNameInputBorder), bg, 3)
	}
}

// TestUncheckedBoxVisible draws an unchecked box in each theme and checks
// that its outline, as drawn, stands out 3:1 from the background.
func TestUncheckedBoxVisible(t *testing.T) {
	for _, pref := range []string{ThemeLight, ThemeDark} {
		a := test.NewTempApp(t)
		a.Settings().SetTheme(themeFor(pref, false))
		c := widget.NewCheck("", nil)
		w := test.NewTempWindow(t, c)
		w.Resize(fyne.NewSize(60, 60))
		img := w.Canvas().Capture()
		bg := themeFor(pref, false).Color(theme.ColorNameBackground, theme.VariantLight)
		best := 0.0
		r := img.Bounds()
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				best = math.Max(best, contrast(img.At(x, y), bg))
			}
		}
		if best < 3 {
			t.Errorf("%s: the unchecked box's outline is at most %.2f:1 from the background, under 3:1", pref, best)
		} else {
			t.Logf("%s: unchecked box outline %.2f:1", pref, best)
		}
	}
}
