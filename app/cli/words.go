package cli

import "github.com/skiffvpn/skiff/internal/i18n"

// words returns the user's language for messages meant for people (the
// window's bundles, internal/i18n), by the environment's locale. Output
// meant for scripts (tables' headings, JSON, errors' codes) stays English.
func words() *i18n.Localizer { return i18n.New(i18n.Match(i18n.SystemLocales()...)) }
