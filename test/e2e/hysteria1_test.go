package e2e

import (
	"testing"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

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
	s := &harness.Server{Kind: harness.HysteriaV1, Port: port, Cert: cert, Password: "auth-" + randomHex(12)}
	if obfs {
		s.ObfsPassword = "xplus-" + randomHex(12)
	}
	return s
}

// startHysteria1 starts sing-box's hysteria inbound for s (UDP: nothing
// to wait for once sing-box says it started).
func startHysteria1(t *testing.T, s *harness.Server) *harness.Process {
	t.Helper()
	cfg, err := s.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	return harness.SingBox(t, "sing-box-hysteria", cfg)
}

// TestHysteria1 runs skiff's Hysteria v1 outbound against sing-box's
// hysteria inbound, without and with xplus: 16 MiB of TCP each way checked
// by SHA-256, UDP datagrams of every size from 1 to 3000 bytes each way
// (those over about 1200 bytes go in fragments), and a server restart
// (the UDP session asks the new connection for a new ID).
func TestHysteria1(t *testing.T) {
	for _, obfs := range []bool{false, true} {
		name := "plain"
		if obfs {
			name = "xplus"
		}
		t.Run(name, func(t *testing.T) {
			s := newHysteria1(t, obfs)
			srv := startHysteria1(t, s)
			proxy := startClient(t, s)
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
	p, proxy := startSkiff(t, &wrong, s.HysteriaV1Link(s.Trusting(), wrong.Password))
	expectFailure(t, proxy, harness.TCPEcho(t), p, s, failure{steps: []string{"rejected"}})
}
