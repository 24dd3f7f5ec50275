// Package i18n holds Skiff's message bundles — English, Simplified Chinese,
// Traditional Chinese and Russian — and the locale rules that go with them:
// which bundle a system locale gets, and how numbers, byte counts and dates
// are written in it.
//
// It is a leaf without Fyne, so the cgo-free CLI and service can speak the
// same words as the window: the window hands FS to Fyne's lang package, the
// CLI localises with go-i18n directly (Localizer). The bundles are
// go-i18n JSON files embedded at build time; a test keeps them complete
// and free of unused keys.
package i18n

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// FS holds the bundles, one file per language under Dir, named by its
// BCP 47 tag (en.json, zh-Hans.json, …).
//
//go:embed locales/*.json locales/fyne/*.json
var FS embed.FS

// Dir is the bundles' folder inside FS.
const Dir = "locales"

// A Language is one of the bundles.
type Language struct {
	Tag  language.Tag
	Code string // the file's name without .json, also what Settings saves
	Name string // the language's own name for itself
}

// Languages are the bundles, English (the fallback) first.
var Languages = []Language{
	{language.English, "en", "English"},
	{language.SimplifiedChinese, "zh-Hans", "简体中文"},
	{language.TraditionalChinese, "zh-Hant", "繁體中文"},
	{language.Russian, "ru", "Русский"},
}

var matcher = language.NewMatcher([]language.Tag{
	language.English, language.SimplifiedChinese, language.TraditionalChinese, language.Russian,
})

// Match returns the bundle for the locales a user prefers, most preferred
// first, as the OS spells them: BCP 47 ("zh-TW"), POSIX ("zh_CN.UTF-8",
// "ru_RU@euro") or a code of Languages. C, POSIX, an empty list or nothing
// we have gives English. Chinese without a script goes by region: Taiwan,
// Hong Kong and Macau read Traditional characters, the rest Simplified.
func Match(locales ...string) Language {
	var tags []language.Tag
	for _, l := range locales {
		if t, ok := parse(l); ok {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 {
		return Languages[0]
	}
	_, i, conf := matcher.Match(tags...)
	if conf == language.No {
		return Languages[0]
	}
	return Languages[i]
}

// ByCode returns the bundle saved as code, or false.
func ByCode(code string) (Language, bool) {
	for _, l := range Languages {
		if strings.EqualFold(l.Code, code) {
			return l, true
		}
	}
	return Language{}, false
}

// parse reads one locale name; false for C, POSIX and what is no locale.
func parse(s string) (language.Tag, bool) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, ".@"); i >= 0 { // zh_CN.UTF-8, ru_RU@euro
		s = s[:i]
	}
	if s == "" || s == "C" || s == "POSIX" {
		return language.Und, false
	}
	t, err := language.Parse(strings.ReplaceAll(s, "_", "-"))
	if err != nil {
		return language.Und, false
	}
	return t, true
}

// SystemLocales returns the locales set in the environment, in the order
// gettext reads them (LC_ALL, LC_MESSAGES, LANG; LANGUAGE's list when that
// is not C). The window asks the OS through Fyne instead, which also knows
// Windows' and macOS' settings.
func SystemLocales() []string {
	var loc string
	for _, env := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if loc = os.Getenv(env); loc != "" {
			break
		}
	}
	if _, ok := parse(loc); !ok && loc != "" {
		return nil
	}
	if l := os.Getenv("LANGUAGE"); l != "" {
		return strings.Split(l, ":")
	}
	if loc == "" {
		return nil
	}
	return []string{loc}
}

// File returns lang's bundle as stored.
func File(l Language) []byte {
	b, err := fs.ReadFile(FS, Dir+"/"+l.Code+".json")
	if err != nil {
		panic("i18n: bundle " + l.Code + " is not embedded: " + err.Error()) // the build is broken
	}
	return b
}

// FyneFile returns the words of Fyne's own widgets and dialogs (the file
// dialog, the confirm buttons, the entry's menu) in lang, keyed as Fyne
// 2.7 looks them up. Fyne ships them for some languages only (not
// Traditional Chinese) and picks them by the system's locale; the window
// registers these so that they follow the window's language.
func FyneFile(l Language) []byte {
	b, err := fs.ReadFile(FS, Dir+"/fyne/"+l.Code+".json")
	if err != nil {
		panic("i18n: Fyne's words in " + l.Code + " are not embedded: " + err.Error()) // the build is broken
	}
	return b
}

// Messages returns lang's bundle as key → text. A message with plural
// forms is one key per CLDR form the language uses: key.one, key.few,
// …, always with key.other (see Plural).
func Messages(l Language) (map[string]string, error) {
	var out map[string]string
	if err := json.Unmarshal(File(l), &out); err != nil {
		return nil, fmt.Errorf("i18n: %s.json: %w", l.Code, err)
	}
	return out, nil
}

