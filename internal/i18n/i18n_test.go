package i18n

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

var placeholder = regexp.MustCompile(`{{\s*\.(\w+)\s*}}`)

// fields returns the template fields a message uses, sorted.
func fields(s string) string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// formsOf returns the plural forms lang's rules give for some counts.
func formsOf(l Language) map[string]bool {
	out := map[string]bool{"other": true}
	for n := 0; n <= 1000; n++ {
		out[strings.TrimPrefix(l.Plural("", n), ".")] = true
	}
	return out
}

// split returns a key's message and plural form ("" when it has none).
func split(key string) (base, form string) {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		for _, f := range PluralForms {
			if key[i+1:] == f {
				return key[:i], f
			}
		}
	}
	return key, ""
}

// TestBundlesComplete: every language has every message of English; a
// message with plural forms has exactly the forms the language's rules
// use; the template fields are English's; no text is empty; go-i18n
// reads the file.
func TestBundlesComplete(t *testing.T) {
	en, err := Messages(Languages[0])
	if err != nil {
		t.Fatal(err)
	}
	enFields := map[string]string{} // message → fields of its "other"
	plurals := map[string]bool{}
	for k, v := range en {
		base, form := split(k)
		if form != "" {
			plurals[base] = true
		}
		if form == "" || form == "other" {
			enFields[base] = fields(v)
		}
	}
	for _, l := range Languages {
		msgs, err := Messages(l)
		if err != nil {
			t.Fatal(err)
		}
		b := i18n.NewBundle(language.English)
		b.RegisterUnmarshalFunc("json", json.Unmarshal)
		if _, err := b.ParseMessageFileBytes(File(l), l.Code+".json"); err != nil {
			t.Errorf("%s: go-i18n: %v", l.Code, err)
		}
		forms := formsOf(l)
		// Where "one" is 1 alone (English), its text may spell the
		// count out ("every hour").
		oneIsOne := l.Plural("", 21) != ".one" && l.Plural("", 0) != ".one"
		want := map[string]bool{}
		for base := range enFields {
			if !plurals[base] {
				want[base] = true
				continue
			}
			for f := range forms {
				want[base+"."+f] = true
			}
		}
		for k := range want {
			got, ok := msgs[k]
			base, _ := split(k)
			switch {
			case !ok:
				t.Errorf("%s: key %q is missing", l.Code, k)
			case strings.TrimSpace(got) == "":
				t.Errorf("%s: key %q is empty", l.Code, k)
			case fields(got) != enFields[base] && !(oneIsOne && strings.HasSuffix(k, ".one") && fields(got) == ""):
				t.Errorf("%s: key %q uses fields {%s}, English {%s}", l.Code, k, fields(got), enFields[base])
			}
		}
		for k := range msgs {
			if !want[k] {
				t.Errorf("%s: key %q is not a message of English or a plural form %s uses", l.Code, k, l.Code)
			}
		}
	}
}

// TestFyneTags: the window registers its words under every language Fyne
// ships (app.fyneTags); this lists Fyne's translations in the module.
func TestFyneTags(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "fyne.io/fyne/v2").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "lang", "translations", "base.*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Fyne translations found: %v", err)
	}
	src, err := os.ReadFile("../../app/window/i18n.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		tag := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "base."), ".json"), "_", "-")
		if !strings.Contains(string(src), strconv.Quote(tag)) {
			t.Errorf("Fyne has words for %s, which app.fyneTags lacks: a user of that locale would see keys", tag)
		}
	}
}

func TestPlural(t *testing.T) {
	en, _ := ByCode("en")
	ru, _ := ByCode("ru")
	zh, _ := ByCode("zh-Hans")
	for _, c := range []struct {
		l    Language
		n    int
		want string
	}{
		{en, 0, "k.other"}, {en, 1, "k.one"}, {en, 2, "k.other"},
		{ru, 1, "k.one"}, {ru, 2, "k.few"}, {ru, 5, "k.many"}, {ru, 11, "k.many"}, {ru, 21, "k.one"}, {ru, 22, "k.few"}, {ru, 0, "k.many"},
		{zh, 1, "k.other"}, {zh, 2, "k.other"},
	} {
		if got := c.l.Plural("k", c.n); got != c.want {
			t.Errorf("%s Plural(k, %d) = %s, want %s", c.l.Code, c.n, got, c.want)
		}
	}
	loc := New(ru)
	for n, want := range map[int]string{1: "1 узел", 3: "3 узла", 5: "5 узлов", 21: "21 узел"} {
		if got := loc.N("count.nodes", n, nil); got != want {
			t.Errorf("ru count.nodes %d = %q, want %q", n, got, want)
		}
	}
}

// keyLiteral is a quoted string that looks like a message key.
var keyLiteral = regexp.MustCompile(`"([a-z][a-zA-Z0-9]*\.[a-zA-Z0-9.]+)"`)

