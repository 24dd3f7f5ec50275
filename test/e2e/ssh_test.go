package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// sshdBin is Debian's OpenSSH server (make deps installs openssh-server).
const sshdBin = "/usr/sbin/sshd"

// sshUser is the account the tests log in as. sshd checks passwords
// against the system's accounts, so the test makes this one (and removes
// it when it made it), with a fresh password per run; its sshd lets no
// other account in.
const sshUser = "skiff-sshtest"

// sshd is one OpenSSH server of a test: its own host key, configuration
// and loopback port, never the system's sshd.
type sshd struct {
	dir      string
	port     int
	hostKey  string // authorized_keys line of the host key
	password string
	userKey  string // the user's private key, OpenSSH PEM, encrypted with keyPass
	keyPass  string
	proc     *harness.Process
	log      string // output of the sshd processes stopped before
}

// newSSHD prepares an sshd for t (host key, user key, account,
// configuration) and starts it.
func newSSHD(t *testing.T) *sshd {
	t.Helper()
	if _, err := os.Stat(sshdBin); err != nil {
		t.Skipf("%s is not installed (make deps installs openssh-server)", sshdBin)
	}
	if os.Geteuid() != 0 {
		t.Skip("sshd's password login needs a system account, which only root can make")
	}
	dir := t.TempDir()
	// sshd reads authorized_keys as the user: the path must be readable.
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &sshd{dir: dir, port: port, password: "pw-" + randomHex(12), keyPass: "kp-" + randomHex(8)}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", filepath.Join(dir, "host"))
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", s.keyPass, "-C", "", "-f", filepath.Join(dir, "user"))
	s.hostKey = strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "host.pub")))))
	s.userKey = string(must(os.ReadFile(filepath.Join(dir, "user"))))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), must(os.ReadFile(filepath.Join(dir, "user.pub"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := user.Lookup(sshUser); err != nil {
		run("useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh", sshUser)
		t.Cleanup(func() { exec.Command("userdel", sshUser).Run() })
	}
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(sshUser + ":" + s.password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chpasswd: %v\n%s", err, out)
	}
	// Privilege separation needs its directory (the package makes it at
	// boot through systemd, which this machine may not run).
	os.MkdirAll("/run/sshd", 0o755)
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PasswordAuthentication yes
KbdInteractiveAuthentication no
PubkeyAuthentication yes
UsePAM no
PermitRootLogin no
AllowUsers %s
AllowTcpForwarding yes
StrictModes no
LogLevel DEBUG1
`, port, filepath.Join(dir, "host"), filepath.Join(dir, "sshd.pid"), filepath.Join(dir, "authorized_keys"), sshUser)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s.start(t)
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("--- sshd's output ---\n%s--- end ---", s.log)
		}
	})
	return s
}

// start runs sshd in the foreground, logging to stderr, and waits for its
// port.
func (s *sshd) start(t *testing.T) {
	t.Helper()
	// Not harness.Start: its cleanup would wait for sshd's output, which
	// its children hold open while skiff is connected; stop ends them.
	p, err := harness.StartProcess("sshd", sshdBin, "-D", "-e", "-f", filepath.Join(s.dir, "sshd_config"))
	if err != nil {
		t.Fatal(err)
	}
	s.proc = p
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))); err != nil {
		t.Fatalf("sshd did not listen: %v\n%s", err, s.proc.Output())
	}
}

// stop kills sshd and the processes it forked for connections (they
// outlive it, each in a session of its own), as a server restart or crash
// ends every connection.
func (s *sshd) stop() {
	if s.proc == nil {
		return
	}
	s.log += s.proc.Output()
	// The children first: they hold sshd's output pipe open, which the
	// harness reads to its end.
	syscall.Kill(s.proc.Pid(), syscall.SIGSTOP) // no new children meanwhile
	for _, pid := range descendants(s.proc.Pid()) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	s.proc.Kill()
	s.proc = nil
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[p] = pp
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// link is Hiddify's ssh:// link for password login, pinning hostKey.
func (s *sshd) link(password, hostKey string) string {
	return "ssh://" + sshUser + ":" + url.QueryEscape(password) + "@127.0.0.1:" + strconv.Itoa(s.port) +
		"?hk=" + url.QueryEscape(hostKey) + "#sshd"
}

// importClash imports a Clash document with one ssh proxy logging in with
// the user's encrypted key, and returns skiff run's flags for it.
func (s *sshd) importClash(t *testing.T) []string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "proxies:\n  - name: sshkey\n    type: ssh\n    server: 127.0.0.1\n    port: %d\n    username: %s\n", s.port, sshUser)
	fmt.Fprintf(&b, "    private-key-passphrase: %q\n    host-key: [%q]\n    private-key: |\n", s.keyPass, s.hostKey)
	for _, l := range strings.Split(strings.TrimSpace(s.userKey), "\n") {
		b.WriteString("      " + l + "\n")
	}
	return importDoc(t, b.String(), "clash.yaml", "sshkey")
}

// importSingBox imports a sing-box document with one ssh outbound logging
// in with the user's encrypted key (private_key as a list of the PEM's
// lines, as sing-box writes it), and returns skiff run's flags for it.
func (s *sshd) importSingBox(t *testing.T) []string {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"outbounds": []any{map[string]any{
		"type": "ssh", "tag": "sshkey", "server": "127.0.0.1", "server_port": s.port, "user": sshUser,
		"private_key": strings.Split(strings.TrimSpace(s.userKey), "\n"), "private_key_passphrase": s.keyPass,
		"host_key": []string{s.hostKey}, "client_version": "SSH-2.0-OpenSSH_9.2p1 skiff-e2e",
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return importDoc(t, string(doc), "sing-box.json", "sshkey")
}

func startSkiffSSH(t *testing.T, s *sshd, links []string, extra ...string) (*harness.Process, string) {
	t.Helper()
	return skiffRunSecret(t, []string{s.password, s.keyPass}, links, extra...)
}

// skiffRunSecret is harness.SkiffRun that fails t when skiff's output, at
// the end, holds one of secrets.
func skiffRunSecret(t *testing.T, secrets, links []string, extra ...string) (*harness.Process, string) {
	t.Helper()
	p, proxy, err := harness.SkiffRun(t, links, extra...)
	t.Cleanup(func() {
		p.Stop()
		for _, secret := range secrets {
			if strings.Contains(p.Output(), secret) {
				t.Errorf("skiff's output contains a secret (%d characters)", len(secret))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, proxy
}

// TestSSHPassword: password login to OpenSSH's sshd through Hiddify's
// ssh:// link; 16 MiB echoed both ways with a hash check; a closed port
// behind sshd is the destination's failure, not the server's; after sshd is
// killed (with its connections) and started again, new flows go through
// a new SSH connection.
func TestSSHPassword(t *testing.T) {
	s := newSSHD(t)
	_, proxy := startSkiffSSH(t, s, []string{s.link(s.password, s.hostKey)})
	echo := harness.TCPEcho(t)
	testTCPEchoTo(t, proxy, echo, 16<<20)
	testTCPEchoTo(t, proxy, echo, 1<<20)
	if n := strings.Count(s.proc.Output(), "Accepted password for "+sshUser); n != 1 {
		t.Fatalf("sshd accepted %d logins for two flows, want 1 (one shared connection):\n%s", n, s.proc.Output())
	}
	targetRefused(t, linkOutbound(t, s.link(s.password, s.hostKey), nil)) // sshd: "connect failed"

	s.stop()
	s.start(t)
	start := time.Now()
	testTCPEchoTo(t, proxy, echo, 1<<20)
	t.Logf("first flow after the restart echoed %v after it", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(s.proc.Output(), "Accepted password for "+sshUser) {
		t.Fatalf("the restarted sshd saw no login:\n%s", s.proc.Output())
	}
}

// TestSSHKey: login with an encrypted OpenSSH key and its passphrase from
// a Clash and a sing-box document (skiff import), 16 MiB echoed both
// ways; sing-box's client_version is the one sshd sees.
func TestSSHKey(t *testing.T) {
	s := newSSHD(t)
	for _, form := range []string{"clash", "sing-box"} {
		t.Run(form, func(t *testing.T) {
			flags := s.importClash(t)
			if form == "sing-box" {
				flags = s.importSingBox(t)
			}
			before := strings.Count(s.proc.Output(), "Accepted publickey for "+sshUser)
			_, proxy := startSkiffSSH(t, s, nil, flags...)
			testTCPEchoTo(t, proxy, harness.TCPEcho(t), 16<<20)
			if strings.Count(s.proc.Output(), "Accepted publickey for "+sshUser) != before+1 {
				t.Fatalf("sshd did not log a key login:\n%s", s.proc.Output())
			}
			if form == "sing-box" && !strings.Contains(s.proc.Output(), "OpenSSH_9.2p1 skiff-e2e") {
				t.Fatalf("sshd did not see the client version:\n%s", s.proc.Output())
			}
		})
	}
}

// TestSSHRefused: a host key other than the server's is refused before
// any login (sshd never sees a password attempt), and a wrong password is
// refused by sshd; neither carries a flow.
func TestSSHRefused(t *testing.T) {
	s := newSSHD(t)
	other := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	otherKey := strings.TrimSpace(string(must(os.ReadFile(other + ".pub"))))
	for _, tc := range []struct {
		name, link, step string
	}{
		{"wrong-host-key", s.link(s.password, otherKey), "not the pinned one"},
		{"wrong-password", s.link("not-"+s.password, s.hostKey), "rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, proxy := startSkiffSSH(t, s, []string{tc.link})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := harness.DialSOCKS(ctx, proxy, harness.TCPEcho(t))
			if err == nil {
				c.Close()
				t.Fatal("the SOCKS connect succeeded through a refused SSH server")
			}
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(p.Output(), tc.step) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !strings.Contains(p.Output(), tc.step) {
				t.Fatalf("skiff's log does not say %q:\n%s", tc.step, p.Output())
			}
			if tc.name == "wrong-host-key" && strings.Contains(s.proc.Output(), "password for") {
				t.Fatalf("skiff tried the password on a server whose host key is not pinned:\n%s", s.proc.Output())
			}
		})
	}
}
