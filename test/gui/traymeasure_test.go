package gui

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestMeasureTray measures the tray process (skiff-tray, no Fyne, no GL)
// with the window closed, the core in the service: CPU, wake-ups and RSS,
// disconnected, connected and idle, and connected with traffic; beside it
// a bare Fyne window and the window skiff-tray opens, idle. It checks that
// closing the window ends its process and leaves no GL library mapped in
// the tray, and times "Open Skiff" to the window on screen, five times.
// A measurement: it runs with SKIFF_MEASURE=1 (make measure-window) and
// appends its table to test/out/measure-window.txt. Goal (issue 34):
// the tray ≤ 0.1 % of a core and ≤ 25 MiB, the window open in under 1 s.
func TestMeasureTray(t *testing.T) {
	if os.Getenv("SKIFF_MEASURE") != "1" {
		t.Skip("a measurement: run it with SKIFF_MEASURE=1 (make measure-window)")
	}
	trayScenario(t, envInt(t, "SKIFF_MEASURE_RUNS", 3))
}

// TestTrayProcess is TestMeasureTray's scenario without the measuring:
// skiff-tray registers its item, connects from the menu, opens the window
// as a process of its own five times (timed, not judged) and closing it
// ends that process, the VPN staying up and no GL library mapped in the
// tray.
func TestTrayProcess(t *testing.T) { trayScenario(t, 0) }

