package service

import (
	"bufio"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// The lab's addresses: the client namespace reaches the server namespace
// over a veth pair; the echo and HTTP peers live on a public documentation
// address of the server namespace, which the TUN captures.
const (
	cliAddr  = "10.93.0.1"
	srvAddr  = "10.93.0.2"
	echoAddr = "198.51.100.9"
	subPort  = 8080
	echoPort = 7001
	hy2Port  = 8443
	hy2Pass  = "service-e2e-hy2-SECRET"
)

// helperEnv selects a role when the test binary runs itself.
const helperEnv = "SKIFF_SERVICE_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "server":
		serve()
	case "hold":
		hold()
	}
	os.Exit(0)
}

// serve runs the server namespace's peers: the subscription (its body from
// SKIFF_SUB_BODY), a TCP echo and an HTTP server on echoAddr.
func serve() {
	body := os.Getenv("SKIFF_SUB_BODY")
	sub, err := net.Listen("tcp", net.JoinHostPort(srvAddr, strconv.Itoa(subPort)))
	must(err)
	go http.Serve(sub, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Profile-Title", "Service Lab")
		io.WriteString(w, body)
	}))
	echo, err := net.Listen("tcp", net.JoinHostPort(echoAddr, strconv.Itoa(echoPort)))
	must(err)
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	web, err := net.Listen("tcp", net.JoinHostPort(echoAddr, "80"))
	must(err)
	go http.Serve(web, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "service-lab-http\n")
	}))
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}

