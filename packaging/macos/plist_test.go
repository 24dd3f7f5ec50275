// Package macos holds the checks of the macOS bundle's files that run
// without macOS (build-pkg.sh runs plutil there).
package macos

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
)

// decodePlist reads an XML property list of dicts, arrays, strings and
// booleans (what Info.plist holds) into maps, slices, strings and bools.
func decodePlist(r io.Reader) (any, error) {
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("plist: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if se.Name.Local != "plist" {
				return nil, fmt.Errorf("plist: root <%s>", se.Name.Local)
			}
			v, end, err := plistValue(d)
			if err != nil {
				return nil, err
			}
			if end {
				return nil, errors.New("plist: empty")
			}
			return v, nil
		}
	}
}

// plistValue reads the next value; end reports the parent's end element.
func plistValue(d *xml.Decoder) (v any, end bool, err error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, false, fmt.Errorf("plist: %w", err)
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil, true, nil
		case xml.StartElement:
			switch t.Name.Local {
			case "string", "key":
				var s string
				if err := d.DecodeElement(&s, &t); err != nil {
					return nil, false, err
				}
				return s, false, nil
			case "true", "false":
				if err := d.Skip(); err != nil {
					return nil, false, err
				}
				return t.Name.Local == "true", false, nil
			case "array":
				var a []any
				for {
					v, end, err := plistValue(d)
					if err != nil {
						return nil, false, err
					}
					if end {
						return a, false, nil
					}
					a = append(a, v)
				}
			case "dict":
				m := map[string]any{}
				for {
					k, end, err := plistValue(d)
					if err != nil {
						return nil, false, err
					}
					if end {
						return m, false, nil
					}
					key, ok := k.(string)
					if !ok {
						return nil, false, fmt.Errorf("plist: a dict key %v", k)
					}
					v, end, err := plistValue(d)
					if err != nil || end {
						return nil, false, fmt.Errorf("plist: the key %q has no value: %v", key, err)
					}
					if _, dup := m[key]; dup {
						return nil, false, fmt.Errorf("plist: the key %q twice", key)
					}
					m[key] = v
				}
			default:
				return nil, false, fmt.Errorf("plist: <%s> is not expected in Info.plist", t.Name.Local)
			}
		}
	}
}

// TestInfoPlist: Info.plist is well-formed, and registers the bundle as
// the handler of the import links' schemes (app/deeplink).
func TestInfoPlist(t *testing.T) {
	f, err := os.Open("Info.plist")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := decodePlist(f)
	if err != nil {
		t.Fatal(err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("the root is %T, not a dict", v)
	}
	for key, want := range map[string]any{
		"CFBundleIdentifier": "io.github.skiffvpn.skiff",
		"CFBundleExecutable": "skiff-window",
		"CFBundleURLTypes": []any{map[string]any{
			"CFBundleURLName":    "io.github.skiffvpn.skiff.import",
			"CFBundleTypeRole":   "Viewer",
			"CFBundleURLSchemes": []any{"clash", "clashmeta", "sing-box"},
		}},
	} {
		if got := root[key]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", key, got, want)
		}
	}
}

func TestDecodePlistRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"<dict/>",
		"<plist><dict><key>a</key></dict></plist>",
		"<plist><dict><key>a</key><string>x</string><key>a</key><string>y</string></dict></plist>",
		"<plist><dict><key>a</key><integer>1</integer></dict></plist>",
		"<plist><dict><key>a</key><string>x</dict></plist>",
	} {
		if v, err := decodePlist(strings.NewReader(in)); err == nil {
			t.Errorf("%q decoded to %#v", in, v)
		}
	}
}
