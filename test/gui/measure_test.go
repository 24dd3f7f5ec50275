package gui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestMeasureWindow measures what the window costs while nobody touches
// it: CPU time and wake-ups (times its threads were put on a CPU) per
// second, and RSS, of the window's process under Xvfb, in the states a
// user leaves it in: disconnected on Home with no profile, connected and
// idle on Home, connected with traffic on Home, and connected and hidden
// to the tray. Beside it, a bare Fyne window with one label: the floor of
// Fyne's own event loop. It is a measurement, not a test, and asserts no
// figure: it runs only with SKIFF_MEASURE=1 (make measure-window) and
// writes its table to test/out/measure-window.txt.
//
// SKIFF_MEASURE_BACKEND=service (the default) runs the core in `skiff
// service` (in a private mount namespace, in proxy mode) and the window as
// its client, so the window's figures hold only the window; =local runs
// the core inside the window, as without a service. SKIFF_MEASURE_SECONDS
// (default 20) and SKIFF_MEASURE_RUNS (default 3) set each window of
// measurement and how many are taken (the median is reported);
// SKIFF_MEASURE_BIN measures another skiff binary (an older build).
func TestMeasureWindow(t *testing.T) {
	if os.Getenv("SKIFF_MEASURE") != "1" {
		t.Skip("a measurement: run it with SKIFF_MEASURE=1 (make measure-window)")
	}
	paths := needTools(t)
	bin := os.Getenv("SKIFF_MEASURE_BIN")
	if bin == "" {
		bin = harness.NeedSkiff(t)
	}
	secs := envInt(t, "SKIFF_MEASURE_SECONDS", 20)
	runs := envInt(t, "SKIFF_MEASURE_RUNS", 3)
	backend := os.Getenv("SKIFF_MEASURE_BACKEND")
	if backend == "" {
		backend = "service"
	}
	floor := buildHelper(t, "fynefloor", "go", "build", "-o", "OUT", "./test/gui/testdata/fynefloor/main.go")
	wmclose := buildHelper(t, "wmclose", "gcc", "-O2", "-o", "OUT", "test/gui/testdata/wmclose/wmclose.c", "-lX11")

	m := &measurer{t: t, window: time.Duration(secs) * time.Second, runs: runs}
	t.Setenv("LIBGL_ALWAYS_SOFTWARE", "1")
	t.Setenv("SKIFF_CONFIG_DIR", "")

	// The floor: Fyne's loop with one label.
	display := startXvfb(t, paths["Xvfb"], 1024, 768)
	t.Setenv("DISPLAY", display)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	p := harness.Start(t, "fynefloor", floor)
	fitWindow(t, display, findWindow(t, display), 1024, 768)
	m.measure("bare Fyne window, one label (the floor)", p)
	p.Stop()

	srv := hy2Server(t)
	origin := bigOrigin(t)

	// Disconnected, no profile. A tray host runs, as on a desktop.
	bus := startTrayHost(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "gui.json"), fmt.Appendf(nil, `{"listen": %q}`, listen), 0o600); err != nil {
		t.Fatal(err)
	}
	gui := m.startWindow(bin, backend, empty, "")
	fitWindow(t, display, findWindow(t, display), 1024, 768)
	m.measure("disconnected on Home, no profile", gui)
	gui.Stop()
	m.stopService()

	// Connected (the local proxy, through the Hysteria2 server).
	dir := writeProfile(t, srv, listen, "http://"+origin+"/generate_204")
	gui = m.startWindow(bin, backend, dir, dir)
	id := findWindow(t, display)
	fitWindow(t, display, id, 1024, 768)
	clickConnect(t, display, id, listen)
	if n := fetchThrough(t, listen, origin); n < 1<<20 {
		t.Fatalf("fetched %d bytes through the proxy, want at least 1 MiB", n)
	}
	fetched := time.Now()
	screenshot(t, display, "measure-home-on")
	m.measure("connected, on Home, the graph still moving (under 60 s after traffic)", gui)
	// Idle: a minute after the last byte the graph's minute is all zeros.
	time.Sleep(time.Until(fetched.Add(62 * time.Second)))
	m.measure("connected, idle on Home (a minute after traffic)", gui)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int64)
	go func() { done <- steadyTraffic(ctx, listen, origin) }()
	time.Sleep(2 * time.Second)
	m.measure("connected, traffic on Home (about 8 Mbit/s)", gui)
	cancel()
	moved := <-done
	t.Logf("traffic moved: %d MiB", moved>>20)
	screenshot(t, display, "measure-home-traffic")

	cmd := exec.Command(wmclose, id)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wmclose: %v\n%s", err, out)
	}
	time.Sleep(2 * time.Second)
	if !socksOK(listen) {
		t.Fatal("closing the window to the tray dropped the proxy")
	}
	m.measure("connected, hidden to the tray", gui)
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- steadyTraffic(ctx, listen, origin) }()
	time.Sleep(2 * time.Second)
	m.measure("connected, traffic, hidden to the tray", gui)
	cancel()
	<-done
	m.report(backend, bin)
}

