package tun_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestSkiffRunTUN runs the product as a user would: `skiff run --tun` with a
// VLESS server (sing-box) in the server namespace. An app's connections in
// the client namespace go into the TUN, through the engine and the VLESS
// outbound (whose own socket bypasses the TUN by its fwmark) to sing-box,
// which connects to the echo server. On SIGTERM the routes are restored.
func TestSkiffRunTUN(t *testing.T) {
	l := newLab(t)
	skiff := harness.NeedSkiff(t)
	sb := harness.NeedSingBox(t)
	dir := t.TempDir()
	cert, err := harness.NewCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := &harness.Server{Kind: harness.VLESSTCP, Port: 8443, Cert: cert, UUID: "7b2c0d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e"}
	raw, err := srv.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(raw, &cfg)
	cfg["inbounds"].([]any)[0].(map[string]any)["listen"] = "::"
	raw, _ = json.Marshal(cfg)
	cfgFile := filepath.Join(dir, "server.json")
	os.WriteFile(cfgFile, raw, 0o600)
	sbCmd := exec.Command("ip", "netns", "exec", l.srv, sb, "run", "-c", cfgFile)
	sbCmd.Stderr = os.Stderr
	if err := sbCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sbCmd.Process.Kill(); sbCmd.Wait() })
	if out, err := l.client("wait " + srvAddr4 + ":8443"); err != nil {
		t.Fatalf("sing-box did not listen: %v %s", err, out)
	}
	link := strings.Replace(srv.Link(srv.Trusting()), "127.0.0.1:", srvAddr4+":", 1)

	before := l.routing()
	run := exec.Command("ip", "netns", "exec", l.cli, skiff, "run", "--link", link, "--tun", "--log-level", "debug")
	stderr, _ := run.StderrPipe()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Kill(); run.Wait() })
	up := make(chan bool, 1)
	var log strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "skiff: TUN ") {
				up <- true
			}
		}
		up <- false
	}()
	select {
	case ok := <-up:
		if !ok {
			run.Wait()
			<-logDone
			t.Fatalf("skiff run --tun did not come up:\n%s", log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("skiff run --tun did not come up in 30s")
	}

	for _, c := range []string{"tcp " + echoAddr4 + ":7001", "tcp [" + echoAddr6 + "]:7001", "udp " + echoAddr4 + ":7003", "udp [" + echoAddr6 + "]:7003"} {
		out, err := l.client(c)
		if err != nil || !strings.HasPrefix(out, "ok") {
			t.Errorf("%s through skiff --tun and VLESS: %v\n%s", c, err, out)
		}
	}
	out, err := l.client("bulk " + echoAddr4 + ":7002 1024")
	if err != nil {
		t.Errorf("bulk: %v %s", err, out)
	} else {
		t.Logf("TCP through skiff --tun, VLESS over TLS, sing-box: %s", out)
	}

	run.Process.Signal(syscall.SIGTERM)
	werr := run.Wait()
	<-logDone
	if werr != nil {
		t.Errorf("skiff run exited with %v", werr)
	}
	for _, dst := range []string{echoAddr4 + ":7001", "[" + echoAddr6 + "]:7001", echoAddr4 + ":7003", echoAddr4 + ":7002"} {
		if !strings.Contains(log.String(), "inbound=tun") || !strings.Contains(log.String(), "dst="+dst) {
			t.Errorf("skiff's log shows no flow from the TUN to %s: the traffic went around it", dst)
		}
	}
	if after := l.routing(); after != before {
		t.Errorf("routing differs after skiff run stopped\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if t.Failed() {
		t.Logf("skiff log:\n%s", log.String())
	}
}
