package autostart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const systemOn = "[Desktop Entry]\nType=Application\nName=Skiff tray\nExec=skiff-tray\nX-GNOME-Autostart-enabled=true\n"

// home makes a user's XDG_CONFIG_HOME and a system XDG_CONFIG_DIRS (with
// the packages' entry when sys is not ""), and returns the user's entry.
func home(t *testing.T, sys string) string {
	t.Helper()
	cfg, sysDir := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("XDG_CONFIG_DIRS", filepath.Join(sysDir, "missing")+":"+sysDir)
	if sys != "" {
		os.MkdirAll(filepath.Join(sysDir, "autostart"), 0o755)
		if err := os.WriteFile(filepath.Join(sysDir, "autostart", EntryName), []byte(sys), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(cfg, "autostart", EntryName)
}

func TestToggle(t *testing.T) {
	tray := "/opt/Skiff app/skiff-tray"
	for _, tc := range []struct {
		name   string
		system string // the packages' entry; "": none
		first  bool   // Enabled before any change
		off    string // what the user's entry says after Disable ("": there is none)
		on     string // after Enable
	}{
		{"packaged", systemOn, true, "Hidden=true", ""},
		{"no system entry", "", false, "", `Exec="/opt/Skiff app/skiff-tray"`},
		{"system entry hidden by the admin", systemOn + "Hidden=true\n", false, "", `Exec="/opt/Skiff app/skiff-tray"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := home(t, tc.system)
			it := &Item{Tray: tray}
			check := func(step string, want bool, entry string) {
				t.Helper()
				on, err := it.Enabled()
				if err != nil || on != want {
					t.Fatalf("%s: Enabled() = %v, %v; want %v", step, on, err, want)
				}
				b, err := os.ReadFile(user)
				switch {
				case entry == "" && err == nil:
					t.Errorf("%s: a user entry is left:\n%s", step, b)
				case entry != "" && err != nil:
					t.Errorf("%s: no user entry: %v", step, err)
				case entry != "" && !strings.Contains(string(b), "\n"+entry+"\n"):
					t.Errorf("%s: the user entry lacks %q:\n%s", step, entry, b)
				}
			}
			check("at first", tc.first, "")
			for _, step := range []struct {
				on    bool
				entry string
			}{{true, tc.on}, {false, tc.off}, {false, tc.off}, {true, tc.on}, {true, tc.on}, {false, tc.off}} {
				if err := it.Set(step.on); err != nil {
					t.Fatal(err)
				}
				check(map[bool]string{true: "enabled", false: "disabled"}[step.on], step.on, step.entry)
			}
		})
	}
}

// TestHostileEntry: whatever is in the user's entry's place (a symlink to
// another file, garbage, a file of another mode) is replaced, never
// written through.
func TestHostileEntry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		system string
		on     bool
	}{
		{"disable over a symlink", systemOn, false},
		{"enable over a symlink", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := home(t, tc.system)
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(user), 0o700)
			if err := os.Symlink(victim, user); err != nil {
				t.Fatal(err)
			}
			it := &Item{Tray: "/usr/bin/skiff-tray"}
			if err := it.Set(tc.on); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "keep" {
				t.Errorf("written through the symlink: %q", b)
			}
			fi, err := os.Lstat(user)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("the user entry: %v %v", fi, err)
			}
			if on, err := it.Enabled(); err != nil || on != tc.on {
				t.Errorf("Enabled() = %v, %v; want %v", on, err, tc.on)
			}
		})
	}
	t.Run("garbage reads as on, replaced by off", func(t *testing.T) {
		user := home(t, systemOn)
		os.MkdirAll(filepath.Dir(user), 0o700)
		if err := os.WriteFile(user, []byte(strings.Repeat("\x00garbage=", 20000)), 0o666); err != nil {
			t.Fatal(err)
		}
		it := &Item{Tray: "/usr/bin/skiff-tray"}
		if err := it.Disable(); err != nil {
			t.Fatal(err)
		}
		if on, err := it.Enabled(); err != nil || on {
			t.Errorf("Enabled() = %v, %v after Disable", on, err)
		}
	})
}

func TestRelativeTray(t *testing.T) {
	home(t, "")
	if err := (&Item{Tray: "skiff-tray"}).Enable(); err == nil {
		t.Error("a relative tray path was written")
	}
}

func TestQuoteExec(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/skiff-tray": "/usr/bin/skiff-tray",
		"/opt/a b/skiff-tray": `"/opt/a b/skiff-tray"`,
		`/o/"$x"/t`:           `"/o/\\"\\$x\\"/t"`,
		`/o/a\b`:              `"/o/a\\\\b"`,
		"/o/100%":             `"/o/100%%"`,
	} {
		if got := quoteExec(in); got != want {
			t.Errorf("quoteExec(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEntryValidates: both entries the user gets are valid desktop entries.
func TestEntryValidates(t *testing.T) {
	validate, err := exec.LookPath("desktop-file-validate")
	if err != nil {
		t.Skip("desktop-file-validate is not installed (make deps installs it)")
	}
	for _, sys := range []string{systemOn, ""} {
		user := home(t, sys)
		if err := (&Item{Tray: `/opt/Skiff "app"/skiff-tray`}).Set(sys == ""); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(validate, user).CombinedOutput(); err != nil || len(out) > 0 {
			b, _ := os.ReadFile(user)
			t.Errorf("desktop-file-validate: %v\n%s\n%s", err, out, b)
		}
	}
}

// FuzzEntryOn: any file in the entry's place is read without a panic, and
// one that says Hidden=true in its [Desktop Entry] is off.
func FuzzEntryOn(f *testing.F) {
	f.Add([]byte(systemOn))
	f.Add([]byte("[Desktop Entry]\nHidden=true\n"))
	f.Add([]byte("[Other]\nHidden=true\n[Desktop Entry]\nX-GNOME-Autostart-enabled=false"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "e.desktop")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		on, err := entryOn(p)
		if err == nil && on && strings.HasPrefix(string(b), "[Desktop Entry]\nHidden=true\n") {
			t.Errorf("a hidden entry reads as on")
		}
	})
}