// measurer takes the measurements and keeps the rows of the table.
type measurer struct {
	t       *testing.T
	window  time.Duration
	runs    int
	rows    []string
	service *harness.Process
}

// startWindow starts the window with prefs (gui.json) from prefsDir; with
// backend "service" it starts a service first whose profile is the one in
// profileDir (none when ""), else the window's core uses profileDir.
func (m *measurer) startWindow(bin, backend, prefsDir, profileDir string) *harness.Process {
	t := m.t
	if backend != "service" {
		if profileDir != "" && profileDir != prefsDir {
			t.Fatal("local backend: the profile and the prefs share a directory")
		}
		t.Setenv("SKIFF_CONFIG_DIR", prefsDir)
		return harness.Start(t, "skiff-gui", bin, "gui", "--config-dir", prefsDir)
	}
	sock := m.startService(bin, profileDir)
	t.Setenv("SKIFF_CONFIG_DIR", prefsDir)
	// The window's program itself: `skiff gui` with a service becomes the
	// tray (skiff-tray), whose window is a process of its own.
	win := harness.NeedWindow(t)
	gui := harness.Start(t, "skiff-gui", win, "--socket", sock)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := gui.WaitText(ctx, "a client of the service"); err != nil {
		t.Fatalf("the window is not the service's client: %v\n%s", err, gui.Output())
	}
	return gui
}

// startService starts `skiff service` whose profile is the one in
// profileDir (none when "") and returns its socket.
func (m *measurer) startService(bin, profileDir string) string {
	t := m.t
	state := t.TempDir()
	if profileDir != "" {
		b, err := os.ReadFile(filepath.Join(profileDir, "profile.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, "profile.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := t.TempDir()
	if err := os.MkdirAll("/run/skiff", 0o755); err != nil {
		t.Skipf("the service needs /run/skiff to bind its own state over: %v", err)
	}
	sock := filepath.Join(t.TempDir(), "skiff.sock")
	// /run/skiff (the TUN state file) is the measurement's own, in a
	// mount namespace of the service's: nothing of the host's is touched.
	m.service = harness.Start(t, "skiff-service", "unshare", "-m", "sh", "-c",
		`mount --bind "$1" /run/skiff && shift && exec "$@"`, "sh", run,
		bin, "service", "--socket", sock, "--state-dir", state, "--group", "root")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service did not listen on %s:\n%s", sock, m.service.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return sock
}

// stopService stops the service startWindow started, if any.
func (m *measurer) stopService() {
	if m.service != nil {
		m.service.Stop()
		m.service = nil
	}
}

// sample is what a process has used so far.
type sample struct {
	at     time.Time
	cpu    time.Duration // on a CPU, all threads (live ones, plus the dead ones' in /proc/PID/stat)
	wakeup int64         // times a thread was put on a CPU (schedstat), live threads
	ctxsw  int64         // voluntary + involuntary context switches, live threads
}

// measure takes m.runs windows of m.window and records the median of each
// figure, with RSS at the end.
func (m *measurer) measure(what string, p *harness.Process) {
	m.measurePID(what, p.Pid(), func() {
		select {
		case <-p.Done():
			m.t.Fatalf("%s exited while measured: %s\n%s", p.Name, p.ExitStatus(), p.Output())
		default:
		}
	})
}

// measurePID is measure for process pid; alive fails the test when the
// process ended meanwhile.
func (m *measurer) measurePID(what string, pid int, alive func()) {
	t := m.t
	if m.runs == 0 { // the scenario without the measuring
		alive()
		return
	}
	time.Sleep(3 * time.Second) // let what the last step started settle
	var cpus, wakes, sws []float64
	for range m.runs {
		a := readSample(t, pid)
		time.Sleep(m.window)
		b := readSample(t, pid)
		secs := b.at.Sub(a.at).Seconds()
		cpus = append(cpus, (b.cpu-a.cpu).Seconds()/secs*100)
		wakes = append(wakes, float64(b.wakeup-a.wakeup)/secs)
		sws = append(sws, float64(b.ctxsw-a.ctxsw)/secs)
	}
	alive()
	mem := readMemory(t, pid)
	row := fmt.Sprintf("| %s | %.2f %% (%.2f s/min) | %.0f | %.0f | %.1f | %.1f | %.1f | %d |",
		what, median(cpus), median(cpus)*0.6, median(wakes), median(sws),
		mem["Rss"]/1024, mem["Anonymous"]/1024, (mem["Rss"]-mem["Anonymous"])/1024, threads(t, pid))
	t.Logf("%s  (runs: CPU %% %v, wake-ups/s %v)", row, round(cpus), round(wakes))
	m.rows = append(m.rows, row)
	saveMemory(t, pid, what)
}

// report writes the table to the log and test/out/measure-window.txt.
func (m *measurer) report(backend, bin string) {
	load, _ := os.ReadFile("/proc/loadavg")
	head := fmt.Sprintf("%s  backend=%s  bin=%s  %d runs of %s, medians  load %s\n"+
		"| state | CPU (of one core) | wake-ups/s | context switches/s | RSS MiB | anon MiB | file+shmem MiB | threads |\n|---|---|---|---|---|---|---|---|\n",
		time.Now().UTC().Format(time.RFC3339), backend, bin, m.runs, m.window, strings.TrimSpace(string(load)))
	text := head + strings.Join(m.rows, "\n") + "\n"
	m.t.Log("\n" + text)
	if out, err := harness.OutDir(); err == nil {
		f, err := os.OpenFile(filepath.Join(out, "measure-window.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.WriteString(text + "\n")
			f.Close()
		}
	}
}

// readSample reads what pid has used so far from /proc.
func readSample(t *testing.T, pid int) sample {
	s := sample{at: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// utime+stime of the whole process (dead threads included), in
	// USER_HZ ticks: coarse but complete; schedstat below is exact but
	// per live thread. Take the larger resolution-corrected figure.
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	ticks := time.Duration(u+k) * 10 * time.Millisecond
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ns time.Duration
	for _, task := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, task.Name())
		if b, err := os.ReadFile(dir + "schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) == 3 {
				run, _ := strconv.ParseInt(f[0], 10, 64)
				n, _ := strconv.ParseInt(f[2], 10, 64)
				ns += time.Duration(run)
				s.wakeup += n
			}
		}
		if b, err := os.ReadFile(dir + "status"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "voluntary_ctxt_switches:") || strings.HasPrefix(l, "nonvoluntary_ctxt_switches:") {
					v, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
					s.ctxsw += v
				}
			}
		}
	}
	s.cpu = ns
	if ticks > ns+20*time.Millisecond { // threads that ended took their schedstat with them
		s.cpu = ticks
	}
	return s
}

