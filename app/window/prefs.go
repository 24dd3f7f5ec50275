package window

import "github.com/skiffvpn/skiff/app/guiprefs"

// PrefsName is the file, beside the profile, that holds the window's own
// preferences.
const PrefsName = guiprefs.Name

// Theme choices.
const (
	ThemeSystem = guiprefs.ThemeSystem
	ThemeLight  = guiprefs.ThemeLight
	ThemeDark   = guiprefs.ThemeDark
)

// Prefs are the window's preferences (package guiprefs: the tray process
// shares them).
type Prefs = guiprefs.Prefs

func loadPrefs(dir string) (Prefs, error) { return guiprefs.Load(dir) }

func savePrefs(dir string, p Prefs) error { return guiprefs.Save(dir, p) }
