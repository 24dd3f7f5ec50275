package linux

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests build the packages from the release binary `make package`
// left in dist/linux (building one when it is absent), with the unit that
// binary prints, and check them with the distributions' own tools.

const version, release = "0.1.0", "1"

var built = sync.OnceValues(func() (*fixture, error) { return buildFixture() })

// fixtureDir is the fixture's directory once it was made, removed at the end.
var fixtureDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

type fixture struct {
	dir       string // the packages
	deb, rpm  string
	bin, unit string // skiff as packaged and its unit ("" without the service)
	window    string // skiff-window as packaged
	tray      string // skiff-tray as packaged
	unitText  string
	extracted string // the deb unpacked
	repo      string
}

func repoRoot() string { return filepath.Join("..", "..") }

func buildFixture() (*fixture, error) {
	repo, err := filepath.Abs(repoRoot())
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "skiff-pkgtest-")
	if err != nil {
		return nil, err
	}
	fixtureDir = dir
	f := &fixture{dir: dir, repo: repo}
	// skiff is built without cgo (it must not link Fyne), the window with
	// it, as the Makefile builds them.
	for _, b := range []struct {
		path       *string
		name, main string
		cgo        string
	}{{&f.bin, "skiff", ".", "0"}, {&f.window, "skiff-window", "./app/skiff-window", "1"}, {&f.tray, "skiff-tray", "./app/skiff-tray", "0"}} {
		*b.path = filepath.Join(repo, "dist", "linux", b.name)
		if _, err := os.Stat(*b.path); err == nil {
			continue
		}
		*b.path = filepath.Join(dir, b.name)
		// stripped and with the package's version, as `make package` builds them
		ldflags := "-s -w -X github.com/skiffvpn/skiff/internal/version.version=" + version
		cmd := exec.Command("go", "build", "-ldflags="+ldflags, "-o", *b.path, b.main)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+b.cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, &cmdError{"go build " + b.main, err, out}
		}
	}
	if out, err := exec.Command(f.bin, "service", "unit").Output(); err == nil && len(out) > 0 {
		f.unitText = string(out)
		f.unit = filepath.Join(dir, "skiff.service")
		if err := os.WriteFile(f.unit, out, 0o644); err != nil {
			return nil, err
		}
	}
	paths, err := Build(Spec{
		Version: version, Release: release, Date: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Binary: f.bin, Window: f.window, Tray: f.tray, Unit: f.unit, Repo: repo, Out: dir,
	})
	if err != nil {
		return nil, err
	}
	f.deb, f.rpm = paths[0], paths[1]
	f.extracted = filepath.Join(dir, "root")
	if out, err := exec.Command("dpkg-deb", "-x", f.deb, f.extracted).CombinedOutput(); err != nil {
		return nil, &cmdError{"dpkg-deb -x", err, out}
	}
	return f, nil
}

type cmdError struct {
	what string
	err  error
	out  []byte
}

func (e *cmdError) Error() string { return e.what + ": " + e.err.Error() + "\n" + string(e.out) }

func need(t *testing.T, tools ...string) *fixture {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (make deps installs it)", tool)
		}
	}
	f, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// wantFiles are the package's files, as dpkg-deb -c lists them (without
// the leading "."), for the deb; unitPath is added when the binary has the
// service.
func wantFiles(unitPath string) []string {
	w := []string{
		"/usr/bin/skiff",
		"/usr/bin/skiff-window",
		"/usr/bin/skiff-tray",
		AutostartPath,
		"/usr/share/applications/" + AppID + ".desktop",
		"/usr/share/icons/hicolor/scalable/apps/" + AppID + ".svg",
		"/usr/share/metainfo/" + AppID + ".metainfo.xml",
		"/usr/share/man/man1/skiff.1.gz",
		"/usr/share/man/man1/skiff-window.1.gz",
		"/usr/share/man/man1/skiff-tray.1.gz",
	}
	for _, s := range []string{"16", "22", "24", "32", "48", "64", "128", "256"} {
		w = append(w, "/usr/share/icons/hicolor/"+s+"x"+s+"/apps/"+AppID+".png")
	}
	if unitPath != "" {
		w = append(w, unitPath)
	}
	return w
}

