package service

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// The window as the unprivileged member under Xvfb, a client of the
// service: it turns TUN on through the service; kill -9 of the window
// leaves the VPN up; a new window shows it connected.

// startDisplay starts Xvfb on a free display and returns it.
func startDisplay(t *testing.T) string {
	t.Helper()
	for n := 150; n < 200; n++ {
		if _, err := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n)); err == nil {
			continue
		}
		display := ":" + strconv.Itoa(n)
		// -ac: the test user's window may connect to root's server.
		p := harness.Start(t, "xvfb", "Xvfb", display, "-screen", "0", "900x640x24", "-nolisten", "tcp", "-ac", "-noreset")
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-p.Done():
				deadline = time.Time{} // taken by another server: next
				continue
			default:
			}
			if c, err := net.Dial("unix", fmt.Sprintf("/tmp/.X11-unix/X%d", n)); err == nil {
				c.Close()
				time.Sleep(200 * time.Millisecond)
				select {
				case <-p.Done():
					deadline = time.Time{}
					continue
				default:
				}
				return display
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Fatal("no free X display")
	return ""
}

func xdo(display string, args ...string) (string, error) {
	cmd := exec.Command("xdotool", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// startWindow runs the window program as the member on display, with its own
// preferences (TUN mode) in prefs.
func (l *lab) startWindow(t *testing.T, gui, display, prefs string) *harness.Process {
	t.Helper()
	return harness.Start(t, "skiff-window", "setpriv", "--reuid", l.member, "--regid", l.gidOf(l.member), "--init-groups",
		"env", "DISPLAY="+display, "HOME="+prefs, "SKIFF_CONFIG_DIR="+prefs, "SKIFF_NO_TRAY=1", "LANG=C.UTF-8",
		gui, "--socket", l.socket)
}

// windowID waits for the window named Skiff.
func windowID(t *testing.T, display string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if out, err := xdo(display, "search", "--onlyvisible", "--name", "^Skiff$"); err == nil && out != "" {
			return strings.Fields(out)[0]
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("no window named Skiff appeared")
	return ""
}

func shoot(t *testing.T, display, name string) {
	out, err := harness.OutDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, name+".png")
	// name may hold the test's folder ("TestService/window-connected"),
	// which a fresh clone does not have yet.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("import", "-window", "root", path)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("screenshot: %v %s", err, b)
		return
	}
	t.Logf("screenshot: %s", path)
}

func (l *lab) testWindow(t *testing.T) {
	for _, tool := range []string{"Xvfb", "xdotool", "import"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	src, err := harness.WindowBinary()
	if err != nil {
		t.Fatal(err)
	}
	gui := filepath.Join(l.dir, "skiff-window")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gui, b, 0o755); err != nil {
		t.Fatal(err)
	}
	prefs := filepath.Join(l.dir, "member-home")
	if err := os.MkdirAll(prefs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefs, "gui.json"), []byte(`{"mode":"tun"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "chown", "-R", l.member, prefs)
	display := startDisplay(t)

	win := l.startWindow(t, gui, display, prefs)
	id := windowID(t, display)
	xdo(display, "windowmove", id, "0", "0")
	xdo(display, "windowsize", id, "900", "640")
	time.Sleep(time.Second)
	// The switch is the big button at the top left of Home; a click can
	// come before the window handles input, so try a few times.
	for i := 0; ; i++ {
		if i == 5 {
			shoot(t, display, "TestService/window-not-connected")
			t.Fatalf("the window did not connect through the service: %+v\n%s", l.status(t), win.Output())
		}
		xdo(display, "mousemove", "--window", id, "100", "75", "click", "1")
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		for ctx.Err() == nil && l.status(t).State != "running" {
			time.Sleep(200 * time.Millisecond)
		}
		cancel()
		if l.status(t).State == "running" {
			break
		}
	}
	st := l.status(t)
	if st.TUN == "" || st.Route == nil || st.Route.Mode != "tun" {
		t.Errorf("the window connected without TUN: %+v", st)
	}
	if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
		t.Errorf("traffic after the window connected: %v %s", err, body)
	}
	time.Sleep(2 * time.Second)
	shoot(t, display, "TestService/window-connected")

	win.Kill()
	if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
		t.Errorf("traffic after kill -9 of the window: %v %s", err, body)
	}
	if st := l.status(t); st.State != "running" {
		t.Errorf("state after kill -9 of the window: %+v", st)
	}
	win = l.startWindow(t, gui, display, prefs)
	id = windowID(t, display)
	xdo(display, "windowmove", id, "0", "0")
	xdo(display, "windowsize", id, "900", "640")
	time.Sleep(3 * time.Second)
	shoot(t, display, "TestService/window-reopened")
	if out := win.Output(); !strings.Contains(out, "a client of the service") {
		t.Errorf("the new window does not use the service:\n%s", out)
	}
	rss := rssOf(win.Pid())
	t.Logf("window idle RSS (a client of the service) ~%d KiB; the service's stream showed it the live state", rss)
	win.Stop()
}

// rssOf reads a process's resident set in KiB (the setpriv/env chain execs
// into skiff, so the pid is the window's).
func rssOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return -1
}
