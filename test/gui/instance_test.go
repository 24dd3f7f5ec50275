package gui

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// visibleWindows lists the shown (mapped) windows titled Skiff.
func visibleWindows(display string) []string {
	cmd := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^Skiff$")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, _ := cmd.Output()
	return strings.Fields(string(out))
}

// TestSecondLaunchRaisesTheFirst: the window closed to the tray, a second
// launch of skiff with a clash:// import link exits at once, leaving one
// process; the first shows its window again and offers the import.
func TestSecondLaunchRaisesTheFirst(t *testing.T) {
	paths := needTools(t)
	harness.NeedWindow(t)
	bin := harness.NeedSkiff(t)
	wmclose := buildHelper(t, "wmclose", "gcc", "-O2", "-o", "OUT", "test/gui/testdata/wmclose/wmclose.c", "-lX11")
	display := startXvfb(t, paths["Xvfb"], 1024, 768)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writePrefs(t, dir, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	windowEnv(t, display, dir, "light", "en_US.UTF-8")
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", startTrayHost(t)) // closing hides to the tray
	run, err := os.MkdirTemp("", "skrun")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	t.Setenv("XDG_RUNTIME_DIR", run)

	first := harness.Start(t, "skiff-gui", bin)
	id := findWindow(t, display)
	time.Sleep(time.Second) // let it draw
	cmd := exec.Command(wmclose, id)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wmclose: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(visibleWindows(display)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("closing did not hide the window")
		}
		time.Sleep(100 * time.Millisecond)
	}

	link := "clash://install-config?url=" + url.QueryEscape("https://sub.example.com/s?token=t0k3n") + "&name=Deep%20Link"
	start := time.Now()
	second := harness.Start(t, "skiff-gui-2", bin, link)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := second.Wait(ctx); err != nil || second.ExitCode() != 0 {
		t.Fatalf("the second launch: %v, %s\n%s", err, second.ExitStatus(), second.Output())
	}
	t.Logf("the second launch exited after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(second.Output()))
	if !strings.Contains(second.Output(), "open already") {
		t.Errorf("the second launch did not say the window is open already:\n%s", second.Output())
	}
	if err := first.WaitText(ctx, "asked to show the window"); err != nil {
		t.Fatalf("the first did not get the hand-over: %v\n%s", err, first.Output())
	}
	for len(visibleWindows(display)) != 1 {
		if ctx.Err() != nil {
			t.Fatalf("the first did not show its window again (visible: %v)", visibleWindows(display))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("shown again %v after the second launch started", time.Since(start).Round(time.Millisecond))
	select {
	case <-first.Done():
		t.Fatalf("the first exited: %s", first.ExitStatus())
	default:
	}
	if n := windowProcesses(t); n != 1 {
		t.Fatalf("%d skiff-window processes run, want 1", n)
	}
	time.Sleep(time.Second)
	shot := screenshot(t, display, "second-launch-offers-import")
	t.Logf("the import offer: %s", shot)
	if files, _ := filepath.Glob(filepath.Join(run, "skiff", "window-*.sock")); len(files) != 1 {
		t.Errorf("sockets %v, want one", files)
	}
}

// windowProcesses counts the skiff-window processes of this test (those
// whose environment has its XDG_RUNTIME_DIR).
func windowProcesses(t *testing.T) int {
	want := "XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR")
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range procs {
		comm, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(comm)) != "skiff-window" {
			continue
		}
		env, err := os.ReadFile(filepath.Join(filepath.Dir(p), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				n++
			}
		}
	}
	return n
}