func TestDebMetadata(t *testing.T) {
	f := need(t, "dpkg-deb")
	if filepath.Base(f.deb) != "skiff_0.1.0-1_amd64.deb" {
		t.Errorf("deb is named %s", filepath.Base(f.deb))
	}
	info := run(t, "dpkg-deb", "-I", f.deb)
	for _, want := range []string{
		"Package: skiff", "Version: 0.1.0-1", "Architecture: amd64", "Section: net", "Priority: optional",
		"Maintainer: " + Maintainer, "Homepage: https://github.com/skiffvpn/skiff",
		"Description: VPN client that gets past throttling and blocking",
		"postinst", "prerm", "postrm",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("dpkg-deb -I lacks %q:\n%s", want, info)
		}
	}
	fields := run(t, "dpkg-deb", "-f", f.deb, "Depends", "Recommends")
	for _, dep := range append(slices.Clone(DebDepends), DebRecommends...) {
		if !strings.Contains(fields, dep) {
			t.Errorf("Depends/Recommends lack %q:\n%s", dep, fields)
		}
	}
	if !strings.Contains(fields, "Recommends: libgl1-mesa-dri, fonts-noto-cjk") {
		t.Errorf("the CJK font is not a Recommends:\n%s", fields)
	}
}

// TestSkiffIsStatic checks that the packaged skiff — the command line and
// the service — links no shared library (it is built without cgo, so Fyne
// and GLFW are not in it) and names no Fyne package.
func TestSkiffIsStatic(t *testing.T) {
	f := need(t, "readelf", "go")
	if out := run(t, "readelf", "-d", f.bin); strings.Contains(out, "(NEEDED)") {
		t.Errorf("/usr/bin/skiff links shared libraries:\n%s", out)
	}
	mods := run(t, "go", "version", "-m", f.bin)
	if strings.Contains(mods, "fyne.io") || !strings.Contains(mods, "CGO_ENABLED=0") {
		t.Errorf("/usr/bin/skiff was built with cgo or with Fyne:\n%s", mods)
	}
}

// TestDebDependsCoverLinkedLibraries checks that every shared library the
// window binary links (readelf's NEEDED entries) belongs to a package the
// deb depends on, so that apt install pulls what the binary needs.
func TestDebDependsCoverLinkedLibraries(t *testing.T) {
	f := need(t, "readelf", "dpkg")
	out := run(t, "readelf", "-d", f.window)
	libs := regexp.MustCompile(`\(NEEDED\)\s+Shared library: \[([^\]]+)\]`).FindAllStringSubmatch(out, -1)
	if len(libs) == 0 {
		t.Fatalf("readelf shows no NEEDED libraries:\n%s", out)
	}
	deps := map[string]bool{}
	for _, d := range DebDepends {
		deps[strings.Fields(d)[0]] = true
	}
	for _, m := range libs {
		lib := m[1]
		paths, err := filepath.Glob("/usr/lib/x86_64-linux-gnu/" + lib)
		if err != nil || len(paths) == 0 {
			paths, _ = filepath.Glob("/lib/x86_64-linux-gnu/" + lib)
		}
		if len(paths) == 0 {
			t.Errorf("%s: not found on this machine", lib)
			continue
		}
		owner, err := exec.Command("dpkg", "-S", paths[0]).Output()
		if err != nil {
			// /lib and /usr/lib are the same directory; dpkg knows one name
			alt := strings.Replace(paths[0], "/usr/lib/", "/lib/", 1)
			if owner, err = exec.Command("dpkg", "-S", alt).Output(); err != nil {
				t.Errorf("dpkg -S %s: %v", paths[0], err)
				continue
			}
		}
		pkg := strings.SplitN(strings.SplitN(string(owner), ":", 2)[0], ",", 2)[0]
		if !deps[pkg] {
			t.Errorf("the binary links %s from %s, which is not in Depends %v", lib, pkg, DebDepends)
		}
	}
}

func TestDebContents(t *testing.T) {
	f := need(t, "dpkg-deb")
	list := run(t, "dpkg-deb", "-c", f.deb)
	files := map[string]string{} // path -> mode and owner columns
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		cols := strings.Fields(line)
		if len(cols) < 6 {
			t.Fatalf("dpkg-deb -c line %q", line)
		}
		files[strings.TrimPrefix(cols[5], ".")] = cols[0] + " " + cols[1]
	}
	unit := ""
	if f.unit != "" {
		unit = UnitPath("deb")
	} else {
		t.Log("PENDING: this skiff has no `skiff service unit`: the packages carry no systemd unit")
	}
	for _, p := range append(wantFiles(unit), "/usr/share/doc/skiff/copyright", "/usr/share/doc/skiff/changelog.Debian.gz") {
		got, ok := files[p]
		if !ok {
			t.Errorf("deb lacks %s", p)
			continue
		}
		want := "-rw-r--r-- root/root"
		switch p {
		case "/usr/bin/skiff", "/usr/bin/skiff-window", "/usr/bin/skiff-tray":
			want = "-rwxr-xr-x root/root"
		case "/usr/share/man/man1/skiff-window.1.gz", "/usr/share/man/man1/skiff-tray.1.gz":
			want = "lrwxrwxrwx root/root" // to skiff.1.gz
		}
		if got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
	}
	// The window embeds an OFL font (app/window/font): the copyright says so.
	if b, err := os.ReadFile(filepath.Join(f.extracted, "usr/share/doc/skiff/copyright")); err != nil {
		t.Error(err)
	} else if c := string(b); !strings.Contains(c, "Files: app/window/font/cjk-subset.otf") || !strings.Contains(c, "License: OFL-1.1\n SIL OPEN FONT LICENSE") && !strings.Contains(c, "License: OFL-1.1\n -----") {
		t.Errorf("the copyright file does not carry the CJK font's licence:\n%s", c)
	}
	for p := range files {
		if strings.Contains(p, "/usr/local/") || strings.HasPrefix(p, "/home") || strings.HasPrefix(p, "/etc/") && p != AutostartPath && p != "/etc/" && p != "/etc/xdg/" && p != "/etc/xdg/autostart/" {
			t.Errorf("deb has %s", p)
		}
	}
	if f.unit != "" {
		b, err := os.ReadFile(filepath.Join(f.extracted, UnitPath("deb")))
		if err != nil || string(b) != f.unitText {
			t.Errorf("the packaged unit is not what `skiff service unit` prints: %v", err)
		}
	}
}

