package linux

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freshRootCache keeps the debootstrap'd root between runs (a tarball).
const freshRootCache = "/var/cache/skiff-fresh-root/bookworm-minbase.tar"

// TestFreshRoot installs the deb the way a user would on a fresh Debian 12:
// a minimal root made by debootstrap (cached in freshRootCache), the deb
// copied in, apt-get install ./skiff.deb in a chroot, which must pull every
// runtime dependency (Recommends too, as apt does by default) from the
// mirror apt is configured with here. Then the binary must find all its
// libraries, the group and the unit must be there, and purge must remove
// them. It needs the network and minutes, so it runs only with
// SKIFF_FRESH_ROOT=1 (make package-test-fresh), not in CI.
func TestFreshRoot(t *testing.T) {
	if os.Getenv("SKIFF_FRESH_ROOT") != "1" {
		t.Skip("set SKIFF_FRESH_ROOT=1 (make package-test-fresh): it downloads a Debian root and the deb's dependencies")
	}
	if os.Geteuid() != 0 {
		t.Fatal("needs root (debootstrap, chroot)")
	}
	f := need(t, "debootstrap", "chroot", "tar", "mount")
	mirror := aptMirror(t)
	if _, err := os.Stat(freshRootCache); err != nil {
		start := time.Now()
		dir := t.TempDir()
		root := filepath.Join(dir, "root")
		cmd := exec.Command("debootstrap", "--variant=minbase", "bookworm", root, mirror)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("debootstrap: %v\n%s", err, tailOf(out, 30))
		}
		if err := os.MkdirAll(filepath.Dir(freshRootCache), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("tar", "-C", root, "-cf", freshRootCache+".tmp", ".").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
		if err := os.Rename(freshRootCache+".tmp", freshRootCache); err != nil {
			t.Fatal(err)
		}
		t.Logf("debootstrap --variant=minbase bookworm: %.0f s (cached in %s)", time.Since(start).Seconds(), freshRootCache)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-C", root, "-xf", freshRootCache).CombinedOutput(); err != nil {
		t.Fatalf("untar the fresh root: %v\n%s", err, out)
	}
	// Only a fresh proc (debootstrap made /dev's nodes): no bind mount of
	// the machine's /dev or /sys that a failed unmount would leave for the
	// temporary directory's removal to walk into.
	proc := filepath.Join(root, "proc")
	if out, err := exec.Command("mount", "-t", "proc", "proc", proc).CombinedOutput(); err != nil {
		t.Fatalf("mount proc: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", proc).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", proc, err, out)
		}
	})
	if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		os.WriteFile(filepath.Join(root, "etc/resolv.conf"), b, 0o644)
	}
	deb := filepath.Join(root, "tmp", filepath.Base(f.deb))
	if out, err := exec.Command("cp", f.deb, deb).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	chroot := func(args ...string) (string, error) {
		cmd := exec.Command("chroot", append([]string{root}, args...)...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LANG=C.UTF-8", "SUDO_USER=tester"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := chroot("useradd", "--create-home", "tester"); err != nil {
		t.Fatalf("useradd: %v\n%s", err, out)
	}
	start := time.Now()
	if out, err := chroot("apt-get", "update", "-q"); err != nil {
		t.Fatalf("apt-get update: %v\n%s", err, out)
	}
	update := time.Since(start)
	start = time.Now()
	out, err := chroot("apt-get", "install", "-y", "-q", "/tmp/"+filepath.Base(f.deb))
	if err != nil {
		t.Fatalf("apt-get install ./skiff.deb in the fresh root: %v\n%s", err, tailOf([]byte(out), 40))
	}
	var newly string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "newly installed") {
			newly = strings.TrimSpace(line)
		}
	}
	t.Logf("fresh root: apt-get update %.0f s, apt-get install ./%s %.0f s (%s)", update.Seconds(), filepath.Base(f.deb), time.Since(start).Seconds(), newly)
	if out, err := chroot("sh", "-c", "ldd /usr/bin/skiff-window | grep 'not found' || true"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("libraries missing in the fresh root: %v\n%s", err, out)
	}
	if out, err := chroot("/usr/bin/skiff", "--version"); err != nil || !strings.HasPrefix(lastLine(out), "skiff ") {
		t.Errorf("skiff --version in the fresh root: %v\n%s", err, out)
	}
	if out, err := chroot("id", "-nG", "tester"); err != nil || !strings.Contains(out, "skiff") {
		t.Errorf("tester (SUDO_USER) not in the group skiff: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, UnitPath("deb"))); err != nil {
		t.Errorf("unit: %v", err)
	}
	if out, err := chroot("dpkg-query", "-W", "-f=${Status}", "fonts-noto-cjk"); err != nil || !strings.Contains(out, "ok installed") {
		t.Errorf("the Recommends fonts-noto-cjk was not installed: %v %s", err, out)
	}
	if out, err := chroot("dpkg", "--purge", "skiff"); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	for _, p := range []string{"/usr/bin/skiff", UnitPath("deb")} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s is still there after purge", p)
		}
	}
	if out, _ := chroot("getent", "group", "skiff"); strings.TrimSpace(out) != "" {
		t.Errorf("group skiff still there after purge: %s", out)
	}
}

// aptMirror returns the Debian mirror apt uses here (deb822 or one-line
// sources).
func aptMirror(t *testing.T) string {
	t.Helper()
	paths, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "URIs:"); ok && !strings.Contains(u, "security") {
				fh.Close()
				return strings.Fields(u)[0]
			}
		}
		fh.Close()
	}
	if b, err := os.ReadFile("/etc/apt/sources.list"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "deb" && !strings.Contains(f[1], "security") {
				return f[1]
			}
		}
	}
	t.Fatal("no Debian mirror in /etc/apt/sources.list*")
	return ""
}

func tailOf(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
