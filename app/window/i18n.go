package window

import (
	"io"
	"log"
	"runtime"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/lang"

	"github.com/skiffvpn/skiff/internal/i18n"
)

// The window's words come from internal/i18n's bundles through Fyne's
// lang package. Fyne picks its localiser by the system locale only and
// has no call to choose another, and a key its localiser's language lacks
// comes out as the key. So the window registers the one language it
// shows under every tag Fyne's localiser can pick (Fyne's own languages,
// fyneTags, and Skiff's): whatever the system locale, lang.X answers in
// the chosen language, and Fyne's own words (a file dialog's buttons)
// still follow the system. Every bundle has every message
// (TestBundlesComplete), so registering one replaces all of the
// previous one's text. Plural forms are chosen here by the shown
// language's rules (i18n.Language.Plural), not by the localiser's tag.
//
// Like lang's localiser, the chosen language is the process's: guarded
// by langMu, read by the formatters.
var (
	langMu  sync.Mutex
	curLang = i18n.Languages[0]
)

// fyneTags are the languages Fyne v2.7 ships words for (its
// lang/translations; TestFyneTags checks the list against the module).
var fyneTags = []string{"cs", "de", "el", "en", "es", "fr", "pl", "pt", "pt-BR", "ru", "sv", "ta", "uk", "zh-Hans"}

// M is a message's template data.
type M = map[string]any

// tr returns the message key in the window's language, filled with data.
// A key missing from the bundles shows as itself, which the tests catch.
func tr(key string, data ...any) string { return lang.X(key, key, data...) }

// trN is tr for a message with plural forms, chosen by n by the rules of
// the window's language (the data gets n as .N unless it has its own).
func trN(key string, n int, data ...any) string {
	d := M{"N": n}
	if len(data) > 0 {
		if m, ok := data[0].(M); ok {
			for k, v := range m {
				d[k] = v
			}
		}
	}
	return tr(language().Plural(key, n), d)
}

// languageFor returns the language a saved choice ("" follows the
// system) gives.
func languageFor(code string) i18n.Language {
	if l, ok := i18n.ByCode(code); ok {
		return l
	}
	return i18n.Match(systemLocales()...)
}

// systemLocales are the user's locales: from the environment on the Unix
// desktops (where Fyne's reading complains about LANG=C.UTF-8, Debian's
// default), else as Fyne asks the OS.
func systemLocales() []string {
	switch runtime.GOOS {
	case "windows", "darwin", "android", "ios", "js":
		return []string{lang.SystemLocale().String()}
	}
	return i18n.SystemLocales()
}

// setLanguage makes l the window's language from the next lookup on.
func setLanguage(l i18n.Language) error {
	langMu.Lock()
	defer langMu.Unlock()
	tags := append([]string(nil), fyneTags...)
	for _, x := range i18n.Languages {
		tags = append(tags, x.Code)
	}
	// Each registration makes Fyne read the system locale again, and
	// under LANG=C.UTF-8 (Debian's default) it logs three lines that it
	// cannot parse it. Fyne logs through the standard logger (the
	// window's own log is slog's): quiet it while registering.
	out := log.Writer()
	log.SetOutput(io.Discard)
	defer log.SetOutput(out)
	// Fyne's own words (its file dialog, Yes/No, an entry's menu) go
	// with the window's: Fyne would pick them by the system's locale, and
	// has none in Traditional Chinese.
	data, words := i18n.File(l), i18n.FyneFile(l)
	for _, t := range tags {
		if err := lang.AddTranslationsForLocale(data, fyne.Locale(t)); err != nil {
			return err
		}
		if err := lang.AddTranslationsForLocale(words, fyne.Locale(t)); err != nil {
			return err
		}
	}
	curLang = l
	return nil
}

// language returns the window's language.
func language() i18n.Language {
	langMu.Lock()
	defer langMu.Unlock()
	return curLang
}

// fmtr returns the formats of the window's language.
func fmtr() i18n.Fmt { return i18n.NewFmt(language(), func(k string) string { return tr(k) }) }

// bytesString formats n bytes with a binary unit: "0 B", "12.3 KiB".
func bytesString(n int64) string { return fmtr().Bytes(n) }

// mibString formats n bytes in whole MiB, rounded: "35 MiB".
func mibString(n uint64) string { return fmtr().MiB(n) }

// rateString formats a rate in bytes per second.
func rateString(n int64) string { return fmtr().Rate(n) }

// ageString formats how long ago t was, coarsely: "12 s", "3 min", "2 h".
func ageString(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return tr("age.never")
	case d < time.Minute:
		return tr("age.seconds", M{"N": int(d.Seconds())})
	case d < time.Hour:
		return tr("age.minutes", M{"N": int(d.Minutes())})
	case d < 48*time.Hour:
		return tr("age.hours", M{"N": int(d.Hours())})
	}
	return tr("age.days", M{"N": int(d.Hours() / 24)})
}

// nodesString is "1 node", "12 nodes".
func nodesString(n int) string { return trN("count.nodes", n) }
