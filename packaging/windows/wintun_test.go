package windows

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests fetch the real module through the module proxy (or the module
// cache, where `make package-windows` left it).

func fetchModule(t *testing.T) modDownload {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := downloadModule(ctx, "go", WintunModule, WintunModuleVersion)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestFetchWintun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := FetchWintun(ctx, "go", dir); err != nil {
		t.Fatal(err)
	}
	if got := sha256File(t, filepath.Join(dir, WintunDLL)); got != WintunSHA256 {
		t.Errorf("%s: SHA-256 %s, want %s", WintunDLL, got, WintunSHA256)
	}
	if got := sha256File(t, filepath.Join(dir, WintunLicense)); got != WintunLicenseSHA256 {
		t.Errorf("%s: SHA-256 %s, want %s", WintunLicense, got, WintunLicenseSHA256)
	}
	lic, _ := os.ReadFile(filepath.Join(dir, WintunLicense))
	if !bytes.HasPrefix(lic, []byte("Prebuilt Binaries License")) || !bytes.Contains(lic, []byte("WireGuard LLC")) {
		t.Errorf("%s is not Wintun's licence:\n%.200s", WintunLicense, lic)
	}
	if err := CheckWintun(filepath.Join(dir, WintunDLL)); err != nil {
		t.Error(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("FetchWintun left %d files in the folder, want the 2 it writes", len(ents))
	}
}

// TestCopyWintunRefuses: any DLL or licence but the pinned ones fails, and
// nothing is written; that includes Wintun's own official DLL of another
// architecture.
func TestCopyWintunRefuses(t *testing.T) {
	m := fetchModule(t)
	dll, err := os.ReadFile(filepath.Join(m.Dir, wintunDLLPath))
	if err != nil {
		t.Fatal(err)
	}
	lic, err := os.ReadFile(filepath.Join(m.Dir, wintunLicensePath))
	if err != nil {
		t.Fatal(err)
	}
	arm64, err := os.ReadFile(filepath.Join(m.Dir, "dist/windows/wintun/bin/arm64/wintun.dll"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(dll)
	flipped[len(flipped)/2] ^= 1
	for _, tc := range []struct {
		name     string
		dll, lic []byte // nil: absent
		hash     bool   // the error is ErrWintunHash
	}{
		{"one bit of the DLL flipped", flipped, lic, true},
		{"the arm64 DLL", arm64, lic, true},
		{"the DLL cut short", dll[:len(dll)-1], lic, true},
		{"an empty DLL", []byte{}, lic, true},
		{"no DLL", nil, lic, false},
		{"the licence changed", dll, append(bytes.Clone(lic), '\n'), true},
		{"no licence", dll, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod, out := t.TempDir(), t.TempDir()
			for path, b := range map[string][]byte{wintunDLLPath: tc.dll, wintunLicensePath: tc.lic} {
				if b == nil {
					continue
				}
				p := filepath.Join(mod, path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := CopyWintun(mod, out)
			if err == nil {
				t.Fatal("CopyWintun accepted it")
			}
			if errors.Is(err, ErrWintunHash) != tc.hash {
				t.Errorf("error %q: ErrWintunHash %v, want %v", err, !tc.hash, tc.hash)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("CopyWintun wrote %s despite the error", ents[0].Name())
			}
		})
	}
}

func TestParseModDownload(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{"ok", `{"Path":"example.com/m","Version":"v1.0.0","Dir":"/cache/example.com/m@v1.0.0","Sum":"h1:x"}`, ""},
		{"go's error", `{"Path":"example.com/m","Version":"v1.0.0","Error":"example.com/m@v1.0.0: reading https://proxy.golang.org/...: 404 Not Found"}`, "404 Not Found"},
		{"another module", `{"Path":"example.com/other","Version":"v1.0.0","Dir":"/cache/x"}`, "about example.com/other@v1.0.0"},
		{"another version", `{"Path":"example.com/m","Version":"v1.0.1","Dir":"/cache/x"}`, "about example.com/m@v1.0.1"},
		{"relative Dir", `{"Path":"example.com/m","Version":"v1.0.0","Dir":"m@v1.0.0"}`, "not an absolute path"},
		{"no Dir", `{"Path":"example.com/m","Version":"v1.0.0"}`, "not an absolute path"},
		{"not JSON", `go: downloading example.com/m v1.0.0`, "decode"},
		{"empty", ``, "decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseModDownload([]byte(tc.in), "example.com/m", "v1.0.0")
			if tc.err == "" {
				if err != nil || m.Dir != "/cache/example.com/m@v1.0.0" || m.Sum != "h1:x" {
					t.Fatalf("got %+v, %v", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
		})
	}
}

func FuzzParseModDownload(f *testing.F) {
	f.Add([]byte(`{"Path":"example.com/m","Version":"v1.0.0","Dir":"/cache/m","Sum":"h1:x"}`))
	f.Add([]byte(`{"Error":"x"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseModDownload(b, "example.com/m", "v1.0.0")
		if err == nil && (m.Path != "example.com/m" || m.Version != "v1.0.0" || !filepath.IsAbs(m.Dir) || m.Error != "") {
			t.Fatalf("accepted %q as %+v", b, m)
		}
	})
}
