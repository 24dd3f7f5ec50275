package window

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// skiffTheme is Fyne's default theme with the colours text is drawn in
// changed where the default fails WCAG AA (4.5:1) against the surfaces it
// is drawn on — light's green "Saved" note was 1.5:1, its warnings 2.2:1,
// greyed text 1.3:1 — and with the outline of an unchecked box and an
// entry visible in light (3:1, for controls). TestTextContrast computes
// every pair. forced holds it to one variant (the user's choice in
// Settings); otherwise it follows the system's.
type skiffTheme struct {
	fyne.Theme
	forced  bool
	variant fyne.ThemeVariant
	cjk     bool // the text font puts the CJK subset first (see cjkSubset)
}

// palette is what skiffTheme changes, per variant.
var palette = map[fyne.ThemeVariant]map[fyne.ThemeColorName]color.Color{
	theme.VariantLight: {
		theme.ColorNameSuccess:     color.NRGBA{R: 0x13, G: 0x66, B: 0x2b, A: 0xff}, // Fyne's: 1.5:1 on white
		theme.ColorNameWarning:     color.NRGBA{R: 0x7a, G: 0x4e, B: 0x00, A: 0xff}, // 2.2:1
		theme.ColorNameError:       color.NRGBA{R: 0xb0, G: 0x15, B: 0x1d, A: 0xff}, // 3.7:1
		theme.ColorNamePlaceHolder: color.NRGBA{R: 0x5f, G: 0x5f, B: 0x5f, A: 0xff}, // 3.5:1
		theme.ColorNameDisabled:    color.NRGBA{R: 0x61, G: 0x61, B: 0x61, A: 0xff}, // greyed text, 1.3:1
		theme.ColorNamePrimary:     color.NRGBA{R: 0x15, G: 0x50, B: 0xb5, A: 0xff},
		theme.ColorNameHyperlink:   color.NRGBA{R: 0x15, G: 0x50, B: 0xb5, A: 0xff},
		theme.ColorNameSelection:   color.NRGBA{R: 0x00, G: 0x6c, B: 0xff, A: 0x30},
		theme.ColorNameInputBorder: color.NRGBA{R: 0x8a, G: 0x8a, B: 0x8a, A: 0xff}, // unchecked boxes: 1.3:1
	},
	theme.VariantDark: {
		theme.ColorNameError:       color.NRGBA{R: 0xff, G: 0x6e, B: 0x64, A: 0xff},
		theme.ColorNameDisabled:    color.NRGBA{R: 0x94, G: 0x94, B: 0x94, A: 0xff},
		theme.ColorNameInputBorder: color.NRGBA{R: 0x7a, G: 0x7a, B: 0x7a, A: 0xff},
		theme.ColorNamePrimary:     color.NRGBA{R: 0x5c, G: 0x9d, B: 0xff, A: 0xff},
		theme.ColorNameHyperlink:   color.NRGBA{R: 0x5c, G: 0x9d, B: 0xff, A: 0xff},
		// A light primary, so its buttons take dark words.
		theme.ColorNameForegroundOnPrimary: color.NRGBA{R: 0x10, G: 0x10, B: 0x14, A: 0xff},
	},
}

// Color implements fyne.Theme.
func (t skiffTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if t.forced {
		v = t.variant
	}
	if c, ok := palette[v][n]; ok {
		return c
	}
	return t.Theme.Color(n, v)
}

// checkBox is an unchecked box with an outline of 2 units in 24 (Fyne's
// has 1: under a pixel at the usual 20 px, too faint to see in light).
var checkBox = fyne.NewStaticResource("skiff-check-box.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="24" height="24" viewBox="0 0 24 24">`+
	`<path fill-rule="evenodd" d="M4.5 3h15A1.5 1.5 0 0 1 21 4.5v15a1.5 1.5 0 0 1-1.5 1.5h-15A1.5 1.5 0 0 1 3 19.5v-15A1.5 1.5 0 0 1 4.5 3zM5 5v14h14V5z"/></svg>`))

// Icon implements fyne.Theme.
func (t skiffTheme) Icon(n fyne.ThemeIconName) fyne.Resource {
	if n == theme.IconNameCheckButton {
		return theme.NewThemedResource(checkBox)
	}
	return t.Theme.Icon(n)
}

// themeFor returns the theme for a Theme preference, with the CJK subset
// as the first text font when cjk (see needCJK).
func themeFor(pref string, cjk bool) fyne.Theme {
	switch pref {
	case ThemeLight:
		return skiffTheme{Theme: theme.DefaultTheme(), forced: true, variant: theme.VariantLight, cjk: cjk}
	case ThemeDark:
		return skiffTheme{Theme: theme.DefaultTheme(), forced: true, variant: theme.VariantDark, cjk: cjk}
	}
	return skiffTheme{Theme: theme.DefaultTheme(), cjk: cjk}
}

// applyTheme follows the system, or forces the user's light/dark choice,
// with the CJK subset when the window has CJK text to show. The views
// follow at once: see watchTheme.
func (u *UI) applyTheme() {
	u.mu.Lock()
	p := u.prof
	u.mu.Unlock()
	if t := themeFor(u.Prefs().Theme, needCJK(language(), p)); u.fa.Settings().Theme() != t {
		u.fa.Settings().SetTheme(t)
	}
}

// watchTheme rebuilds the views when the theme or the system's variant
// changes. Fyne re-applies a new theme to the widgets it knows, but not
// to all of it: list and table rows kept the old theme's buttons, and
// colours the window had looked up stayed (TestThemeSwitchAtOnce), so
// nothing is left to chance: the views are made again, as for a new
// language.
func (u *UI) watchTheme() {
	s := u.fa.Settings()
	last, lastV := s.Theme(), s.ThemeVariant()
	s.AddListener(func(s fyne.Settings) {
		th, v := s.Theme(), s.ThemeVariant()
		if th == last && v == lastV {
			return
		}
		last, lastV = th, v
		u.do(func() {
			if u.ctx.Err() == nil {
				u.rebuild()
			}
		})
	})
}