// trayScenario runs the tray's scenario, measuring each state runs times
// (0: not at all).
func trayScenario(t *testing.T, runs int) {
	paths := needTools(t)
	harness.NeedWindow(t) // skiff-tray starts the skiff-window beside it, in test/bin
	bin := harness.NeedSkiff(t)
	trayBin := buildHelper(t, "skiff-tray", "go", "build", "-o", "OUT", "./app/skiff-tray")
	wmclose := buildHelper(t, "wmclose", "gcc", "-O2", "-o", "OUT", "test/gui/testdata/wmclose/wmclose.c", "-lX11")
	m := &measurer{t: t, window: time.Duration(envInt(t, "SKIFF_MEASURE_SECONDS", 20)) * time.Second, runs: runs}
	t.Setenv("LIBGL_ALWAYS_SOFTWARE", "1")
	display := startXvfb(t, paths["Xvfb"], 1024, 768)
	t.Setenv("DISPLAY", display)
	run, err := os.MkdirTemp("", "skrun")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	t.Setenv("XDG_RUNTIME_DIR", run)

	if runs > 0 {
		floor := buildHelper(t, "fynefloor", "go", "build", "-o", "OUT", "./test/gui/testdata/fynefloor/main.go")
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
		p := harness.Start(t, "fynefloor", floor)
		fitWindow(t, display, findWindow(t, display), 1024, 768)
		m.measure("bare Fyne window, one label (the floor)", p)
		p.Stop()
	}

	// A session bus with a StatusNotifierWatcher: the tray host's side.
	bus := startSessionBus(t)
	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := &watcher{items: make(chan string, 4)}
	if err := conn.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning the watcher name: %v %v", reply, err)
	}
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)

	srv := hy2Server(t)
	origin := bigOrigin(t)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := writeProfile(t, srv, listen, "http://"+origin+"/generate_204")
	sock := m.startService(bin, dir)
	defer m.stopService()
	t.Setenv("SKIFF_CONFIG_DIR", dir)

	tr := harness.Start(t, "skiff-tray", trayBin, "--socket", sock)
	var item string
	select {
	case item = <-w.items:
	case <-time.After(30 * time.Second):
		t.Fatalf("skiff-tray registered no tray item:\n%s", tr.Output())
	}
	var labels []string
	for _, it := range menuItems(t, conn, item) {
		labels = append(labels, it.Label)
	}
	t.Logf("tray menu: %q", labels)
	if l := exitItem(t, conn, item); l != "" {
		t.Errorf("disconnected, the tray shows %q", l)
	}
	if n := windowProcesses(t); n != 0 {
		t.Fatalf("%d windows run before Open Skiff", n)
	}
	m.measure("tray process, window closed, disconnected", tr)

	clickItem(t, conn, item, "Connect")
	deadline := time.Now().Add(20 * time.Second)
	for !socksOK(listen) {
		if time.Now().After(deadline) {
			t.Fatalf("Connect from the tray: the proxy never answered\n%s", m.service.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := fetchThrough(t, listen, origin); n < 1<<20 {
		t.Fatalf("fetched %d bytes through the proxy", n)
	}
	// The lab's trace services may not answer: any of the line's words do.
	for deadline := time.Now().Add(5 * time.Second); exitItem(t, conn, item) == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("connected, the tray shows no exit line: %+v", menuItems(t, conn, item))
		}
	}
	m.measure("tray process, window closed, connected, idle", tr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int64)
	go func() { done <- steadyTraffic(ctx, listen, origin) }()
	time.Sleep(2 * time.Second)
	m.measure("tray process, window closed, connected, traffic (about 8 Mbit/s)", tr)
	cancel()
	<-done

	// Open Skiff: a window process of its own, ended by closing it.
	var opens []time.Duration
	for i := range 5 {
		start := time.Now()
		clickItem(t, conn, item, "Open Skiff")
		for len(visibleWindows(display)) != 1 {
			if time.Since(start) > 30*time.Second {
				t.Fatalf("Open Skiff: no window in 30 s\n%s", tr.Output())
			}
			time.Sleep(10 * time.Millisecond)
		}
		opens = append(opens, time.Since(start))
		id := visibleWindows(display)[0]
		pid := windowPID(t)
		if i == 0 {
			fitWindow(t, display, id, 1024, 768)
			m.measurePID("window opened from the tray, connected, idle on Home", pid, func() {})
		} else {
			time.Sleep(time.Second)
		}
		cmd := exec.Command(wmclose, id)
		cmd.Env = append(os.Environ(), "DISPLAY="+display)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("wmclose: %v\n%s", err, out)
		}
		closed := time.Now()
		for windowProcesses(t) != 0 {
			if time.Since(closed) > 30*time.Second {
				t.Fatal("closing the window left its process running")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !socksOK(listen) {
			t.Fatal("closing the window dropped the connection")
		}
	}
	if gl := glMappings(t, tr.Pid()); len(gl) > 0 {
		t.Errorf("the tray process maps GL libraries: %v", gl)
	}
	m.measure("tray process, after the window was opened and closed 5 times, connected, idle", tr)
	sorted := append([]time.Duration(nil), opens...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var ms []string
	for _, d := range opens {
		ms = append(ms, strconv.FormatInt(d.Milliseconds(), 10))
	}
	m.rows = append(m.rows, fmt.Sprintf("| Open Skiff → window on screen (ms, 5 times; median %d) | %s | | | | | | |",
		sorted[len(sorted)/2].Milliseconds(), strings.Join(ms, ", ")))
	if runs > 0 {
		m.report("service (tray)", trayBin)
	}
	// A time, not a verdict: on this shared 2-core machine a busy moment
	// doubles it (make measure-window measures it against the 1 s goal).
	t.Logf("Open Skiff → window on screen: median %v of %v (goal under 1 s)", sorted[len(sorted)/2], opens)
}

// exitItem is the label of the tray's visible exit line, "" when none.
func exitItem(t *testing.T, conn *dbus.Conn, item string) string {
	t.Helper()
	for _, it := range menuItems(t, conn, item) {
		if it.Visible && strings.HasPrefix(it.Label, "Exit") {
			return it.Label
		}
	}
	return ""
}

// windowPID returns the one skiff-window process of this test.
func windowPID(t *testing.T) int {
	t.Helper()
	want := "XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR")
	procs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range procs {
		comm, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(comm)) != "skiff-window" {
			continue
		}
		env, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "environ"))
		if strings.Contains("\x00"+string(env)+"\x00", "\x00"+want+"\x00") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	t.Fatal("no skiff-window process")
	return 0
}

// glMappings lists the GL and DRI libraries pid has mapped.
func glMappings(t *testing.T, pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 {
			continue
		}
		name := filepath.Base(f[5])
		if (strings.HasPrefix(name, "libGL") || strings.HasPrefix(name, "libEGL") || strings.Contains(f[5], "/dri/") || strings.HasPrefix(name, "libglfw")) && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}
