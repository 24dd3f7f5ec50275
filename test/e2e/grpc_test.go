package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/test/harness"
)

// transportCase is one protocol over gRPC or HTTPUpgrade against one server.
type transportCase struct {
	impl  serverImpl
	kind  harness.Kind
	tr    node.Transport
	multi bool // the server is asked for TunMulti (Xray serves both)
}

const (
	grpcService = "skiff.Tunnel"
	upgradePath = "/up"
)

var (
	gun     = node.Transport{Type: node.TransportGRPC, ServiceName: grpcService}
	multi   = node.Transport{Type: node.TransportGRPC, ServiceName: grpcService, MultiMode: true}
	upgrade = node.Transport{Type: node.TransportHTTPUpgrade, Path: upgradePath}
	// fastOpen is HTTPUpgrade with ?ed=N: the first bytes go with the request.
	fastOpen = node.Transport{Type: node.TransportHTTPUpgrade, Path: upgradePath, MaxEarlyData: 2048}
)

// transportCases: VLESS, Trojan and VMess over TLS with each transport,
// against sing-box (gun only: its gRPC server has no TunMulti) and Xray
// (gun and multi, and REALITY under gRPC). Fast open runs against Xray
// only: sing-box's server loses bytes that come before it took the
// connection over (see the udp case), which fast open always sends.
var transportCases = []transportCase{
	{impl: singBox, kind: harness.VLESSTCP, tr: gun},
	{impl: singBox, kind: harness.TrojanTLS, tr: gun},
	{impl: singBox, kind: harness.VMessTLS, tr: gun},
	{impl: singBox, kind: harness.VLESSTCP, tr: upgrade},
	{impl: singBox, kind: harness.TrojanTLS, tr: upgrade},
	{impl: singBox, kind: harness.VMessTLS, tr: upgrade},
	{impl: xray, kind: harness.VLESSTCP, tr: gun},
	{impl: xray, kind: harness.TrojanTLS, tr: multi},
	{impl: xray, kind: harness.VMessWS, tr: multi},
	{impl: xray, kind: harness.VLESSTCP, tr: multi},
	{impl: xray, kind: harness.VLESSReality, tr: gun},
	{impl: xray, kind: harness.VLESSReality, tr: multi},
	{impl: xray, kind: harness.VLESSTCP, tr: upgrade},
	{impl: xray, kind: harness.TrojanTLS, tr: upgrade},
	{impl: xray, kind: harness.VMessWS, tr: upgrade},
	{impl: xray, kind: harness.VLESSTCP, tr: fastOpen},
	{impl: xray, kind: harness.TrojanTLS, tr: fastOpen},
}

func (tc transportCase) name() string {
	tr := tc.tr.Type
	if tc.tr.MultiMode {
		tr += "-multi"
	}
	if tc.tr.MaxEarlyData > 0 {
		tr += "-fastopen"
	}
	return fmt.Sprintf("%s/%s/%s", tc.impl, tc.kind, tr)
}

// TestGRPCAndHTTPUpgrade runs Skiff's VLESS, Trojan and VMess clients
// over gRPC and HTTPUpgrade against sing-box and Xray: 16 MiB echoed
// both ways with a hash check, 8 flows at once (on gRPC they share the
// HTTP/2 connection), UDP, and a server restart (the dead connection is
// dropped and a new one dialled). The node goes through a share link
// and back first, so the link form is what reaches the server.
func TestGRPCAndHTTPUpgrade(t *testing.T) {
	for _, tc := range transportCases {
		t.Run(tc.name(), func(t *testing.T) { testTransport(t, tc) })
	}
}