// readMemory returns /proc/PID/smaps_rollup's figures, in KiB.
func readMemory(t *testing.T, pid int) map[string]float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == "kB" {
			v, _ := strconv.ParseFloat(f[1], 64)
			m[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	return m
}

// threads returns how many threads pid has.
func threads(t *testing.T, pid int) int {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// saveMemory appends pid's smaps_rollup and its largest mappings (by
// RSS, summed per backing file or kind) to test/out/measure-window-memory.txt.
func saveMemory(t *testing.T, pid int, what string) {
	out, err := harness.OutDir()
	if err != nil {
		return
	}
	rollup, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byName := map[string]float64{}
	var name string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			name = "[anon]"
			if len(fs) >= 6 {
				name = strings.Join(fs[5:], " ")
			}
		case len(fs) == 3 && fs[0] == "Rss:":
			v, _ := strconv.ParseFloat(fs[1], 64)
			byName[name] += v
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return byName[names[i]] > byName[names[j]] })
	var b strings.Builder
	fmt.Fprintf(&b, "== %s  %s  pid %d\n%s-- largest mappings (RSS KiB, summed per file) --\n", time.Now().UTC().Format(time.RFC3339), what, pid, rollup)
	for _, n := range names[:min(len(names), 15)] {
		fmt.Fprintf(&b, "%8.0f  %s\n", byName[n], n)
	}
	file, err := os.OpenFile(filepath.Join(out, "measure-window-memory.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		file.WriteString(b.String() + "\n")
		file.Close()
	}
}

// steadyTraffic downloads from origin through the proxy at about 1 MiB/s
// until ctx ends, and returns the bytes moved.
func steadyTraffic(ctx context.Context, proxy, origin string) int64 {
	var total int64
	buf := make([]byte, 32<<10)
	for ctx.Err() == nil {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := harness.DialSOCKS(dctx, proxy, origin)
		cancel()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", origin)
		for ctx.Err() == nil {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.ReadFull(c, buf)
			total += int64(n)
			if err != nil {
				break
			}
			time.Sleep(30 * time.Millisecond) // 32 KiB per 30 ms: about 1 MiB/s
		}
		c.Close()
	}
	return total
}

// startTrayHost starts a session bus with a StatusNotifierWatcher on it
// (so the window has a tray and closing it hides it) and returns the
// bus's address.
func startTrayHost(t *testing.T) string {
	bus := startSessionBus(t)
	conn, err := dbus.Connect(bus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	w := &watcher{items: make(chan string, 4)}
	if err := conn.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning the watcher name: %v %v", reply, err)
	}
	return bus
}

// buildHelper is buildTool for the measurement: it skips t when the
// build fails.
func buildHelper(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := buildTool(name, args...)
	if err != nil {
		t.Skip(err)
	}
	return out
}

// buildTool builds one of testdata's helper programs from the
// repository's root (the Fyne floor needs the product's module for Fyne)
// into test/bin and returns its path; "OUT" in args is the output file.
func buildTool(name string, args ...string) (string, error) {
	bin, err := harness.BinDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(bin, name)
	args = slices.Clone(args)
	for i, a := range args {
		if a == "OUT" {
			args[i] = out
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = filepath.Dir(filepath.Dir(bin))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, b)
	}
	return out, nil
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func round(v []float64) []string {
	var out []string
	for _, x := range v {
		out = append(out, strconv.FormatFloat(x, 'f', 2, 64))
	}
	return out
}