// hold keeps one TCP connection to the echo open, checking it every 200 ms:
// "ok" once it works, "closed" when it ends.
func hold() {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(echoAddr, strconv.Itoa(echoPort)), 10*time.Second)
	if err != nil {
		fmt.Println("closed: dial:", err)
		return
	}
	buf := make([]byte, 5)
	for i := 0; ; i++ {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err := c.Write([]byte("ping\n"))
		if err == nil {
			_, err = io.ReadFull(c, buf)
		}
		if err != nil {
			fmt.Println("closed:", err)
			return
		}
		if i == 0 {
			fmt.Println("ok")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
}

// lab is the namespaces, the users and the service's directories.
type lab struct {
	t          *testing.T
	cli, srv   string // namespaces
	dir        string // 0755: the socket's directory and the binaries
	state      string // bind-mounted on /run/skiff for the service (its TUN state file)
	socket     string
	profileDir string
	group      string
	member     string // in group
	outsider   string // not in group
	skiff      string // the cgo-free skiff, copied into dir
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func newLab(t *testing.T) *lab {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, users, TUN)")
	}
	for _, tool := range []string{"ip", "setpriv", "useradd", "groupadd", "ss", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	id := fmt.Sprintf("%d", os.Getpid()%100000)
	l := &lab{t: t, cli: "svct-c" + id, srv: "svct-s" + id, group: "skft" + id, member: "skfm" + id, outsider: "skfo" + id}
	if err := exec.Command("ip", "netns", "add", l.cli).Run(); err != nil {
		t.Skipf("cannot create a network namespace: %v", err)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", l.cli).Run() })
	run(t, "ip", "netns", "add", l.srv)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", l.srv).Run() })
	for _, ns := range []string{l.cli, l.srv} {
		run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0")
	}
	run(t, "ip", "link", "add", "svc"+id, "netns", l.cli, "type", "veth", "peer", "name", "svs"+id, "netns", l.srv)
	for _, c := range [][]string{
		{"-n", l.cli, "link", "set", "lo", "up"},
		{"-n", l.srv, "link", "set", "lo", "up"},
		{"-n", l.cli, "addr", "add", cliAddr + "/24", "dev", "svc" + id},
		{"-n", l.srv, "addr", "add", srvAddr + "/24", "dev", "svs" + id},
		{"-n", l.srv, "addr", "add", echoAddr + "/32", "dev", "lo"},
		{"-n", l.cli, "link", "set", "svc" + id, "up"},
		{"-n", l.srv, "link", "set", "svs" + id, "up"},
		{"-n", l.cli, "route", "add", "default", "via", srvAddr},
	} {
		run(t, append([]string{"ip"}, c...)...)
	}

	// Users: one in the operators' group, one outside it.
	run(t, "groupadd", l.group)
	t.Cleanup(func() { exec.Command("groupdel", l.group).Run() })
	run(t, "useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "-G", l.group, l.member)
	t.Cleanup(func() { exec.Command("userdel", l.member).Run() })
	run(t, "useradd", "-M", "-N", "-s", "/usr/sbin/nologin", l.outsider)
	t.Cleanup(func() { exec.Command("userdel", l.outsider).Run() })

	var err error
	l.dir, err = os.MkdirTemp("", "skiff-service-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(l.dir) })
	if err := os.Chmod(l.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l.state = filepath.Join(l.dir, "run")
	l.profileDir = filepath.Join(l.dir, "lib")
	l.socket = filepath.Join(l.dir, "sock", "skiff.sock")
	if err := os.MkdirAll(l.state, 0o700); err != nil {
		t.Fatal(err)
	}
	src, err := harness.SkiffBinary()
	if err != nil {
		t.Fatal(err)
	}
	l.skiff = filepath.Join(l.dir, "skiff")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.skiff, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return l
}

// startPeers starts sing-box (Hysteria2) and the helper peers in the server
// namespace and returns the share link.
func (l *lab) startPeers(t *testing.T) string {
	sb := harness.NeedSingBox(t)
	dir := t.TempDir()
	cert, err := harness.NewCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := &harness.Server{Kind: harness.Hysteria2, Port: hy2Port, Cert: cert, Password: hy2Pass}
	raw, err := srv.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["inbounds"].([]any)[0].(map[string]any)["listen"] = "::"
	raw, _ = json.Marshal(cfg)
	path := filepath.Join(dir, "server.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	p := harness.Start(t, "sing-box", "ip", "netns", "exec", l.srv, sb, "run", "--disable-color", "-c", path)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "sing-box started"); err != nil {
		t.Fatal(err)
	}
	link := strings.Replace(srv.Link(srv.Trusting()), "127.0.0.1:", srvAddr+":", 1)

	cmd := exec.Command("ip", "netns", "exec", l.srv, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=server", "SKIFF_SUB_BODY="+link+"\n")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("server helper did not start: %q", line)
	}
	return link
}

// startService runs `skiff service` as root in the client namespace, with
// the lab's state directory on /run/skiff in its own mount namespace.
func (l *lab) startService(t *testing.T) *harness.Process {
	t.Helper()
	p, err := harness.StartProcess("skiff-service", "ip", "netns", "exec", l.cli, "sh", "-c",
		`mount --bind "$1" /run/skiff && shift && exec "$@"`, "sh", l.state,
		l.skiff, "service", "--socket", l.socket, "--state-dir", l.profileDir, "--group", l.group)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() || os.Getenv("SKIFF_TEST_LOGS") == "1" {
			t.Logf("--- skiff service (%s) ---\n%s", p.ExitStatus(), p.Output())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "service: listening"); err != nil {
		t.Fatalf("service did not come up: %v\n%s", err, p.Output())
	}
	return p
}

// as runs skiff args as user, with the lab's socket.
func (l *lab) as(user string, args ...string) (string, int) {
	argv := []string{"--reuid", user, "--regid", l.gidOf(user), "--init-groups", l.skiff, args[0], "--socket", l.socket}
	argv = append(argv, args[1:]...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "setpriv", argv...)
	// The locale of a minimal system, under which Fyne, were it linked,
	// would print "Fyne error: Error parsing user locale C".
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

// asOK is as, failing the test on a non-zero exit.
func (l *lab) asOK(t *testing.T, user string, args ...string) string {
	t.Helper()
	out, code := l.as(user, args...)
	if code != 0 {
		t.Fatalf("skiff %s as %s: exit %d\n%s", strings.Join(args, " "), user, code, out)
	}
	return out
}

func (l *lab) gidOf(user string) string {
	out, err := exec.Command("id", "-g", user).Output()
	if err != nil {
		l.t.Fatalf("id -g %s: %v", user, err)
	}
	return strings.TrimSpace(string(out))
}

// routing is the client namespace's policy rules, routes and nftables.
func (l *lab) routing(t *testing.T) string {
	var b strings.Builder
	for _, c := range [][]string{
		{"ip", "-n", l.cli, "-4", "rule", "show"}, {"ip", "-n", l.cli, "-6", "rule", "show"},
		{"ip", "-n", l.cli, "-4", "route", "show", "table", "all"}, {"ip", "-n", l.cli, "-6", "route", "show", "table", "all"},
		{"ip", "-n", l.cli, "-br", "link", "show"},
		{"ip", "netns", "exec", l.cli, "nft", "list", "ruleset"},
	} {
		b.WriteString(run(t, c...))
	}
	return b.String()
}

// curl fetches the lab's web page from the client namespace.
func (l *lab) curl() (string, error) {
	out, err := exec.Command("ip", "netns", "exec", l.cli, "curl", "-sS", "--max-time", "10", "--noproxy", "*",
		"http://"+echoAddr+"/").CombinedOutput()
	return string(out), err
}

// status is `skiff status --json` as the member.
type status struct {
	State  string `json:"state"`
	TUN    string `json:"tun"`
	Listen string `json:"listen"`
	Route  *struct {
		Name string `json:"name"`
		Mode string `json:"mode"`
	} `json:"route"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (l *lab) status(t *testing.T) status {
	t.Helper()
	var st status
	out := l.asOK(t, l.member, "status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v: %s", err, out)
	}
	return st
}

// client is an HTTP client of the service's socket, for the raw-input cases.
func (l *lab) client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", l.socket)
	}}, Timeout: 10 * time.Second}
}

func TestService(t *testing.T) {
	l := newLab(t)
	l.startPeers(t)
	before := l.routing(t)
	svc := l.startService(t)

	t.Run("socket", func(t *testing.T) {
		var st syscall.Stat_t
		if err := syscall.Stat(l.socket, &st); err != nil {
			t.Fatal(err)
		}
		gid := strings.Split(strings.TrimSpace(run(t, "getent", "group", l.group)), ":")[2]
		if st.Mode&0o777 != 0o660 || st.Uid != 0 || strconv.Itoa(int(st.Gid)) != gid {
			t.Errorf("socket mode %o owner %d:%d", st.Mode&0o777, st.Uid, st.Gid)
		}
		l.checkNoTCP(t, svc, "")
	})

	t.Run("no Fyne", func(t *testing.T) {
		// The service and the CLI are skiff, built without cgo: Fyne is
		// neither linked nor initialised in them (the window is
		// skiff-window).
		mods := run(t, "go", "version", "-m", l.skiff)
		if strings.Contains(mods, "fyne.io") || !strings.Contains(mods, "CGO_ENABLED=0") {
			t.Errorf("skiff links Fyne or cgo:\n%s", mods)
		}
		out := l.asOK(t, l.member, "status")
		if !strings.Contains(out, "state: ") || strings.Contains(out, "Fyne") {
			t.Errorf("skiff status under LANG=C.UTF-8:\n%s", out)
		}
		if strings.Contains(svc.Output(), "Fyne") {
			t.Errorf("the service's output mentions Fyne:\n%s", svc.Output())
		}
	})

	t.Run("outsider refused", func(t *testing.T) {
		out, code := l.as(l.outsider, "status")
		if code != 4 || !strings.Contains(out, "not allowed") || !strings.Contains(out, "usermod -aG") {
			t.Errorf("outsider: exit %d: %s", code, out)
		}
		out, code = l.as(l.outsider, "connect", "--tun")
		if code != 4 {
			t.Errorf("outsider connect: exit %d: %s", code, out)
		}
		if st := l.status(t); st.State != "stopped" {
			t.Errorf("state after the outsider: %s", st.State)
		}
	})

	// A second client watches from the start: it must see what the first
	// one does.
	watch := harness.Start(t, "skiff-watch", "setpriv", "--reuid", l.member, "--regid", l.gidOf(l.member), "--init-groups",
		l.skiff, "watch", "--stats", "--socket", l.socket)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := watch.WaitText(ctx, `"kind":"status"`); err != nil {
		t.Fatalf("watch: %v\n%s", err, watch.Output())
	}
	cancel()

	t.Run("import", func(t *testing.T) {
		out := l.asOK(t, l.member, "import", fmt.Sprintf("http://%s:%d/sub?token=SECRET", srvAddr, subPort))
		if !strings.Contains(out, `added subscription "Service Lab"`) || !strings.Contains(out, "1 nodes") {
			t.Errorf("import: %s", out)
		}
		if strings.Contains(out, "SECRET") {
			t.Errorf("import output shows the token: %s", out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := watch.WaitText(ctx, `"kind":"profile"`); err != nil {
			t.Errorf("the watcher saw no profile change: %v", err)
		}
		nodes := l.asOK(t, l.member, "nodes")
		if !strings.Contains(nodes, "hysteria2") {
			t.Errorf("nodes: %s", nodes)
		}
	})

	t.Run("connect tun", func(t *testing.T) {
		out := l.asOK(t, l.member, "connect", "--tun")
		if !strings.Contains(out, "connected through") {
			t.Errorf("connect: %s", out)
		}
		st := l.status(t)
		if st.State != "running" || st.TUN == "" || st.Route == nil || st.Route.Mode != "tun" {
			t.Fatalf("status after connect: %+v", st)
		}
		body, err := l.curl()
		if err != nil || !strings.Contains(body, "service-lab-http") {
			t.Fatalf("traffic through the TUN: %v %s", err, body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := watch.WaitText(ctx, `"state":"running"`); err != nil {
			t.Errorf("the watcher did not see the connect: %v", err)
		}
		l.checkNoTCP(t, svc, st.Listen)
	})

	t.Run("stats and connections", func(t *testing.T) {
		hold := exec.Command("ip", "netns", "exec", l.cli, os.Args[0], "-test.run=^$")
		hold.Env = append(os.Environ(), helperEnv+"=hold")
		hold.Stderr = os.Stderr
		out, _ := hold.StdoutPipe()
		if err := hold.Start(); err != nil {
			t.Fatal(err)
		}
		defer hold.Process.Kill()
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if s := <-lines; s != "ok" {
			t.Fatalf("held connection: %q", s)
		}
		type conn struct {
			ID          uint64
			Destination string
			Up, Down    int64
		}
		var conns []conn
		var id uint64
		for range 20 {
			if err := json.Unmarshal([]byte(l.asOK(t, l.member, "connections", "--json")), &conns); err != nil {
				t.Fatal(err)
			}
			for _, c := range conns {
				if c.Destination == net.JoinHostPort(echoAddr, strconv.Itoa(echoPort)) && c.Up > 0 {
					id = c.ID
				}
			}
			if id != 0 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if id == 0 {
			t.Fatalf("the held connection is not listed: %+v", conns)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := watch.WaitOutput(ctx, regexpStats); err != nil {
			t.Errorf("no stats with traffic on the stream: %v", err)
		}
		l.asOK(t, l.member, "close", strconv.FormatUint(id, 10))
		// The service ended the flow: it is no longer in its table.
		for range 20 {
			if err := json.Unmarshal([]byte(l.asOK(t, l.member, "connections", "--json")), &conns); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(conns, func(c conn) bool { return c.ID == id }) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if slices.ContainsFunc(conns, func(c conn) bool { return c.ID == id }) {
			t.Errorf("connection %d still listed after close", id)
		}
		// The close reaches the app: its side of the TUN flow ends (the
		// netstack sends FIN, and RST to what the app sends after it).
		select {
		case s := <-lines:
			if !strings.HasPrefix(s, "closed:") {
				t.Errorf("held connection after close: %q", s)
			}
			t.Logf("held connection after close: %q", s)
		case <-time.After(3 * time.Second):
			t.Error("the app's side of the closed flow saw no close within 3 s")
		}
		if _, code := l.as(l.member, "close", strconv.FormatUint(id, 10)); code == 0 {
			t.Error("closing a closed connection succeeded")
		}
	})

	t.Run("bad input", func(t *testing.T) {
		c := l.client()
		for _, tc := range []struct {
			name, method, path, body string
			status                   int
			code                     string
		}{
			{"malformed", "POST", "/v1/connect", `{"mode":`, 400, "bad_request"},
			{"unknown field", "POST", "/v1/connect", `{"exec":"/bin/sh"}`, 400, "bad_request"},
			{"bad mode", "POST", "/v1/connect", `{"mode":"root"}`, 400, "bad_request"},
			{"oversized", "POST", "/v1/connect", `{"target":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "too_large"},
			{"version", "GET", "/v9/status", "", 404, "unsupported_version"},
			{"path", "GET", "/v1/nothing", "", 404, "not_found"},
			{"bad profile", "PUT", "/v1/profile", `{"profile":{"version":1,"subscriptions":[{"id":"x","url":"file:///etc/shadow"}],"routes":{},"settings":{"tun":{}}}}`, 400, "bad_request"},
		} {
			req, _ := http.NewRequest(tc.method, "http://skiff"+tc.path, strings.NewReader(tc.body))
			resp, err := c.Do(req)
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			var e struct{ Code string }
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if resp.StatusCode != tc.status || e.Code != tc.code {
				t.Errorf("%s: %d %q, want %d %q", tc.name, resp.StatusCode, e.Code, tc.status, tc.code)
			}
		}
		// A client that hangs up in the middle of a stream, and one that
		// sends half a request.
		for range 5 {
			conn, err := net.Dial("unix", l.socket)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "GET /v1/watch?stats=1 HTTP/1.1\r\nHost: skiff\r\n\r\n")
			bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			conn, _ = net.Dial("unix", l.socket)
			fmt.Fprintf(conn, "POST /v1/connect HTTP/1.1\r\nHost: skiff\r\nContent-Length: 100\r\n\r\n{\"mo")
			conn.Close()
		}
		if st := l.status(t); st.State != "running" {
			t.Errorf("state after the bad input: %+v", st)
		}
		if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
			t.Errorf("traffic after the bad input: %v %s", err, body)
		}
	})

	t.Run("client killed", func(t *testing.T) {
		watch.Kill()
		if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
			t.Errorf("traffic after kill -9 of the client: %v %s", err, body)
		}
		if st := l.status(t); st.State != "running" || st.TUN == "" {
			t.Errorf("a new client sees %+v", st)
		}
	})

	t.Run("window", func(t *testing.T) {
		l.asOK(t, l.member, "disconnect")
		l.testWindow(t)
	})

	t.Run("disconnect", func(t *testing.T) {
		l.asOK(t, l.member, "disconnect")
		if st := l.status(t); st.State != "stopped" {
			t.Errorf("after disconnect: %+v", st)
		}
		if after := l.routing(t); after != before {
			t.Errorf("routing after disconnect differs:\n--- before\n%s\n--- after\n%s", before, after)
		}
	})

	t.Run("service killed", func(t *testing.T) {
		l.asOK(t, l.member, "connect", "--tun")
		if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
			t.Fatalf("traffic: %v %s", err, body)
		}
		svc.Kill()
		if l.routing(t) == before {
			t.Log("the killed service left no change behind (nothing to restore)")
		}
		svc = l.startService(t)
		if after := l.routing(t); after != before {
			t.Errorf("routing after the restart differs:\n--- before\n%s\n--- after\n%s", before, after)
		}
		if st := l.status(t); st.State != "stopped" {
			t.Errorf("state after the restart: %+v", st)
		}
		// The profile survived in the state directory.
		if nodes := l.asOK(t, l.member, "nodes"); !strings.Contains(nodes, "hysteria2") {
			t.Errorf("nodes after the restart: %s", nodes)
		}
	})

	t.Run("connect at start", func(t *testing.T) {
		// The user asks to be reconnected at start; the service stops (a
		// reboot: routes restored), starts again and reconnects on its own.
		// (The previous subtest's service ended with it.)
		svc = l.startService(t)
		l.asOK(t, l.member, "connect", "--tun", "--at-start")
		if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
			t.Fatalf("traffic: %v %s", err, body)
		}
		svc.Stop()
		if after := l.routing(t); after != before {
			t.Errorf("routing after the service stopped differs:\n--- before\n%s\n--- after\n%s", before, after)
		}
		resumed := func(what string) {
			t.Helper()
			svc = l.startService(t)
			var st status
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if st = l.status(t); st.State == "running" && st.TUN != "" {
					break
				}
			}
			if st.State != "running" || st.TUN == "" {
				t.Fatalf("after %s the service did not reconnect: %+v\n%s", what, st, svc.Output())
			}
			if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
				t.Errorf("traffic after %s: %v %s", what, err, body)
			}
		}
		resumed("a stop and start")
		// A crash: routes restored first, then connected again.
		svc.Kill()
		resumed("kill -9 and a start")
		// The user's disconnect is remembered: the next start stays off.
		l.asOK(t, l.member, "disconnect")
		svc.Stop()
		svc = l.startService(t)
		time.Sleep(time.Second)
		if st := l.status(t); st.State != "stopped" {
			t.Errorf("after a disconnect and a restart: %+v", st)
		}
		if after := l.routing(t); after != before {
			t.Errorf("routing after disconnect and restart differs:\n--- before\n%s\n--- after\n%s", before, after)
		}
	})

	svc.Stop()
	if st := svc.ExitStatus(); st != "exit status 0" {
		t.Errorf("service ended with %s\n%s", st, svc.Output())
	}
	if out := svc.Output(); strings.Contains(out, hy2Pass) || strings.Contains(out, "SECRET") {
		t.Error("the service's log shows a secret")
	}
	if _, err := os.Stat(l.socket); !os.IsNotExist(err) {
		t.Errorf("socket left after stop: %v", err)
	}
	if after := l.routing(t); after != before {
		t.Errorf("routing after stop differs:\n--- before\n%s\n--- after\n%s", before, after)
	}
}

// checkNoTCP fails unless the service's only TCP listener is the local
// proxy at allowed (a loopback address; "" for none), in its namespace and
// in the test's.
func (l *lab) checkNoTCP(t *testing.T, svc *harness.Process, allowed string) {
	t.Helper()
	pid := fmt.Sprintf("pid=%d,", svc.Pid())
	for _, argv := range [][]string{{"ip", "netns", "exec", l.cli, "ss", "-ltnpH"}, {"ss", "-ltnpH"}} {
		for _, line := range strings.Split(run(t, argv...), "\n") {
			if !strings.Contains(line, pid) {
				continue
			}
			f := strings.Fields(line)
			if allowed == "" || len(f) < 4 || f[3] != allowed || !strings.HasPrefix(allowed, "127.") || argv[0] == "ss" {
				t.Errorf("service listens on TCP: %s", line)
			}
		}
	}
}

var regexpStats = mustRegexp(`"kind":"stats".*"Connections":[1-9]`)

func mustRegexp(s string) *regexp.Regexp { return regexp.MustCompile(s) }
