package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

func testServer(t *testing.T, kind harness.Kind) *harness.Server {
	t.Helper()
	cert, err := harness.NewCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &harness.Server{Kind: kind, Port: 8443, Cert: cert, Password: "pw", UUID: "6f1c3e0a-9d2b-4c7e-8f5a-1b2c3d4e5f60", Path: "/ws"}
}

func TestServerLink(t *testing.T) {
	for _, kind := range []harness.Kind{harness.Hysteria2, harness.VLESSWS, harness.TrojanTLS} {
		t.Run(string(kind), func(t *testing.T) {
			s := testServer(t, kind)
			link, err := serverLink(s)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(link)
			if err != nil {
				t.Fatal(err)
			}
			if u.Host != "10.77.0.2:8443" {
				t.Errorf("host %q, want the server namespace's address", u.Host)
			}
			orig, _ := url.Parse(s.Link(s.Trusting()))
			if u.Scheme != orig.Scheme || u.RawQuery != orig.RawQuery || u.User.String() != orig.User.String() {
				t.Errorf("link %q changed more than the host of %q", link, orig)
			}
		})
	}
}

func TestSingBoxTUNConfig(t *testing.T) {
	for kind, outType := range map[harness.Kind]string{harness.Hysteria2: "hysteria2", harness.VLESSWS: "vless"} {
		t.Run(string(kind), func(t *testing.T) {
			raw, err := singBoxTUNConfig(testServer(t, kind))
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Inbounds []struct {
					Type         string   `json:"type"`
					Stack        string   `json:"stack"`
					AutoRoute    bool     `json:"auto_route"`
					MTU          int      `json:"mtu"`
					Name         string   `json:"interface_name"`
					RouteExclude []string `json:"route_exclude_address"`
				} `json:"inbounds"`
				Outbounds []struct {
					Type   string `json:"type"`
					Server string `json:"server"`
				} `json:"outbounds"`
				Route struct {
					AutoDetect bool   `json:"auto_detect_interface"`
					Final      string `json:"final"`
				} `json:"route"`
			}
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatal(err)
			}
			in := cfg.Inbounds[0]
			if in.Type != "tun" || in.Stack != "gvisor" || !in.AutoRoute || in.MTU != 9000 || in.Name != singBoxTUN {
				t.Errorf("tun inbound %+v", in)
			}
			if !slices.Contains(in.RouteExclude, serverIP4+"/32") {
				t.Errorf("route_exclude_address %v lacks the server", in.RouteExclude)
			}
			if cfg.Outbounds[0].Type != outType || cfg.Outbounds[0].Server != serverIP4 {
				t.Errorf("outbound %+v", cfg.Outbounds[0])
			}
			if !cfg.Route.AutoDetect || cfg.Route.Final != "proxy" {
				t.Errorf("route %+v", cfg.Route)
			}
		})
	}
}

func TestServerConfigListensEverywhere(t *testing.T) {
	raw, err := serverConfig(testServer(t, harness.Hysteria2))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Inbounds []struct {
			Listen string `json:"listen"`
			Port   int    `json:"listen_port"`
		} `json:"inbounds"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Inbounds) != 1 || cfg.Inbounds[0].Listen != "::" || cfg.Inbounds[0].Port != 8443 {
		t.Errorf("inbounds %+v", cfg.Inbounds)
	}
}

func TestSkiffHasTUN(t *testing.T) {
	tests := []struct {
		name, usage string
		want        bool
	}{
		{"with tun", "usage: skiff run --link URI [--tun]\n  -tun\n    \talso capture all traffic\n", true},
		{"without tun", "usage: skiff run --link URI [--listen 127.0.0.1:1080]\n", false},
		{"no run command", "skiff: unknown command \"run\"\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "skiff")
			script := "#!/bin/sh\ncat <<'EOF'\n" + tt.usage + "EOF\nexit 2\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			if got := skiffHasTUN(bin); got != tt.want {
				t.Errorf("skiffHasTUN = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestServerConfigReality checks that a REALITY server borrows the
// handshake of a TLS inbound on its own namespace's loopback, not of the
// site on the host's.
func TestServerConfigReality(t *testing.T) {
	cert, err := harness.NewCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := measure.Server(string(harness.VLESSReality), 8443, cert)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Site.Close()
	raw, err := serverConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Inbounds []struct {
			Type   string `json:"type"`
			Listen string `json:"listen"`
			Port   int    `json:"listen_port"`
			TLS    struct {
				Enabled bool `json:"enabled"`
				Reality struct {
					Handshake struct {
						Server string `json:"server"`
						Port   int    `json:"server_port"`
					} `json:"handshake"`
				} `json:"reality"`
			} `json:"tls"`
		} `json:"inbounds"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Inbounds) != 2 {
		t.Fatalf("%d inbounds, want the proxy and the site:\n%s", len(cfg.Inbounds), raw)
	}
	h, site := cfg.Inbounds[0].TLS.Reality.Handshake, cfg.Inbounds[1]
	if h.Server != "127.0.0.1" || h.Port != realitySitePort || site.Listen != "127.0.0.1" || site.Port != realitySitePort || !site.TLS.Enabled {
		t.Fatalf("handshake %+v, site inbound %+v", h, site)
	}
}
