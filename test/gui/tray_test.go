package gui

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/skiffvpn/skiff/test/harness"
)

// watcher is a minimal StatusNotifierWatcher, the tray host's side of the
// D-Bus tray protocol: it records the items that register.
type watcher struct{ items chan string }

// RegisterStatusNotifierItem is the method tray items call.
func (w *watcher) RegisterStatusNotifierItem(sender dbus.Sender, item string) *dbus.Error {
	select {
	case w.items <- string(sender):
	default:
	}
	return nil
}

// startSessionBus starts a private D-Bus session bus and returns its
// address.
func startSessionBus(t *testing.T) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skipf("dbus-daemon is not installed: %v", err)
	}
	p := harness.Start(t, "dbus-daemon", daemon, "--session", "--nofork", "--nopidfile", "--print-address")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := p.WaitOutput(ctx, regexp.MustCompile(`(unix:\S+)`))
	if err != nil {
		t.Fatal(err)
	}
	return m[1]
}

// menuItem is one entry of a dbusmenu layout.
type menuItem struct {
	ID      int32
	Label   string
	Visible bool
}

// menuItems reads the tray menu of the item owned by dest.
func menuItems(t *testing.T, conn *dbus.Conn, dest string) []menuItem {
	t.Helper()
	var (
		rev    uint32
		layout struct {
			ID       int32
			Props    map[string]dbus.Variant
			Children []dbus.Variant
		}
	)
	err := conn.Object(dest, "/StatusNotifierMenu").Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &layout)
	if err != nil {
		t.Fatalf("dbusmenu GetLayout: %v", err)
	}
	var items []menuItem
	for _, c := range layout.Children {
		v, ok := c.Value().([]any)
		if !ok || len(v) < 2 {
			continue
		}
		id, _ := v[0].(int32)
		props, _ := v[1].(map[string]dbus.Variant)
		label, _ := props["label"].Value().(string)
		visible := true // dbusmenu's default
		if v, ok := props["visible"]; ok {
			visible, _ = v.Value().(bool)
		}
		items = append(items, menuItem{ID: id, Label: label, Visible: visible})
	}
	return items
}

// clickItem sends a click on the menu entry labelled label.
func clickItem(t *testing.T, conn *dbus.Conn, dest, label string) {
	t.Helper()
	for _, it := range menuItems(t, conn, dest) {
		if it.Label == label {
			call := conn.Object(dest, "/StatusNotifierMenu").Call("com.canonical.dbusmenu.Event", 0, it.ID, "clicked", dbus.MakeVariant(""), uint32(0))
			if call.Err != nil {
				t.Fatalf("dbusmenu Event %q: %v", label, call.Err)
			}
			return
		}
	}
	t.Fatalf("no tray menu entry %q in %v", label, menuItems(t, conn, dest))
}

func TestTrayWithAHost(t *testing.T) {
	paths := needTools(t)
	harness.NeedWindow(t) // `skiff` without a command starts the skiff-window beside it
	bin := harness.NeedSkiff(t)
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

	srv := hy2Server(t)
	origin := bigOrigin(t)
	display := startXvfb(t, paths["Xvfb"], 1024, 768)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	t.Setenv("DISPLAY", display)
	t.Setenv("LIBGL_ALWAYS_SOFTWARE", "1")
	t.Setenv("SKIFF_CONFIG_DIR", writeProfile(t, srv, listen, "http://"+origin+"/generate_204"))
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)
	gui := harness.Start(t, "skiff-gui", bin)

	var item string
	select {
	case item = <-w.items:
	case <-time.After(30 * time.Second):
		t.Fatalf("skiff registered no tray item:\n%s", gui.Output())
	}
	id := findWindow(t, display)
	labels := func() []string {
		var l []string
		for _, it := range menuItems(t, conn, item) {
			l = append(l, it.Label)
		}
		return l
	}
	t.Logf("tray menu: %q", labels())

	clickItem(t, conn, item, "Connect")
	deadline := time.Now().Add(15 * time.Second)
	for !socksOK(listen) {
		if time.Now().After(deadline) {
			t.Fatalf("the tray's Connect did not start the core; menu %q", labels())
		}
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(5 * time.Second)
	for labels()[0] != "Disconnect" {
		if time.Now().After(deadline) {
			t.Fatalf("tray menu %q after connecting, want Disconnect first", labels())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if l := labels(); l[1] != "Via Home server" {
		t.Errorf("tray shows %q as the current member, want Via Home server", l[1])
	}
	// The exit line follows (the lab's trace services may not answer: any
	// of its words will do).
	if l := labels(); !strings.HasPrefix(l[2], "Exit") {
		t.Errorf("tray menu %q after connecting, want the exit line third", l)
	}

	// Closing the window hides it to the tray (the VPN stays up); the
	// tray's Open brings it back.
	if wmclose, err := buildTool("wmclose", "gcc", "-O2", "-o", "OUT", "test/gui/testdata/wmclose/wmclose.c", "-lX11"); err != nil {
		t.Logf("not closing the window to the tray: %v", err)
	} else {
		cmd := exec.Command(wmclose, id)
		cmd.Env = append(os.Environ(), "DISPLAY="+display)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("wmclose: %v\n%s", err, out)
		}
		waitMapped(t, display, false)
		if !socksOK(listen) {
			t.Error("closing the window to the tray dropped the local proxy")
		}
		clickItem(t, conn, item, "Open Skiff")
		waitMapped(t, display, true)
	}

	clickItem(t, conn, item, "Quit")
	select {
	case <-gui.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("Quit in the tray menu did not end skiff")
	}
	if socksOK(listen) {
		t.Error("the local proxy still answers after Quit")
	}
}

// waitMapped waits until the window named Skiff is on screen (mapped) or
// not.
func waitMapped(t *testing.T, display string, mapped bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cmd := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^Skiff$")
		cmd.Env = append(os.Environ(), "DISPLAY="+display)
		out, _ := cmd.Output()
		if (len(strings.Fields(string(out))) > 0) == mapped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the window is not %s after 10 s", map[bool]string{true: "shown", false: "hidden"}[mapped])
		}
		time.Sleep(100 * time.Millisecond)
	}
}