// TestKeysUsedAndDefined reads the Go sources of the window and the
// internal packages: every key-like literal with a bundle's prefix must be
// in the bundles, and every key of the bundles must appear in the code.
func TestKeysUsedAndDefined(t *testing.T) {
	en, err := Messages(Languages[0])
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	prefixes := map[string]bool{}
	for k := range en {
		k, _ = split(k)
		keys[k] = false
		prefixes[k[:strings.IndexByte(k, '.')]] = true
	}
	var files []string
	for _, dir := range []string{"../../app/window", "../../app/cli", "../../app/tray", "../../app/exitline", "."} {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("no Go files in %s (moved?): %v", dir, err)
		}
		for _, f := range fs {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range keyLiteral.FindAllStringSubmatch(string(src), -1) {
			k := m[1]
			if !prefixes[k[:strings.IndexByte(k, '.')]] {
				continue // not a message key (a file name, a field path)
			}
			if _, ok := keys[k]; !ok {
				t.Errorf("%s uses key %q, which no bundle has", f, k)
				continue
			}
			keys[k] = true
		}
	}
	for k, used := range keys {
		if !used {
			t.Errorf("key %q is in the bundles but no code uses it", k)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, "en"},
		{[]string{"C"}, "en"},
		{[]string{"C.UTF-8"}, "en"},
		{[]string{"POSIX"}, "en"},
		{[]string{"en_US.UTF-8"}, "en"},
		{[]string{"de_DE.UTF-8"}, "en"},
		{[]string{"zh_CN.UTF-8"}, "zh-Hans"},
		{[]string{"zh-SG"}, "zh-Hans"},
		{[]string{"zh"}, "zh-Hans"},
		{[]string{"zh_TW.UTF-8"}, "zh-Hant"},
		{[]string{"zh-HK"}, "zh-Hant"},
		{[]string{"zh-Hant"}, "zh-Hant"},
		{[]string{"ru_RU.UTF-8"}, "ru"},
		{[]string{"ru_RU@euro"}, "ru"},
		{[]string{"uk_UA.UTF-8", "ru_RU.UTF-8"}, "ru"},
		{[]string{"de", "zh_TW"}, "zh-Hant"},
		{[]string{"not a locale!"}, "en"},
	} {
		if got := Match(c.in...).Code; got != c.want {
			t.Errorf("Match(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestSystemLocales(t *testing.T) {
	for _, c := range []struct {
		lcAll, lang, language string
		want                  string
	}{
		{"", "", "", ""},
		{"", "C.UTF-8", "", "en"},
		{"", "C", "zh_CN", "en"},    // gettext ignores LANGUAGE under C
		{"", "C.UTF-8", "ru", "en"}, // C.UTF-8 is C
		{"", "zh_TW.UTF-8", "", "zh-Hant"},
		{"ru_RU.UTF-8", "zh_CN.UTF-8", "", "ru"},
		{"", "en_US.UTF-8", "zh_CN:en", "zh-Hans"},
	} {
		t.Setenv("LC_ALL", c.lcAll)
		t.Setenv("LC_MESSAGES", "")
		t.Setenv("LANG", c.lang)
		t.Setenv("LANGUAGE", c.language)
		got := Match(SystemLocales()...).Code
		want := c.want
		if want == "" {
			want = "en"
		}
		if got != want {
			t.Errorf("LC_ALL=%q LANG=%q LANGUAGE=%q: %s, want %s", c.lcAll, c.lang, c.language, got, want)
		}
	}
}

func TestMiB(t *testing.T) {
	for _, c := range []struct {
		code string
		n    uint64
		want string
	}{
		{"en", 0, "0 MiB"},
		{"en", 512<<10 - 1, "0 MiB"},
		{"en", 512 << 10, "1 MiB"},
		{"en", 35<<20 + 100<<10, "35 MiB"},
		{"en", 35<<20 + 600<<10, "36 MiB"},
		{"en", 2000 << 20, "2,000 MiB"},
		{"ru", 35 << 20, "35 МиБ"},
	} {
		l, _ := ByCode(c.code)
		if got := strings.ReplaceAll(New(l).Fmt().MiB(c.n), "\u00a0", " "); got != c.want {
			t.Errorf("%s MiB(%d) = %q, want %q", c.code, c.n, got, c.want)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		code  string
		n     int64
		bytes string
		rate  string
		num   string
	}{
		{"en", 0, "0 B", "0 B/s", "0"},
		{"en", 1023, "1,023 B", "1,023 B/s", "1,023"},
		{"en", 12345, "12.1 KiB", "12.1 KiB/s", "12,345"},
		{"en", 10 << 30, "10.0 GiB", "10.0 GiB/s", "10,737,418,240"},
		{"ru", 12345, "12,1 КиБ", "12,1 КиБ/с", "12 345"},
		{"ru", 5, "5 Б", "5 Б/с", "5"},
		{"zh-Hans", 12345, "12.1 KiB", "12.1 KiB/s", "12,345"},
		{"zh-Hant", 3 << 20, "3.0 MiB", "3.0 MiB/s", "3,145,728"},
		{"en", -2048, "-2.0 KiB", "-2.0 KiB/s", "-2,048"},
	} {
		l, _ := ByCode(c.code)
		f := New(l).Fmt()
		if got := f.Bytes(c.n); got != c.bytes {
			t.Errorf("%s Bytes(%d) = %q, want %q", c.code, c.n, got, c.bytes)
		}
		if got := f.Rate(c.n); got != c.rate {
			t.Errorf("%s Rate(%d) = %q, want %q", c.code, c.n, got, c.rate)
		}
		if got := strings.ReplaceAll(f.Int(c.n), "\u00a0", " "); got != c.num {
			t.Errorf("%s Int(%d) = %q, want %q", c.code, c.n, got, c.num)
		}
	}
}

func TestLocalizer(t *testing.T) {
	ru, _ := ByCode("ru")
	if got := New(ru).T("home.listen", map[string]any{"Addr": "127.0.0.1:1080"}); got != "Локальный прокси: 127.0.0.1:1080 (SOCKS5 и HTTP)" {
		t.Errorf("ru home.listen = %q", got)
	}
	if got := New(Languages[0]).T("no.such.key", nil); got != "no.such.key" {
		t.Errorf("a missing key gives %q, want the key", got)
	}
}
