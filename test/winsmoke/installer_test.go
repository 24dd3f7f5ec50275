package winsmoke

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// uninstKey is the installer's entry in Apps & features (skiff.nsi's
// UNINSTKEY, in the 64-bit view).
const uninstKey = `HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\Skiff`

// serviceKey is where the service manager keeps the service that
// `skiff.exe service install` registers (app/service's Name).
const serviceKey = `HKLM\System\CurrentControlSet\Services\skiff`

// runKey and runValue are the installing user's login item, which starts
// the tray (skiff.nsi's RUNKEY and RUNVALUE, app/autostart's).
const (
	runKey   = `HKCU\Software\Microsoft\Windows\CurrentVersion\Run`
	runValue = "Skiff"
)

// regValueOf is the value name of key as reg query prints it ("REG_SZ
// x"), or "" when it is absent.
func (w *wine) regValueOf(t *testing.T, key, name string) string {
	t.Helper()
	for _, l := range strings.Split(w.reg(t, "query", key, "/v", name), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == name {
			return strings.Join(f[1:], " ")
		}
	}
	return ""
}

// nsiFiles returns the files skiff.nsi's install section puts into
// $INSTDIR (File and WriteUninstaller) and those its uninstall section
// deletes from it.
func nsiFiles(path string) (installs, deletes []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	file := regexp.MustCompile(`^File "\$\{SRC\}\\([^"\\]+)"$`)
	writeUninst := regexp.MustCompile(`^WriteUninstaller "\$INSTDIR\\([^"\\]+)"$`)
	del := regexp.MustCompile(`^Delete "\$INSTDIR\\([^"\\]+)"$`)
	uninstall := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, `Section "Uninstall"`) {
			uninstall = true
		}
		for _, re := range []*regexp.Regexp{file, writeUninst, del} {
			m := re.FindStringSubmatch(l)
			switch {
			case m == nil:
			case re == del && uninstall:
				deletes = append(deletes, m[1])
			case re != del && !uninstall:
				installs = append(installs, m[1])
			default:
				return nil, nil, fmt.Errorf("%s: %q outside the section it belongs to", path, l)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	slices.Sort(installs)
	slices.Sort(deletes)
	return installs, deletes, nil
}

// pinnedWintun is packaging/windows's WintunSHA256, the hash the build
// checks the DLL against.
func pinnedWintun(t *testing.T, repo string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repo, "packaging", "windows", "wintun.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`WintunSHA256\s*=\s*"([0-9a-f]{64})"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("packaging/windows/wintun.go pins no WintunSHA256")
	}
	return string(m[1])
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// runIn runs a Windows program under Wine in the Unix folder dir with the
// extra environment env.
func (w *wine) runIn(t *testing.T, dir string, env []string, exe string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, append([]string{exe}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(w.env(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestInstaller installs the NSIS installer `make package-windows` built
// (SKIFF_SETUP_EXE, which `make package-test` sets) silently under Wine,
// checks that every file the uninstaller deletes is where it looks for it
// (wintun.dll with the pinned hash and Wintun's licence among them), runs
// the installed skiff.exe and skiff-window.exe, tries TUN mode far enough
// to see where wintun.dll is loaded from, and uninstalls silently.
//
// Not run under Wine: the Wintun driver (Wine has none, so no adapter is
// created and no route or WFP filter is set) and the service's TUN runs.
func TestInstaller(t *testing.T) {
	setup := os.Getenv("SKIFF_SETUP_EXE")
	if setup == "" {
		t.Skip("SKIFF_SETUP_EXE is unset: `make package-test` sets it to the installer `make package-windows` built")
	}
	if _, err := os.Stat(setup); err != nil {
		t.Fatal(err)
	}
	testDir, err := harness.TestDir()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(testDir)
	installs, deletes, err := nsiFiles(filepath.Join(repo, "packaging", "windows", "skiff.nsi"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(installs, deletes) {
		t.Fatalf("skiff.nsi installs %q but its uninstaller deletes %q", installs, deletes)
	}
	for _, f := range []string{"skiff.exe", "skiff-window.exe", "skiff-tray.exe", "wintun.dll", "wintun-LICENSE.txt", "uninstall.exe"} {
		if !slices.Contains(installs, f) {
			t.Fatalf("skiff.nsi does not install %s (it installs %q)", f, installs)
		}
	}
	w := needWine(t)
	instDir := filepath.Join(w.prefix, "drive_c", "Program Files", "Skiff")
	winInstDir := `C:\Program Files\Skiff`

	start := time.Now()
	if out, err := w.run(t, setup, "/S"); err != nil {
		t.Fatalf("%s /S: %v\n%s", setup, err, out)
	}
	t.Logf("setup.exe /S under Wine: %v", time.Since(start).Round(time.Millisecond))
	for _, f := range installs {
		if fi, err := os.Stat(filepath.Join(instDir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("after setup.exe /S, %s\\%s: %v", winInstDir, f, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if got, want := fileSHA256(t, filepath.Join(instDir, "wintun.dll")), pinnedWintun(t, repo); got != want {
		t.Errorf("the installed wintun.dll has SHA-256 %s, not the pinned %s", got, want)
	}
	if lic, _ := os.ReadFile(filepath.Join(instDir, "wintun-LICENSE.txt")); !strings.HasPrefix(string(lic), "Prebuilt Binaries License") {
		t.Errorf("the installed wintun-LICENSE.txt is not Wintun's licence: %.80q", lic)
	}
	reg := w.reg(t, "query", uninstKey)
	for _, want := range []string{`InstallLocation    REG_SZ    ` + winInstDir, `QuietUninstallString    REG_SZ    "` + winInstDir + `\uninstall.exe" /S`} {
		if !strings.Contains(reg, want) {
			t.Errorf("%s lacks %q:\n%s", uninstKey, want, reg)
		}
	}

	// Wine's service manager registers the service, but its start times
	// out there ("Service request timeout"; `skiff.exe service` in the
	// foreground listens): the silent installer goes on (its message box
	// has a /SD answer) and the uninstaller removes the service.
	if reg := w.reg(t, "query", serviceKey); !strings.Contains(reg, `ImagePath    REG_SZ    "`+winInstDir+`\skiff.exe" service`) {
		t.Errorf("after setup.exe /S, the service is not registered with the installed skiff.exe:\n%s", reg)
	}

	// The tray starts at the installing user's login.
	if got, want := w.regValueOf(t, runKey, runValue), `REG_SZ "`+winInstDir+`\skiff-tray.exe"`; got != want {
		t.Errorf("after setup.exe /S, %s\\%s is %q, want %q", runKey, runValue, got, want)
	}

	for _, name := range []string{"skiff", "skiff-window", "skiff-tray"} {
		out, err := w.runIn(t, instDir, nil, winInstDir+`\`+name+".exe", "--version")
		if err != nil || !strings.HasPrefix(strings.TrimSpace(lastLine(out)), name+" ") {
			t.Errorf("the installed %s.exe --version: %v\n%s", name, err, out)
		}
	}

	t.Run("TUN loads wintun.dll beside skiff.exe only", func(t *testing.T) { tunWintun(t, w, instDir, winInstDir) })

	start = time.Now()
	if out, err := w.run(t, filepath.Join(instDir, "uninstall.exe"), "/S"); err != nil {
		t.Fatalf("uninstall.exe /S: %v\n%s", err, out)
	}
	// The uninstaller copies itself to %TEMP% and runs from there, so that
	// it can delete itself: its files go a moment after it returns.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(instDir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			ents, _ := os.ReadDir(instDir)
			var left []string
			for _, e := range ents {
				left = append(left, e.Name())
			}
			t.Fatalf("60 s after uninstall.exe /S, %s still holds %q", winInstDir, left)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("uninstall.exe /S under Wine: %s and every file in it removed after %v", winInstDir, time.Since(start).Round(time.Millisecond))
	for _, key := range []string{uninstKey, serviceKey} {
		if reg := w.reg(t, "query", key); strings.Contains(reg, "REG_") {
			t.Errorf("after uninstall.exe /S, %s is still there:\n%s", key, reg)
		}
	}
	if got := w.regValueOf(t, runKey, runValue); got != "" {
		t.Errorf("after uninstall.exe /S, %s\\%s is still %q", runKey, runValue, got)
	}
}

// tunWintun runs `skiff.exe run --tun` from the install folder, where
// wintun.dll is loaded and Wine's missing driver stops the run, and from a
// copy of skiff.exe in a folder without the DLL, with wintun.dll in the
// current folder, on PATH and in System32: that run must refuse, naming
// the path beside the executable.
func tunWintun(t *testing.T, w *wine, instDir, winInstDir string) {
	args := []string{"run", "--link", "vless://6b1f2d3c-4e5f-4a6b-8c7d-9e0f1a2b3c4d@127.0.0.1:9?encryption=none&security=tls&type=ws&path=%2Fws&sni=localhost#tun",
		"--listen", "127.0.0.1:0", "--tun", "--tun-strict=false", "--config-dir", winPath(t.TempDir())}
	const missing = "TUN mode needs wintun.dll beside the skiff executable"

	out, err := w.runIn(t, instDir, nil, winInstDir+`\skiff.exe`, args...)
	// The DLL beside it is loaded first (tun.CheckDriver); then Wine stops
	// the run: either its missing driver (wintun.dll's own "Failed to
	// create boundary descriptor" from WintunCreateAdapter) or, before
	// that, the state directory, whose protected DACL Wine cannot keep
	// (internal/rootdir refuses it, failing closed).
	if err == nil || strings.Contains(out, missing) ||
		!strings.Contains(out, "tun: create skiff0: ") && !strings.Contains(out, "has ACL") {
		t.Fatalf("the installed skiff.exe run --tun under Wine: %v; want a failure after the wintun.dll beside it was loaded (creating the adapter, or the state directory's ACL):\n%s", err, out)
	}
	t.Logf("the installed skiff.exe run --tun loaded the wintun.dll beside it, whose WintunCreateAdapter failed under Wine (no driver):\n%s", strings.TrimSpace(out))

	bare, cwd, onPath := t.TempDir(), t.TempDir(), t.TempDir()
	exe, err := os.ReadFile(filepath.Join(instDir, "skiff.exe"))
	if err != nil {
		t.Fatal(err)
	}
	dll, err := os.ReadFile(filepath.Join(instDir, "wintun.dll"))
	if err != nil {
		t.Fatal(err)
	}
	sys32 := filepath.Join(w.prefix, "drive_c", "windows", "system32", "wintun.dll")
	t.Cleanup(func() { os.Remove(sys32) })
	for _, p := range []string{filepath.Join(cwd, "wintun.dll"), filepath.Join(onPath, "wintun.dll"), sys32} {
		if err := os.WriteFile(p, dll, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bare, "skiff.exe"), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = w.runIn(t, cwd, []string{"WINEPATH=" + winPath(onPath)}, filepath.Join(bare, "skiff.exe"), args...)
	want := missing + ", and " + winPath(bare) + `\wintun.dll is missing`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("skiff.exe without wintun.dll beside it (one in the current folder, on PATH and in System32): %v, want an error with %q:\n%s", err, want, out)
	}
	t.Logf("skiff.exe without wintun.dll beside it refused TUN mode: %s", strings.TrimSpace(lastLine(out)))
}