func TestDebIconsHaveTheirSizes(t *testing.T) {
	f := need(t, "dpkg-deb")
	for _, s := range []int{16, 22, 24, 32, 48, 64, 128, 256} {
		p := filepath.Join(f.extracted, "usr/share/icons/hicolor", strconv.Itoa(s)+"x"+strconv.Itoa(s), "apps", AppID+".png")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width != s || cfg.Height != s {
			t.Errorf("%s: %dx%d %v, want %dx%d", p, cfg.Width, cfg.Height, err, s, s)
		}
	}
}

func TestRPMMetadataAndContents(t *testing.T) {
	f := need(t, "rpm")
	if filepath.Base(f.rpm) != "skiff-0.1.0-1.x86_64.rpm" {
		t.Errorf("rpm is named %s", filepath.Base(f.rpm))
	}
	info := run(t, "rpm", "-qip", f.rpm)
	for _, re := range []string{`Name\s*: skiff`, `Version\s*: 0\.1\.0`, `Release\s*: 1`, `Architecture\s*: x86_64`, `License\s*: MIT`,
		`Summary\s*: VPN client that gets past throttling and blocking`, `URL\s*: https://github.com/skiffvpn/skiff`} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("rpm -qip does not match %s:\n%s", re, info)
		}
	}
	list := run(t, "rpm", "-qlp", f.rpm)
	unit := ""
	if f.unit != "" {
		unit = UnitPath("rpm")
	}
	for _, p := range append(wantFiles(unit), "/usr/share/licenses/skiff/LICENSE") {
		if !slices.Contains(strings.Split(list, "\n"), p) {
			t.Errorf("rpm lacks %s:\n%s", p, list)
		}
	}
	if strings.Contains(list, "/usr/share/doc/skiff/copyright") {
		t.Error("rpm has the deb's copyright file")
	}
	reqs := run(t, "rpm", "-qp", "--requires", f.rpm)
	for _, r := range RPMRequires {
		if !strings.Contains(reqs, r) {
			t.Errorf("rpm does not require %s:\n%s", r, reqs)
		}
	}
	recs := run(t, "rpm", "-qp", "--recommends", f.rpm)
	for _, r := range RPMRecommends {
		if !strings.Contains(recs, r) {
			t.Errorf("rpm does not recommend %s:\n%s", r, recs)
		}
	}
	scripts := run(t, "rpm", "-qp", "--scripts", f.rpm)
	for _, want := range []string{"postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet", "groupadd --system skiff", "skiff cleanup"} {
		if !strings.Contains(scripts, want) {
			t.Errorf("rpm scripts lack %q", want)
		}
	}
}

// TestLintian runs lintian on the deb. Every finding it reports must be
// one listed in lintianAccepted, with the reason it stands.
func TestLintian(t *testing.T) {
	f := need(t, "lintian")
	// -X binaries/spelling: the spelling check reads every string of the
	// 30 MB binary (2½ of lintian's 3 minutes on a loaded machine) and only
	// ever found words in the dependencies' strings (Go's runtime, Fyne).
	cmd := exec.Command("lintian", "--no-cfg", "--display-info", "--tag-display-limit", "0", "-X", "binaries/spelling", f.deb)
	out, _ := cmd.CombinedOutput() // exits non-zero on findings; judged below
	t.Logf("lintian:\n%s", out)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		m := regexp.MustCompile(`^([EWIPX]): skiff(?: \w+)?: (\S+)`).FindStringSubmatch(line)
		if m == nil {
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "N:") && !strings.Contains(line, "running with root privileges") {
				t.Errorf("lintian said: %s", line)
			}
			continue
		}
		if _, ok := lintianAccepted[m[2]]; !ok {
			t.Errorf("lintian finding not fixed nor accepted: %s", line)
		}
	}
}

