package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// xhttpCase is one XHTTP combination against Xray's server.
type xhttpCase struct {
	name string
	kind harness.Kind // VLESSTCP (TLS), VLESSReality, TrojanTLS or VMessTCP (no TLS: HTTP/1.1)
	mode string       // the link's mode; "" leaves it out (auto)
	alpn string       // the link's alpn; "http/1.1" gives HTTP/1.1, "h3" HTTP/3 (the server's too)
}

var xhttpCases = []xhttpCase{
	{"vless-tls-h2-packet-up", harness.VLESSTCP, "packet-up", ""},
	{"vless-tls-h2-stream-up", harness.VLESSTCP, "stream-up", ""},
	{"vless-tls-h2-stream-one", harness.VLESSTCP, "stream-one", ""},
	{"vless-tls-h2-auto", harness.VLESSTCP, "", ""},
	{"vless-tls-h1-packet-up", harness.VLESSTCP, "packet-up", "http/1.1"},
	{"vless-reality-auto", harness.VLESSReality, "", ""},
	{"vless-reality-stream-up", harness.VLESSReality, "stream-up", ""},
	{"vless-reality-packet-up", harness.VLESSReality, "packet-up", ""},
	{"trojan-tls-h2-stream-one", harness.TrojanTLS, "stream-one", ""},
	{"vmess-plain-h1-packet-up", harness.VMessTCP, "packet-up", ""},
	{"vless-tls-h3-packet-up", harness.VLESSTCP, "packet-up", "h3"},
	{"vless-tls-h3-stream-up", harness.VLESSTCP, "stream-up", "h3"},
	{"vless-tls-h3-stream-one", harness.VLESSTCP, "stream-one", "h3"},
}

// TestXHTTP runs Skiff's XHTTP client against Xray's XHTTP server (mode
// auto, so it accepts every mode): 16 MiB echoed both ways with a hash
// check, UDP over VLESS, and a restart of the server under the outbound.
func TestXHTTP(t *testing.T) {
	for _, tc := range xhttpCases {
		t.Run(tc.name, func(t *testing.T) { testXHTTP(t, tc) })
	}
}

func testXHTTP(t *testing.T, tc xhttpCase) {
	s := newServer(t, setup{kind: tc.kind})
	cfg := xrayXHTTP(t, s, "/xh", tc.alpn == "h3")
	start := func() *harness.Process {
		p := harness.Xray(t, "xray-xhttp", cfg)
		if tc.alpn == "h3" {
			return p // QUIC: no TCP port to wait for
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := harness.WaitTCP(ctx, s.Addr()); err != nil {
			t.Fatal(err)
		}
		return p
	}
	server := start()
	l := xhttpLink(t, s.Link(s.Trusting()), "/xh", tc.mode, tc.alpn)
	t.Logf("link %s", l)
	ob := linkOutbound(t, l, nil)
	echo := harness.TCPEcho(t)
	t.Run("tcp-echo-16MiB", func(t *testing.T) { echoThrough(t, ob, echo, 16<<20) })
	if strings.HasPrefix(tc.name, "vless") {
		t.Run("udp", func(t *testing.T) { udpThrough(t, ob, 1, 512, 1400, 3000) })
	}
	t.Run("server-restart", func(t *testing.T) {
		server.Stop()
		server = start()
		echoAfterRestart(t, ob, echo)
	})
}

// xrayXHTTP is s's Xray configuration with XHTTP (mode auto) at path,
// on HTTP/3 (QUIC) when h3.
func xrayXHTTP(t *testing.T, s *harness.Server, path string, h3 bool) []byte {
	t.Helper()
	b, err := s.XrayConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	st := cfg["inbounds"].([]any)[0].(map[string]any)["streamSettings"].(map[string]any)
	st["network"] = "xhttp"
	st["xhttpSettings"] = map[string]any{"path": path, "mode": "auto"}
	if tls, ok := st["tlsSettings"].(map[string]any); ok {
		tls["alpn"] = []string{"h2", "http/1.1"}
		if h3 {
			tls["alpn"] = []string{"h3"}
		}
	}
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	return b
}

// xhttpLink turns s's tcp link into an XHTTP one.
func xhttpLink(t *testing.T, l, path, mode, alpn string) string {
	t.Helper()
	if b64, ok := strings.CutPrefix(l, "vmess://"); ok {
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatal(err)
		}
		var j map[string]any
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatal(err)
		}
		j["net"], j["path"], j["type"] = "xhttp", path, mode
		if alpn != "" {
			j["alpn"] = alpn
		}
		raw, _ = json.Marshal(j)
		return "vmess://" + base64.StdEncoding.EncodeToString(raw)
	}
	u, err := url.Parse(l)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("type", "xhttp")
	q.Set("path", path)
	q.Del("headerType")
	if mode != "" {
		q.Set("mode", mode)
	}
	if alpn != "" {
		q.Set("alpn", alpn)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
