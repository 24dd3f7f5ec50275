package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// flagLine is a flag in PrintDefaults' listing: "  -name PLACEHOLDER".
var flagLine = regexp.MustCompile(`^  -(\S+)(?: (.*))?$`)

// TestHelpEveryCommand: for every command, `skiff help CMD`, `skiff CMD
// --help`, `-help` and `-h` exit 0, print the same help to stdout and
// nothing to stderr, start with "usage: skiff CMD", say what the command
// does, and every flag's placeholder is one word.
func TestHelpEveryCommand(t *testing.T) {
	for name, c := range commands {
		if c.run == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var first string
			for _, args := range [][]string{{"help", name}, {name, "--help"}, {name, "-help"}, {name, "-h"}} {
				var out, errs bytes.Buffer
				if code := Main(args, strings.NewReader(""), &out, &errs); code != 0 {
					t.Errorf("skiff %s: exit %d, want 0\n%s%s", strings.Join(args, " "), code, out.String(), errs.String())
				}
				if errs.Len() > 0 {
					t.Errorf("skiff %s wrote to stderr: %q", strings.Join(args, " "), errs.String())
				}
				if first == "" {
					first = out.String()
				} else if out.String() != first {
					t.Errorf("skiff %s differs from skiff help %s:\n%s\n---\n%s", strings.Join(args, " "), name, out.String(), first)
				}
			}
			lines := strings.Split(first, "\n")
			if !strings.HasPrefix(lines[0], "usage: skiff ") || !strings.Contains(lines[0], name) && name != "gui" {
				t.Errorf("first line %q is not a usage line of %s", lines[0], name)
			}
			if !strings.Contains(first, upperFirst(c.summary)) {
				t.Errorf("the help does not say what %s does", name)
			}
			for _, l := range lines {
				m := flagLine.FindStringSubmatch(l)
				if m == nil || m[2] == "" {
					continue
				}
				if strings.ContainsAny(m[2], " \t") {
					t.Errorf("flag -%s has the placeholder %q, not a word", m[1], m[2])
				}
			}
		})
	}
}

func TestHelpUnknownCommand(t *testing.T) {
	var out, errs bytes.Buffer
	if code := Main([]string{"help", "nosuch"}, strings.NewReader(""), &out, &errs); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(errs.String(), `no command "nosuch"`) {
		t.Errorf("stderr %q", errs.String())
	}
	out.Reset()
	if code := Main([]string{"help"}, strings.NewReader(""), &out, &errs); code != 0 || !strings.Contains(out.String(), "usage: skiff") {
		t.Errorf("skiff help: exit %d, %q", code, out.String())
	}
}

func TestDisplayWidth(t *testing.T) {
	for s, want := range map[string]int{
		"":            0,
		"Hy2 Home":    8,
		"香港 Hy2 01":   11,
		"日本 VLESS 东京": 15,
		"🇭🇰 HK":       5,
		"Ｆｕｌｌ":        8,
		"é":           1,
		"e\u0301":     1, // e + combining acute
		"Привет":      6,
		"👍\ufe0f ok":  5,
		"a\u200db":    2,
	} {
		if got := displayWidth(s); got != want {
			t.Errorf("displayWidth(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestWriteTableAlignsByDisplayWidth(t *testing.T) {
	rows := [][]string{
		{"", "NAME", "PROTOCOL"},
		{"*", "🇭🇰 香港 Hy2 01", "hysteria2"},
		{"", "日本 VLESS 东京", "vless"},
		{"", "Plain", "ss"},
	}
	var b bytes.Buffer
	if err := writeTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	// The third column starts at the same cell on every line.
	col := -1
	for i, l := range lines {
		word := rows[i][2]
		at := displayWidth(l[:strings.Index(l, word)])
		if col < 0 {
			col = at
		} else if at != col {
			t.Errorf("line %d: %q starts at cell %d, line 0 at %d:\n%s", i, word, at, col, b.String())
		}
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %d has trailing spaces", i)
		}
	}
}