// PluralForms are the CLDR plural forms, as the bundles name them.
var PluralForms = map[plural.Form]string{
	plural.Zero: "zero", plural.One: "one", plural.Two: "two",
	plural.Few: "few", plural.Many: "many", plural.Other: "other",
}

// Plural returns the key of message key's form for the count n in
// lang: key.one for 1 in English, key.few for 3 in Russian, key.other
// in Chinese. The forms are chosen here by CLDR's rules
// for the language shown, not by go-i18n, whose rules would be those of
// the tag Fyne's localiser happens to use.
func (l Language) Plural(key string, n int) string {
	if n < 0 {
		n = -n
	}
	return key + "." + PluralForms[plural.Cardinal.MatchPlural(l.Tag, n, 0, 0, 0, 0)]
}

// A Localizer speaks one language, for the CLI.
type Localizer struct {
	Lang Language
	loc  *i18n.Localizer
}

// New returns a Localizer for lang.
func New(l Language) *Localizer {
	b := i18n.NewBundle(language.English)
	b.RegisterUnmarshalFunc("json", json.Unmarshal)
	for _, x := range Languages {
		b.MustParseMessageFileBytes(File(x), x.Code+".json")
	}
	return &Localizer{Lang: l, loc: i18n.NewLocalizer(b, l.Code)}
}

// Fmt returns the formats of the Localizer's language.
func (l *Localizer) Fmt() Fmt { return NewFmt(l.Lang, func(k string) string { return l.T(k, nil) }) }

// N is T for a message with plural forms, chosen by n; data gets n as
// .N unless it is given.
func (l *Localizer) N(id string, n int, data map[string]any) string {
	d := map[string]any{"N": n}
	for k, v := range data {
		d[k] = v
	}
	return l.T(l.Lang.Plural(id, n), d)
}

// T returns message id filled with data (a map or struct for the
// template); the id itself when the bundle lacks it.
func (l *Localizer) T(id string, data any) string {
	s, err := l.loc.Localize(&i18n.LocalizeConfig{MessageID: id, TemplateData: data})
	if err != nil {
		return id
	}
	return s
}

// Formats in one language. Fmt is shared by the window and the CLI.
type Fmt struct {
	p    *message.Printer
	unit func(key string) string // the bundle's unit names (unit.B, unit.KiB, …)
}

// NewFmt returns the formats of lang; text looks up the bundle's words
// for units and date layouts (the window passes Fyne's lang.X, the CLI
// its Localizer's T).
func NewFmt(l Language, text func(key string) string) Fmt {
	return Fmt{p: message.NewPrinter(l.Tag), unit: text}
}

// Int writes n with the language's digit grouping: 12,345 / 12 345.
func (f Fmt) Int(n int64) string { return f.p.Sprintf("%d", n) }

// Decimal writes x with one decimal in the language's way: 1.5 / 1,5.
func (f Fmt) Decimal(x float64) string { return f.p.Sprintf("%.1f", x) }

var units = []string{"unit.KiB", "unit.MiB", "unit.GiB", "unit.TiB", "unit.PiB", "unit.EiB"}

// Bytes writes n bytes with a binary unit: "0 B", "12.3 KiB", "12,3 КиБ".
func (f Fmt) Bytes(n int64) string {
	const k = 1024
	if n < k && n > -k {
		return f.Int(n) + " " + f.unit("unit.B")
	}
	div, exp := int64(k), 0
	for m := n / k; (m >= k || m <= -k) && exp < len(units)-1; m /= k {
		div *= k
		exp++
	}
	return f.Decimal(float64(n)/float64(div)) + " " + f.unit(units[exp])
}

// MiB writes n bytes in whole MiB, rounded ("35 MiB"): a figure that
// does not change with a few KiB of heap movement, so the window does not
// repaint for it.
func (f Fmt) MiB(n uint64) string { return f.Int(int64((n+1<<19)>>20)) + " " + f.unit("unit.MiB") }

// Rate writes a rate of n bytes per second.
func (f Fmt) Rate(n int64) string { return f.Bytes(n) + f.unit("unit.perSecond") }

// Date writes t's local date in the language's layout.
func (f Fmt) Date(t time.Time) string { return t.Local().Format(f.unit("format.date")) }

// DateTime writes t's local date and minute.
func (f Fmt) DateTime(t time.Time) string { return t.Local().Format(f.unit("format.dateTime")) }

// Clock writes t's local time to the second.
func (f Fmt) Clock(t time.Time) string { return t.Local().Format("15:04:05") }