// lintianAccepted are lintian's findings on the deb that stand, and why.
var lintianAccepted = map[string]string{
	"hardening-no-pie": "the package's binary is built with the flags of the tests' builds, so that CI reuses the " +
		"build cache; -buildmode=pie recompiles the whole tree with cgo (minutes). A release build can add it " +
		"(make package PKG_GOFLAGS=-buildmode=pie)",
	"hardening-no-bindnow":           "the cgo part (GLFW) is linked by Go's external linker without -z now; info level",
	"hardening-no-fortify-functions": "the C code is GLFW's, compiled by cgo without _FORTIFY_SOURCE; info level",
	"binary-has-unneeded-section":    "the .comment section comes from the cgo objects; -s -w strips the rest; info level",
	"package-supports-alternative-init-but-no-init.d-script": "where systemd does not run, `skiff service` is " +
		"started directly (the postinst says so); no sysvinit script is kept; info level",
	"statically-linked-binary": "/usr/bin/skiff — the command line and the service — and /usr/bin/skiff-tray are " +
		"built with CGO_ENABLED=0 on purpose: the privileged service links neither Fyne nor any C library, and the " +
		"tray stays without a GL context (skiff-window, the window, links them dynamically)",
	"initial-upload-closes-no-bugs": "the package is not uploaded to Debian, so there is no ITP bug to close",
	"maintainer-script-calls-systemctl": "one set of scripts serves the deb and the rpm, and deb-systemd-helper " +
		"exists only on Debian; the scripts call systemctl only when systemd runs (/run/systemd/system)",
}

func TestMetainfoAndDesktopEntryValidate(t *testing.T) {
	f := need(t, "appstreamcli", "desktop-file-validate")
	meta := filepath.Join(f.extracted, "usr/share/metainfo", AppID+".metainfo.xml")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<release version="0.1.0" date="2026-12-01"/>`) {
		t.Errorf("metainfo has no release entry for this version:\n%s", b)
	}
	if out, err := exec.Command("appstreamcli", "validate", "--no-net", "--pedantic", meta).CombinedOutput(); err != nil {
		t.Errorf("appstreamcli validate: %v\n%s", err, out)
	}
	desktop := filepath.Join(f.extracted, "usr/share/applications", AppID+".desktop")
	if out, err := exec.Command("desktop-file-validate", desktop).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("desktop-file-validate: %v\n%s", err, out)
	}
	// The app menu and the deep links start skiff-tray, which opens the
	// window (a second launch hands it over to the first): one tray, one
	// window.
	b, err = os.ReadFile(desktop)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nExec=skiff-tray --open %u\n") {
		t.Errorf("the menu entry does not start the tray with the window:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(f.extracted, "usr/bin/skiff-tray")); err != nil {
		t.Errorf("the entry's program: %v", err)
	}
}

// TestAutostartStartsTheTray: both packages start skiff-tray at login (the
// XDG autostart entry, a conffile so a user's Hidden=true survives
// upgrades), the entry validates and runs the packaged tray, and the tray
// runs (`--version`).
func TestAutostartStartsTheTray(t *testing.T) {
	f := need(t, "dpkg-deb", "rpm", "desktop-file-validate")
	entry := filepath.Join(f.extracted, strings.TrimPrefix(AutostartPath, "/"))
	b, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("the deb has no autostart entry: %v", err)
	}
	for _, want := range []string{"\nExec=skiff-tray\n", "\nType=Application\n", "\nNoDisplay=true\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q:\n%s", AutostartPath, strings.TrimSpace(want), b)
		}
	}
	if out, err := exec.Command("desktop-file-validate", entry).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("desktop-file-validate %s: %v\n%s", AutostartPath, err, out)
	}
	ctl := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-e", f.deb, ctl).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -e: %v\n%s", err, out)
	}
	if c, err := os.ReadFile(filepath.Join(ctl, "conffiles")); err != nil || !strings.Contains(string(c), AutostartPath) {
		t.Errorf("the deb's conffiles lack %s: %v %q", AutostartPath, err, c)
	}
	if c := run(t, "rpm", "-qcp", f.rpm); !strings.Contains(c, AutostartPath) {
		t.Errorf("the rpm's config files lack %s:\n%s", AutostartPath, c)
	}
	tray := filepath.Join(f.extracted, "usr/bin/skiff-tray")
	if out, err := exec.Command(tray, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "skiff-tray ") {
		t.Errorf("%s --version: %v %q", tray, err, out)
	}
}
