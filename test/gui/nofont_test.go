package gui

import (
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestWindowWithoutSystemCJKFont: on a system with no CJK font (a fresh
// Debian installed without Recommends), the real window still draws CJK
// node names as glyphs, from the subset it embeds (app/window/font). The window
// runs in a mount namespace where every folder holding a font that
// fontconfig says covers Chinese is an empty tmpfs, with a fresh font
// cache.
func TestWindowWithoutSystemCJKFont(t *testing.T) {
	paths := needTools(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	harness.NeedWindow(t)
	bin := harness.NeedSkiff(t)
	out, _ := exec.Command("fc-list", ":lang=zh", "file").Output()
	dirs := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.TrimSuffix(strings.TrimSpace(l), ":"); f != "" {
			dirs[filepath.Dir(f)] = true
		}
	}
	if len(dirs) == 0 {
		t.Log("no CJK font installed: nothing to hide")
	}
	var script strings.Builder
	for d := range dirs {
		script.WriteString("mount -t tmpfs tmpfs '" + d + "' && ")
	}
	// What the window then sees: no file of the hidden folders.
	check := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c", script.String()+"ls -A "+strings.Join(slices.Sorted(maps.Keys(dirs)), " ")+" | grep -v ':$' | grep . ; true")
	if b, err := check.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != "" {
		t.Fatalf("hiding the CJK fonts: %v\n%s", err, b)
	}

	srv := hy2Server(t)
	const w, h = 800, 600
	display := startXvfb(t, paths["Xvfb"], w, h)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := writeProfile(t, srv, listen, "http://127.0.0.1:9/generate_204")
	t.Setenv("DISPLAY", display)
	t.Setenv("LIBGL_ALWAYS_SOFTWARE", "1")
	t.Setenv("FYNE_THEME", "light")
	t.Setenv("SKIFF_CONFIG_DIR", dir)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // Fyne's font index, made afresh
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("LANG", "en_US.UTF-8") // CJK names in an English window: no font comes for the language
	t.Setenv("LC_ALL", "")
	t.Setenv("LANGUAGE", "")
	harness.Start(t, "skiff-gui", unshare, "-m", "--propagation", "private", "sh", "-c", script.String()+`exec "$0"`, bin)

	id := findWindow(t, display)
	fitWindow(t, display, id, w, h)
	for i := 0; i < 2; i++ {
		click(t, display, id, languages[0].tabX[1], 21) // Profiles
		time.Sleep(700 * time.Millisecond)
	}
	checkGlyphs(t, screenshot(t, display, "gui-no-cjk-font-profiles"), w)
}