func testTransport(t *testing.T, tc transportCase) {
	if tc.impl == singBox {
		harness.NeedSingBox(t)
	} else {
		harness.NeedXray(t)
	}
	s := newServer(t, setup{kind: tc.kind})
	cfg := transportServerConfig(t, tc, s)
	start := func() *harness.Process { return startWith(t, tc.impl, s, cfg) }
	server := start()
	ob := transportOutbound(t, s, tc.tr)
	echo := harness.TCPEcho(t)
	t.Run("tcp-echo-16MiB", func(t *testing.T) { echoThrough(t, ob, echo, 16<<20) })
	t.Run("parallel", func(t *testing.T) {
		parallelEcho(t, ob, echo, 8, 1<<20)
	})
	// Xray's VLESS UDP drops datagrams of several KiB: sizes both carry.
	t.Run("udp", func(t *testing.T) {
		if tc.impl == singBox && tc.tr.Type == node.TransportHTTPUpgrade {
			// sing-box flushes its 101, then hijacks the connection and
			// drops the hijack's reader (transport/v2rayhttpupgrade/
			// server.go), so a first byte net/http's background read took
			// in between is lost and the flow refused ("unknown version",
			// "bad request"). On loopback the client's first bytes come
			// back within that window (a UDP session writes at once: most
			// runs lost one); over a network a round trip is far longer.
			// The first session may fail so; a second must not.
			if err := udpOnce(ob, 1, 512, 1400, 3000); err != nil {
				t.Logf("first UDP session (sing-box's upgrade race): %v", err)
			} else {
				return
			}
		}
		udpThrough(t, ob, 1, 512, 1400, 3000)
	})
	t.Run("server-restart", func(t *testing.T) {
		server.Stop()
		server = start()
		echoAfterRestart(t, ob, echo)
		echoThrough(t, ob, echo, 1<<20)
	})
	if tc.impl == singBox && tc.tr.Type == node.TransportGRPC {
		// sing-box answers 404 to TunMulti: the error says so.
		t.Run("multi-refused", func(t *testing.T) {
			ob := transportOutbound(t, s, multi)
			err := echoOnceThrough(ob, echo, 1024)
			if err == nil || !strings.Contains(err.Error(), "answered 404") {
				t.Fatalf("TunMulti against sing-box: %v, want the 404 named", err)
			}
		})
	}
	t.Run("wrong-service", func(t *testing.T) {
		tr := tc.tr
		if tr.Type == node.TransportGRPC {
			tr.ServiceName = "other"
		} else {
			tr.Path = "/other"
		}
		ob := transportOutbound(t, s, tr)
		if err := echoOnceThrough(ob, echo, 1024); err == nil {
			t.Fatal("a wrong service name or path passed")
		} else {
			t.Logf("refused as: %v", err)
		}
	})
}

// transportOutbound is Skiff's outbound for s's link with transport tr,
// after a round trip through the share link form.
func transportOutbound(t *testing.T, s *harness.Server, tr node.Transport) outbound.Outbound {
	t.Helper()
	n, err := link.Parse(s.Link(s.Trusting()))
	if err != nil {
		t.Fatal(err)
	}
	n.Transport = &tr
	l, err := link.Format(n)
	if err != nil {
		t.Fatal(err)
	}
	back, err := link.Parse(l)
	if err != nil {
		t.Fatalf("%s: %v", l, err)
	}
	if got := *back.Transport; got.Type != tr.Type || got.ServiceName != tr.ServiceName || got.MultiMode != tr.MultiMode || got.Path != tr.Path || got.MaxEarlyData != tr.MaxEarlyData {
		t.Fatalf("link %s gives transport %+v, want %+v", l, got, tr)
	}
	ob, err := protocol.NewOutbound(back, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ob.Close() })
	return ob
}

// transportServerConfig is s's configuration for tc's server with its
// transport.
func transportServerConfig(t *testing.T, tc transportCase, s *harness.Server) []byte {
	t.Helper()
	if tc.impl == singBox {
		return withInbound(t, s, func(in map[string]any) {
			if tc.tr.Type == node.TransportGRPC {
				in["transport"] = map[string]any{"type": "grpc", "service_name": grpcService}
			} else {
				in["transport"] = map[string]any{"type": "httpupgrade", "path": upgradePath}
			}
		})
	}
	b, err := s.XrayConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	stream := cfg["inbounds"].([]any)[0].(map[string]any)["streamSettings"].(map[string]any)
	delete(stream, "wsSettings")
	if tc.tr.Type == node.TransportGRPC {
		stream["network"] = "grpc"
		stream["grpcSettings"] = map[string]any{"serviceName": grpcService}
	} else {
		stream["network"] = "httpupgrade"
		stream["httpupgradeSettings"] = map[string]any{"path": upgradePath}
	}
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	return b
}

// startWith starts impl with cfg serving s and waits for its port.
func startWith(t *testing.T, impl serverImpl, s *harness.Server, cfg []byte) *harness.Process {
	t.Helper()
	if impl == singBox {
		return startConfig(t, s, cfg)
	}
	p := harness.Xray(t, "xray-server", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := harness.WaitTCP(ctx, s.Addr()); err != nil {
		t.Fatal(err)
	}
	return p
}

// udpOnce sends one datagram of each size through ob to a UDP echo and
// wants each back, as an error.
func udpOnce(ob outbound.Outbound, sizes ...int) error {
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := ln.ReadFrom(buf)
			if err != nil {
				return
			}
			ln.WriteTo(buf[:n], from)
		}
	}()
	dst, err := flow.ParseAddr(ln.LocalAddr().String())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pc, err := ob.ListenPacket(ctx, dst)
	if err != nil {
		return err
	}
	defer pc.Close()
	pc.SetDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 65535)
	for _, n := range sizes {
		p := bytes.Repeat([]byte{byte(n)}, n)
		if _, err := pc.WriteTo(p, dst); err != nil {
			return err
		}
		m, _, err := pc.ReadFrom(got)
		if err != nil {
			return err
		}
		if !bytes.Equal(got[:m], p) {
			return fmt.Errorf("%d-byte datagram came back as %d bytes", n, m)
		}
	}
	return nil
}
