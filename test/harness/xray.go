package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Xray-core is a second server implementation the e2e tests run against
// (the one most providers run besides sing-box). It is MPL-2.0: the
// harness builds its main package from the module proxy into test/bin and
// runs it; no module of ours imports or links it.
const (
	XrayModuleVersion = "v1.260327.0" // github.com/xtls/xray-core
	XrayVersion       = "26.3.27"     // what `xray version` reports for it
)

var xrayOnce = sync.OnceValues(buildXray)

// XrayBinary installs Xray XrayModuleVersion into test/bin/xray (once per
// process, and only when the binary there is not already that version) and
// returns its path.
func XrayBinary() (string, error) { return xrayOnce() }

// NeedXray is XrayBinary for tests: it fails t when the build fails.
func NeedXray(t testing.TB) string {
	t.Helper()
	p, err := XrayBinary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func buildXray() (string, error) {
	return buildPeer("xray", xrayIsCurrent, func(bin, out string) error {
		// go install names the binary after the package's folder (main): it
		// goes into a folder of its own first, then becomes test/bin/xray.
		tmp, err := os.MkdirTemp(bin, ".xray-build-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		fmt.Fprintf(os.Stderr, "harness: installing Xray %s into %s (a few minutes the first time)\n", XrayModuleVersion, bin)
		cmd := exec.Command("go", "install", "-buildvcs=false", "github.com/xtls/xray-core/main@"+XrayModuleVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "CGO_ENABLED=0")
		cmd.Dir = tmp // outside any module
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("harness: go install xray-core %s: %v\n%s", XrayModuleVersion, err, b)
		}
		return os.Rename(filepath.Join(tmp, "main"), out)
	})
}

// xrayIsCurrent reports whether path is an Xray of XrayVersion.
func xrayIsCurrent(path string) bool {
	b, err := exec.Command(path, "version").Output()
	if err != nil {
		return false
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	return strings.HasPrefix(string(first), "Xray "+XrayVersion+" ")
}

// XrayKinds are the server kinds XrayConfig can serve.
var XrayKinds = []Kind{VLESSWS, VLESSTCP, VLESSVision, VLESSReality, VLESSRealityVision,
	VMessWS, VMessTCP, TrojanTLS, TrojanWS, Shadowsocks, Hysteria2}

// XrayConfig returns an Xray configuration serving s, as ServerConfig
// does for sing-box: the same Server gives the link, so the two cannot
// drift apart.
func (s *Server) XrayConfig() ([]byte, error) {
	stream := map[string]any{"network": "tcp"}
	tls := map[string]any{
		"serverName":   "localhost",
		"certificates": []any{map[string]any{"certificateFile": s.Cert.CertFile, "keyFile": s.Cert.KeyFile}},
	}
	if s.Kind != VMessTCP && s.Kind != Shadowsocks {
		stream["security"] = "tls"
		stream["tlsSettings"] = tls
	}
	if s.Kind.usesWS() {
		ws := map[string]any{"path": s.Path}
		stream["network"] = "ws"
		stream["wsSettings"] = ws
	}
	if s.Kind.reality() {
		delete(stream, "tlsSettings")
		stream["security"] = "reality"
		stream["realitySettings"] = map[string]any{
			"dest":        s.Site.Addr(),
			"serverNames": []string{"localhost"},
			"privateKey":  s.Reality.Private,
			"shortIds":    []string{s.ShortID},
		}
	}
	in := map[string]any{"tag": "in", "listen": "127.0.0.1", "port": s.Port, "streamSettings": stream}
	switch s.Kind {
	case VLESSWS, VLESSTCP, VLESSVision, VLESSReality, VLESSRealityVision:
		in["protocol"] = "vless"
		in["settings"] = map[string]any{"decryption": "none",
			"clients": []any{map[string]any{"id": s.UUID, "flow": s.Kind.flow()}}}
	case VMessWS, VMessTCP:
		in["protocol"] = "vmess"
		in["settings"] = map[string]any{"clients": []any{map[string]any{"id": s.UUID, "alterId": 0}}}
	case TrojanTLS, TrojanWS:
		in["protocol"] = "trojan"
		in["settings"] = map[string]any{"clients": []any{map[string]any{"password": s.Password}}}
	case Shadowsocks:
		if s.Plugin != "" || s.SSUserPSK != "" || s.SSUoT != 0 {
			return nil, fmt.Errorf("harness: xray: shadowsocks with a plugin, users or UoT is not set up")
		}
		in["protocol"] = "shadowsocks"
		in["settings"] = map[string]any{"method": s.Method, "password": s.Password, "network": "tcp,udp"}
	case Hysteria2:
		if s.ObfsPassword != "" {
			return nil, fmt.Errorf("harness: xray: hysteria2 with salamander is not set up")
		}
		in["protocol"] = "hysteria"
		in["settings"] = map[string]any{"version": 2, "clients": []any{map[string]any{"auth": s.Password}}}
		stream["network"] = "hysteria"
		stream["hysteriaSettings"] = map[string]any{"version": 2}
		tls["alpn"] = []string{"h3"}
	default:
		return nil, fmt.Errorf("harness: xray: server kind %q is not set up", s.Kind)
	}
	return xrayJSON(in, map[string]any{"protocol": "freedom", "tag": "direct"})
}

// XrayClientConfig returns an Xray configuration with a SOCKS5 inbound
// (UDP on) on 127.0.0.1:listenPort whose outbound reaches s: Xray as the
// client, to tell a server's own bug from one of Skiff's. Hysteria2 and
// Shadowsocks are set up.
func (s *Server) XrayClientConfig(listenPort int) ([]byte, error) {
	in := map[string]any{"tag": "socks", "listen": "127.0.0.1", "port": listenPort, "protocol": "socks",
		"settings": map[string]any{"udp": true, "ip": "127.0.0.1"}}
	switch s.Kind {
	case Hysteria2:
	case Shadowsocks:
		return xrayJSON(in, map[string]any{"tag": "proxy", "protocol": "shadowsocks",
			"settings": map[string]any{"servers": []any{map[string]any{
				"address": "127.0.0.1", "port": s.Port, "method": s.Method, "password": s.Password}}}})
	default:
		return nil, fmt.Errorf("harness: xray client for %q is not set up", s.Kind)
	}
	out := map[string]any{"tag": "proxy", "protocol": "hysteria",
		"settings": map[string]any{"version": 2, "address": "127.0.0.1", "port": s.Port},
		"streamSettings": map[string]any{"network": "hysteria", "security": "tls",
			"tlsSettings":      map[string]any{"serverName": "localhost", "pinnedPeerCertSha256": s.Cert.PinSHA256, "alpn": []string{"h3"}},
			"hysteriaSettings": map[string]any{"version": 2, "auth": s.Password}}}
	return xrayJSON(in, out)
}

func xrayJSON(in, out map[string]any) ([]byte, error) {
	cfg := map[string]any{
		"log":       map[string]any{"loglevel": "warning"},
		"inbounds":  []any{in},
		"outbounds": []any{out},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// Xray starts Xray with config for t, waits until it has started and
// stops it in t.Cleanup.
func Xray(t testing.TB, name string, config []byte) *Process {
	t.Helper()
	bin := NeedXray(t)
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	p := Start(t, name, bin, "run", "-c", path)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, " started"); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, p.Output())
	}
	return p
}

// UsesWS reports whether servers of kind k run over WebSocket, which
// carries no half-close.
func (k Kind) UsesWS() bool { return k.usesWS() }
