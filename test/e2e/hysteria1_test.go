package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// hysteria1 is the kind name of the Hysteria v1 servers below; their
// configuration and links are built here, not in the harness, since only
// these tests use them.
const hysteria1 harness.Kind = "hysteria"

// Rates both ends declare, in Mbit/s. The server paces its sending with
// Brutal at the client's download rate.
const hy1Mbps = 1000

// newHysteria1 describes a sing-box Hysteria v1 server with a fresh auth
// string and, with obfs, an xplus key.
func newHysteria1(t *testing.T, obfs bool) *harness.Server {
	t.Helper()
	cert, err := harness.NewCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &harness.Server{Kind: hysteria1, Port: port, Cert: cert, Password: "auth-" + randomHex(12)}
	if obfs {
		s.ObfsPassword = "xplus-" + randomHex(12)
	}
	return s
}

// startHysteria1 starts sing-box's hysteria inbound for s.
func startHysteria1(t *testing.T, s *harness.Server) *harness.Process {
	t.Helper()
	in := map[string]any{
		"type": "hysteria", "tag": "in", "listen": "127.0.0.1", "listen_port": s.Port,
		"up_mbps": hy1Mbps, "down_mbps": hy1Mbps,
		"users": []map[string]any{{"name": "test", "auth_str": s.Password}},
		"tls": map[string]any{
			"enabled": true, "server_name": "localhost", "alpn": []string{"hysteria"},
			"certificate_path": s.Cert.CertFile, "key_path": s.Cert.KeyFile,
		},
	}
	if s.ObfsPassword != "" {
		in["obfs"] = s.ObfsPassword
	}
	cfg, err := json.MarshalIndent(map[string]any{
		"log":       map[string]any{"level": "info", "timestamp": true},
		"inbounds":  []any{in},
		"outbounds": []any{map[string]any{"type": "direct", "tag": "direct"}},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return harness.SingBox(t, "sing-box-hysteria", cfg)
}

// hysteria1Link is s's share link as v1.hysteria.network specifies it,
// with auth as the auth string; the certificate is pinned.
func hysteria1Link(s *harness.Server, auth string) string {
	q := url.Values{}
	q.Set("protocol", "udp")
	q.Set("auth", auth)
	q.Set("peer", "localhost")
	q.Set("insecure", "1")
	q.Set("pinSHA256", s.Cert.PinSHA256)
	q.Set("upmbps", fmt.Sprint(hy1Mbps))
	q.Set("downmbps", fmt.Sprint(hy1Mbps))
	if s.ObfsPassword != "" {
		q.Set("obfs", "xplus")
		q.Set("obfsParam", s.ObfsPassword)
	}
	u := url.URL{Scheme: "hysteria", Host: s.Addr(), RawQuery: q.Encode(), Fragment: s.Name()}
	return u.String()
}

// TestHysteria1 runs skiff's Hysteria v1 outbound against sing-box's
// hysteria inbound, without and with xplus: 16 MiB of TCP each way checked
// by SHA-256, UDP datagrams of every size from 1 to 3000 bytes each way
// (those over about 1200 bytes go in fragments), and a server restart
// (the UDP session asks the new connection for a new ID).
func TestHysteria1(t *testing.T) {
	skipIfSingBoxClient(t)
	for _, obfs := range []bool{false, true} {
		name := "plain"
		if obfs {
			name = "xplus"
		}
		t.Run(name, func(t *testing.T) {
			s := newHysteria1(t, obfs)
			srv := startHysteria1(t, s)
			_, proxy := startSkiff(t, s, hysteria1Link(s, s.Password))
			udpTarget := directionalUDP(t)
			tcpTarget := hashTCP(t)
			t.Run("tcp-up-16MiB", func(t *testing.T) { testTCPHash(t, proxy, tcpTarget, harness.Upload, 16<<20) })
			t.Run("tcp-down-16MiB", func(t *testing.T) { testTCPHash(t, proxy, tcpTarget, harness.Download, 16<<20) })
			t.Run("tcp-echo-1MiB", func(t *testing.T) { testTCPEcho(t, proxy, 1<<20) })
			t.Run("udp-echo", func(t *testing.T) { testUDPEcho(t, proxy) })
			t.Run("udp-up-1-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, harness.Upload, harness.SizeRange(1, 3000)) })
			t.Run("udp-down-1-3000", func(t *testing.T) { testUDPSizes(t, proxy, udpTarget, harness.Download, harness.SizeRange(1, 3000)) })
			t.Run("server-restart", func(t *testing.T) {
				srv.Stop()
				srv = startHysteria1(t, s)
				deadline := time.Now().Add(30 * time.Second)
				for {
					err := tryTCPHash(proxy, tcpTarget, harness.Download, 256<<10)
					if err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("no TCP through the restarted server in 30 s: %v", err)
					}
					time.Sleep(200 * time.Millisecond)
				}
				testUDPSizes(t, proxy, udpTarget, harness.Download, []int{1, 1400, 3000})
				testUDPSizes(t, proxy, udpTarget, harness.Upload, []int{1, 1400, 3000})
			})
		})
	}
}

// TestHysteria1WrongAuth: a wrong auth string is refused with a SOCKS
// failure reply, and skiff's log names the server and the rejection.
func TestHysteria1WrongAuth(t *testing.T) {
	skipIfSingBoxClient(t)
	s := newHysteria1(t, false)
	startHysteria1(t, s)
	wrong := *s
	wrong.Password = "wrong-" + randomHex(8)
	p, proxy := startSkiff(t, &wrong, hysteria1Link(s, wrong.Password))
	expectFailure(t, proxy, harness.TCPEcho(t), p, s, failure{steps: []string{"rejected"}})
}
