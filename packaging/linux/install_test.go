package linux

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInstallPurge installs the deb on this machine the way a user would
// (sudo apt-get install ./skiff.deb, so SUDO_USER names them), checks the
// files, the group and the unit, starts the installed service directly
// (systemd is not PID 1 here; the postinst said so) and has an
// unprivileged member of the group talk to it while an outsider is
// refused. Then a `skiff run --tun` in a network namespace is killed with
// SIGKILL, leaving its routes and rules, and `dpkg --purge` in that
// namespace must stop the service, restore them and remove everything but
// the users' own data.
func TestInstallPurge(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the install test needs root (it installs the deb on this machine)")
	}
	f := need(t, "apt-get", "dpkg", "ip", "runuser", "useradd")
	if f.unit == "" {
		t.Fatal("the binary has no `skiff service unit`")
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "skiff").Output(); err == nil && strings.Contains(string(out), "installed") {
		t.Fatalf("a skiff package is installed on this machine (%s); the test would replace it: dpkg --purge skiff first", out)
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Fatal("systemd runs here: the test would start the real skiff.service; it is written for CI machines without systemd")
	}

	home := t.TempDir()
	member := addUser(t, "skiffpkg-member", home)
	outsider := addUser(t, "skiffpkg-outsider", "")
	userData := filepath.Join(home, ".config", "skiff", "profile.json")
	if err := os.MkdirAll(filepath.Dir(userData), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userData, []byte(`{"the user's":"own data"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	ns := newNetns(t)
	hostBefore := routing(t, "")
	nsBefore := routing(t, ns)

	// Install.
	start := time.Now()
	install := exec.Command("apt-get", "install", "-y", "-q", "--no-install-recommends", f.deb)
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "SUDO_USER="+member)
	out, err := install.CombinedOutput()
	t.Cleanup(func() { exec.Command("dpkg", "--purge", "skiff").Run() }) // after a failure
	if err != nil {
		t.Fatalf("apt-get install %s: %v\n%s", f.deb, err, out)
	}
	t.Logf("apt-get install ./%s: %.1f s", filepath.Base(f.deb), time.Since(start).Seconds())
	for _, want := range []string{"added " + member + " to the group skiff", "systemd is not running here"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the postinst did not say %q:\n%s", want, out)
		}
	}
	for _, p := range wantFiles(UnitPath("deb")) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("installed: %v", err)
		}
	}
	if b, err := os.ReadFile(UnitPath("deb")); err != nil || string(b) != f.unitText {
		t.Errorf("the installed unit is not `skiff service unit`'s: %v", err)
	}
	g, err := user.LookupGroup("skiff")
	if err != nil {
		t.Fatalf("no group skiff after install: %v", err)
	}
	if !inGroup(t, member, g.Gid) {
		t.Errorf("%s (SUDO_USER) is not in the group skiff", member)
	}
	if inGroup(t, outsider, g.Gid) {
		t.Errorf("%s is in the group skiff", outsider)
	}
	if out, err := exec.Command("/usr/bin/skiff", "--version").Output(); err != nil || !strings.HasPrefix(lastLine(string(out)), "skiff 0.1.0") {
		t.Errorf("/usr/bin/skiff --version: %v %q", err, out)
	}
	if out, err := exec.Command("/usr/bin/skiff-window", "--version").Output(); err != nil || !strings.HasPrefix(lastLine(string(out)), "skiff-window 0.1.0") {
		t.Errorf("/usr/bin/skiff-window --version: %v %q", err, out)
	}

	// The installed service, started directly as the unit would.
	svc := exec.Command("/usr/bin/skiff", "service")
	var svcOut bytes.Buffer
	svc.Stdout, svc.Stderr = &svcOut, &svcOut
	svc.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	svcDone := make(chan error, 1)
	go func() { svcDone <- svc.Wait() }()
	t.Cleanup(func() {
		svc.Process.Kill()
		if t.Failed() {
			t.Logf("skiff service output:\n%s", svcOut.String())
		}
	})
	const sock = "/run/skiff/skiff.sock"
	if err := waitFor(20*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		t.Fatalf("the installed service did not create %s: %v\n%s", sock, err, svcOut.String())
	}
	var st syscall.Stat_t
	if err := syscall.Stat(sock, &st); err != nil {
		t.Fatal(err)
	}
	if mode := st.Mode & 0o777; mode != 0o660 || st.Uid != 0 || fmt.Sprint(st.Gid) != g.Gid {
		t.Errorf("%s: mode %o uid %d gid %d, want 0660 root:skiff (%s)", sock, mode, st.Uid, st.Gid, g.Gid)
	}
	if out, err := asUser(member, "/usr/bin/skiff", "status"); err != nil || !strings.Contains(out, "state: ") || strings.Contains(out, "Fyne") {
		t.Errorf("skiff status as %s (a member of skiff; LANG=C.UTF-8, no Fyne line expected): %v\n%s", member, err, out)
	} else {
		t.Logf("skiff status as the unprivileged member %s:\n%s", member, out)
	}
	if out, err := asUser(member, "/usr/bin/skiff", "import", "vless://6b1f2d3c-4e5f-4a6b-8c7d-9e0f1a2b3c4d@127.0.0.1:9?encryption=none&security=tls&type=tcp&sni=localhost#pkgtest-node"); err != nil {
		t.Errorf("skiff import as %s through the service: %v\n%s", member, err, out)
	}
	if out, err := asUser(member, "/usr/bin/skiff", "nodes"); err != nil || !strings.Contains(out, "pkgtest-node") {
		t.Errorf("skiff nodes as %s does not show the node imported through the service: %v\n%s", member, err, out)
	}
	if out, err := asUser(outsider, "/usr/bin/skiff", "status"); err == nil {
		t.Errorf("skiff status as %s (not in skiff) succeeded:\n%s", outsider, out)
	}

	// A TUN run killed with SIGKILL leaves routes and rules in the
	// namespace; its state file is where the prerm's skiff cleanup looks.
	state := t.TempDir()
	tun := exec.Command("ip", "netns", "exec", ns, "sh", "-c", `mount --bind "$1" /run/skiff && shift && exec "$@"`, "sh", state,
		"/usr/bin/skiff", "run", "--tun", "--link", "vless://6b1f2d3c-4e5f-4a6b-8c7d-9e0f1a2b3c4d@10.77.0.1:443?encryption=none&security=tls&type=tcp&sni=localhost#x")
	var tunOut bytes.Buffer
	tun.Stdout, tun.Stderr = &tunOut, &tunOut
	if err := tun.Start(); err != nil {
		t.Fatal(err)
	}
	up := waitFor(30*time.Second, func() bool { return strings.Contains(tunOut.String(), "skiff: TUN ") })
	tun.Process.Kill()
	tun.Wait()
	if up != nil {
		t.Fatalf("skiff run --tun did not come up in %s: %v\n%s", ns, up, tunOut.String())
	}
	if routing(t, ns) == nsBefore {
		t.Fatal("the killed TUN run left the routing as it was: the purge check would prove nothing")
	}

	// Purge, in the namespace and with its state file, as dpkg would run
	// on the machine that ran the TUN.
	purge := exec.Command("ip", "netns", "exec", ns, "sh", "-c", `mount --bind "$1" /run/skiff && shift && exec "$@"`, "sh", state,
		"dpkg", "--purge", "skiff")
	out, err = purge.CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg --purge skiff: %v\n%s", err, out)
	}
	t.Logf("dpkg --purge skiff:\n%s", out)
	select {
	case <-svcDone:
	case <-time.After(15 * time.Second):
		t.Error("the directly started service still runs after purge (the prerm should stop it)")
	}
	if after := routing(t, ns); after != nsBefore {
		t.Errorf("routing in the namespace after purge differs\nbefore:\n%s\nafter:\n%s", nsBefore, after)
	}
	if after := routing(t, ""); after != hostBefore {
		t.Errorf("the machine's routing after install and purge differs\nbefore:\n%s\nafter:\n%s", hostBefore, after)
	}
	for _, p := range append(wantFiles(UnitPath("deb")), "/var/lib/skiff", sock) {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there after purge", p)
		}
	}
	if _, err := user.LookupGroup("skiff"); err == nil {
		t.Error("the group skiff is still there after purge")
	}
	if b, err := os.ReadFile(userData); err != nil || string(b) != `{"the user's":"own data"}` {
		t.Errorf("purge touched the user's own data %s: %v", userData, err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func addUser(t *testing.T, name, home string) string {
	t.Helper()
	exec.Command("userdel", name).Run() // left by an interrupted run
	args := []string{"--system", "--shell", "/bin/sh", "--user-group"}
	if home != "" {
		args = append(args, "--home-dir", home)
	} else {
		args = append(args, "--no-create-home")
	}
	if out, err := exec.Command("useradd", append(args, name)...).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	if home != "" {
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		exec.Command("chown", u.Uid+":"+u.Gid, home).Run()
		t.Cleanup(func() { exec.Command("chown", "-R", "0:0", home).Run() })
	}
	return name
}

// inGroup asks the group database (not the test's cached view) whether
// name is in the group gid.
func inGroup(t *testing.T, name, gid string) bool {
	t.Helper()
	out, err := exec.Command("id", "-G", name).Output()
	if err != nil {
		t.Fatalf("id -G %s: %v", name, err)
	}
	for _, g := range strings.Fields(string(out)) {
		if g == gid {
			return true
		}
	}
	return false
}

func asUser(name string, argv ...string) (string, error) {
	cmd := exec.Command("runuser", append([]string{"-u", name, "--"}, argv...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// newNetns makes a network namespace with an uplink (a veth pair inside it) and a default
// route, the shape of a machine a TUN run changes.
func newNetns(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("skiffpkg-%d", os.Getpid())
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "add", "uplink", "type", "veth", "peer", "name", "uplink-peer"},
		// no IPv6 link-local addresses: they appear a while after "up" and
		// would change the routing between the two snapshots
		{"-n", ns, "link", "set", "uplink", "addrgenmode", "none"},
		{"-n", ns, "link", "set", "uplink-peer", "addrgenmode", "none"},
		{"-n", ns, "link", "set", "uplink-peer", "up"},
		{"-n", ns, "addr", "add", "10.77.0.2/24", "dev", "uplink"},
		{"-n", ns, "link", "set", "uplink", "up"},
		{"-n", ns, "route", "add", "default", "via", "10.77.0.1"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			exec.Command("ip", "netns", "del", ns).Run()
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "netns" {
			t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
		}
	}
	return ns
}

// routing returns the routes of every table and the policy rules, IPv4 and
// IPv6, of the namespace ns ("" for the machine's own).
func routing(t *testing.T, ns string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"-4", "route", "show", "table", "all"}, {"-6", "route", "show", "table", "all"},
		{"-4", "rule", "show"}, {"-6", "rule", "show"},
	} {
		if ns != "" {
			args = append([]string{"-n", ns}, args...)
		}
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		fmt.Fprintf(&b, "# ip %s\n%s", strings.Join(args, " "), out)
	}
	return b.String()
}
