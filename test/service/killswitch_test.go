package service

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// setKillSwitch turns the profile's kill switch setting on or off through
// the API (GET, change, PUT with the revision) as the member, as the window
// would.
func (l *lab) setKillSwitch(t *testing.T, on bool) {
	t.Helper()
	if code, body := l.setTUN(t, l.member, map[string]any{"killSwitch": on}); code/100 != 2 {
		t.Fatalf("PUT profile with killSwitch=%v: %d %s", on, code, body)
	}
}

// blocked reports whether a direct HTTP request fails within 2 s (the
// kill switch drops the SYN: the request would wait for curl's time-out).
func (l *lab) blocked() (bool, string) {
	out, err := exec.Command("ip", "netns", "exec", l.cli, "curl", "-sS", "--max-time", "2", "--noproxy", "*",
		"http://"+echoAddr+"/").CombinedOutput()
	return err != nil, string(out)
}

func (l *lab) killSwitchTable() bool {
	return exec.Command("ip", "netns", "exec", l.cli, "nft", "list", "table", "inet", "skiff_killswitch").Run() == nil
}

// sinkCount counts, in the server namespace, the client's packets other
// than those to the Hysteria2 server (and neighbour discovery).
func (l *lab) sinkCount(t *testing.T, reset bool) int {
	t.Helper()
	if reset {
		script := fmt.Sprintf(`table inet ssink
delete table inet ssink
table inet ssink {
	counter other {}
	chain in {
		type filter hook prerouting priority -300; policy accept;
		ip saddr != %s accept
		udp dport %d accept
		counter name other
	}
}
`, cliAddr, hy2Port)
		cmd := exec.Command("ip", "netns", "exec", l.srv, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft: %v %s", err, out)
		}
		return 0
	}
	out, err := exec.Command("ip", "netns", "exec", l.srv, "nft", "-j", "list", "counter", "inet", "ssink", "other").Output()
	if err != nil {
		t.Fatalf("nft list counter: %v", err)
	}
	var doc struct {
		Nftables []struct {
			Counter *struct{ Packets int } `json:"counter"`
		} `json:"nftables"`
	}
	json.Unmarshal(out, &doc)
	for _, e := range doc.Nftables {
		if e.Counter != nil {
			return e.Counter.Packets
		}
	}
	t.Fatalf("no counter: %s", out)
	return 0
}

// TestServiceKillSwitch: the kill switch as the service owns it. Turned on
// in the profile, it is in force at once, before anything connects; TUN
// mode carries traffic through it; kill -9 of the service leaves the
// machine cut off (the sink in the server namespace counts nothing); the
// restarted service holds it before it connects (as at boot) and carries
// traffic again once connected; turning the setting off removes it and the
// direct path works.
func TestServiceKillSwitch(t *testing.T) {
	l := newLab(t)
	l.startPeers(t)
	svc := l.startService(t)
	t.Cleanup(func() {
		exec.Command("ip", "netns", "exec", l.cli, "nft", "delete", "table", "inet", "skiff_killswitch").Run()
	})
	l.asOK(t, l.member, "import", fmt.Sprintf("http://%s:%d/sub?token=SECRET", srvAddr, subPort))
	if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
		t.Fatalf("direct, before the kill switch: %v %s", err, body)
	}

	l.setKillSwitch(t, true)
	if !l.killSwitchTable() {
		t.Fatal("no kill switch table after the setting was turned on")
	}
	if ok, body := l.blocked(); !ok {
		t.Errorf("direct with the kill switch on and nothing connected: %s", body)
	}

	l.asOK(t, l.member, "connect", "--tun")
	if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
		t.Fatalf("through the TUN with the kill switch on: %v %s", err, body)
	}

	svc.Kill()
	l.sinkCount(t, true)
	if ok, body := l.blocked(); !ok {
		t.Errorf("after kill -9 of the service: %s", body)
	}
	if n := l.sinkCount(t, false); n != 0 {
		t.Errorf("after kill -9 of the service the sink counted %d packets", n)
	}
	t.Logf("after kill -9 of the service: the sink counted 0 packets, curl failed")

	svc = l.startService(t)
	if !l.killSwitchTable() {
		t.Error("the restarted service does not hold the kill switch before it connects")
	}
	if ok, body := l.blocked(); !ok {
		t.Errorf("the restarted service, not connected, lets traffic through: %s", body)
	}
	l.asOK(t, l.member, "connect", "--tun")
	if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
		t.Errorf("through the TUN after the restart: %v %s", err, body)
	}
	l.asOK(t, l.member, "disconnect")

	l.setKillSwitch(t, false)
	if l.killSwitchTable() {
		t.Error("the kill switch table is still there after the setting was turned off")
	}
	if body, err := l.curl(); err != nil || !strings.Contains(body, "service-lab-http") {
		t.Errorf("direct with the kill switch off: %v %s", err, body)
	}
	svc.Stop()
}
