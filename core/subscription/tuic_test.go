package subscription

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

// TestTUICAndAnyTLSFields: the TUIC (0-RTT, heartbeat, relay mode) and
// AnyTLS (idle sessions) settings of Clash and sing-box documents reach the
// node, and what Skiff cannot do greys the node with its name.
func TestTUICAndAnyTLSFields(t *testing.T) {
	clash := `proxies:
  - {name: t, type: tuic, server: t.example.com, port: 443, uuid: ` + testUUID + `, password: p, reduce-rtt: true, heartbeat-interval: 5000, udp-relay-mode: quic, congestion-controller: cubic, disable-sni: true}
  - {name: a, type: anytls, server: a.example.com, port: 443, password: p, idle-session-check-interval: 20, idle-session-timeout: 40, min-idle-session: 1}
  - {name: s, type: tuic, server: s.example.com, port: 443, uuid: ` + testUUID + `, password: p, udp-over-stream: true}
`
	singbox := `{"outbounds": [
  {"type": "tuic", "tag": "t", "server": "t.example.com", "server_port": 443, "uuid": "` + testUUID + `", "password": "p", "zero_rtt_handshake": true, "heartbeat": "5s", "udp_relay_mode": "quic", "congestion_control": "cubic", "tls": {"enabled": true, "disable_sni": true}},
  {"type": "anytls", "tag": "a", "server": "a.example.com", "server_port": 443, "password": "p", "idle_session_check_interval": "20s", "idle_session_timeout": "40s", "min_idle_session": 1, "tls": {"enabled": true}},
  {"type": "tuic", "tag": "s", "server": "s.example.com", "server_port": 443, "uuid": "` + testUUID + `", "password": "p", "udp_over_stream": true, "tls": {"enabled": true}}
]}`
	wantTUIC := &node.TUICOptions{UUID: testUUID, Password: "p", CongestionControl: "cubic", UDPRelayMode: "quic", ZeroRTT: true, Heartbeat: 5 * time.Second}
	wantAny := &node.AnyTLSOptions{Password: "p", IdleSessionCheckInterval: 20 * time.Second, IdleSessionTimeout: 40 * time.Second, MinIdleSession: 1}
	for name, doc := range map[string]string{"clash": clash, "sing-box": singbox} {
		res, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Nodes) != 3 {
			t.Fatalf("%s: %d nodes (%v)", name, len(res.Nodes), res.Warnings)
		}
		if got := res.Nodes[0].TUIC; !reflect.DeepEqual(got, wantTUIC) {
			t.Errorf("%s: tuic %+v, want %+v", name, got, wantTUIC)
		}
		if tl := res.Nodes[0].TLS; tl == nil || !tl.NoSNI {
			t.Errorf("%s: tuic tls %+v, want disable_sni", name, tl)
		}
		if got := res.Nodes[1].AnyTLS; !reflect.DeepEqual(got, wantAny) {
			t.Errorf("%s: anytls %+v, want %+v", name, got, wantAny)
		}
		for _, n := range res.Nodes[:2] {
			if ok, why := protocol.Supported(n); !ok {
				t.Errorf("%s: %s not supported: %s", name, n.Name, why)
			}
		}
		if ok, why := protocol.Supported(res.Nodes[2]); ok || !strings.Contains(why, "udp_over_stream") {
			t.Errorf("%s: udp_over_stream node: supported %v %q", name, ok, why)
		}
	}
}
