package harness

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Kind names a server setup the tests run.
type Kind string

// Server setups.
const (
	Hysteria2 Kind = "hysteria2"  // Hysteria2 over QUIC (optionally Salamander)
	VLESSWS   Kind = "vless-ws"   // VLESS over WebSocket over TLS
	VLESSTCP  Kind = "vless-tcp"  // VLESS over TLS over TCP
	VLESSGRPC Kind = "vless-grpc" // VLESS over gRPC (gun, service GRPCService) over TLS
	TrojanTLS Kind = "trojan-tls" // Trojan over TLS over TCP
	TrojanWS  Kind = "trojan-ws"  // Trojan over WebSocket over TLS
	VMessTCP  Kind = "vmess-tcp"  // VMess over plain TCP
	VMessTLS  Kind = "vmess-tls"  // VMess over TLS over TCP
	VMessWS   Kind = "vmess-ws"   // VMess over WebSocket over TLS
	VMessH2   Kind = "vmess-h2"   // VMess over HTTP/2 (the V2Ray http transport) over TLS
	TUIC      Kind = "tuic"       // TUIC v5 over QUIC
	AnyTLS    Kind = "anytls"     // AnyTLS over TLS over TCP

	VLESSVision        Kind = "vless-tcp-vision"     // VLESS over TLS over TCP with flow xtls-rprx-vision
	VLESSReality       Kind = "vless-reality"        // VLESS over REALITY over TCP
	VLESSRealityVision Kind = "vless-reality-vision" // the same with flow xtls-rprx-vision
)

// GRPCService is the gRPC service name of VLESSGRPC servers.
const GRPCService = "skiff.Tunnel"

// reality reports whether servers of kind k run REALITY.
func (k Kind) reality() bool { return k == VLESSReality || k == VLESSRealityVision }

// flow is the VLESS flow of kind k's user.
func (k Kind) flow() string {
	if k == VLESSRealityVision || k == VLESSVision {
		return "xtls-rprx-vision"
	}
	return ""
}

// usesWS reports whether servers of kind k run over WebSocket.
func (k Kind) usesWS() bool { return k == VLESSWS || k == TrojanWS || k == VMessWS }

// Server describes one sing-box server and the credentials a client needs
// for it. The same value produces the server's configuration, a skiff share
// link and a sing-box client outbound, so they cannot drift apart.
type Server struct {
	Kind Kind
	Port int   // loopback port (UDP for Hysteria2, TCP otherwise)
	Cert *Cert // the server's certificate

	Password     string // Hysteria2 user password
	ObfsPassword string // Hysteria2 Salamander password; empty: no obfuscation

	UUID string // VLESS and VMess user
	// Security is the VMess body cipher the clients ask for ("auto",
	// "aes-128-gcm", "chacha20-poly1305", "none"); empty: auto.
	Security  string
	Path      string // WebSocket path, e.g. "/ws"
	EarlyData int    // WebSocket max_early_data, read from Sec-WebSocket-Protocol; 0: none

	// Shadowsocks: Method, Password (the server's PSK or password),
	// SSUserPSK (a user's PSK on a multi-user server; clients then use
	// Password:SSUserPSK), Plugin (Plugin* constants) and the port sing-box
	// listens on behind the plugin.
	Method          string
	SSUserPSK       string
	Plugin          string
	PluginInnerPort int
	// SSUoT is the version (1 or 2) of sing-box's UDP over TCP that links
	// and client outbounds ask for; the server then serves TCP only, so
	// that UDP cannot go as Shadowsocks UDP. 0: none.
	SSUoT int
	// LinkHost, when set, is the server's address in links instead of
	// 127.0.0.1 (a server in another network namespace).
	LinkHost string

	// NoTLS makes a VLESS server speak without TLS, for tests that put a
	// TLS-terminating recorder in front of it. Links still say
	// security=tls.
	NoTLS bool

	// TUIC: UUID and Password are the user; UDPRelayMode ("native",
	// "quic"; empty: native) and ZeroRTT go in links and client outbounds
	// (the server accepts 0-RTT when ZeroRTT is set).
	UDPRelayMode string
	ZeroRTT      bool
	// DisableSNI: TUIC clients send no server name (disable_sni); the
	// server's single certificate answers anyway.
	DisableSNI bool
	// REALITY: the key pair, the short id (hex), and the TLS site whose
	// handshake the server borrows (the caller starts and stops it).
	Reality RealityKeys
	ShortID string
	Site    *TLSSite

	// LogLevel is the server's sing-box log level; empty: info.
	LogLevel string

	// Fingerprint is the uTLS fingerprint links ask for (fp=); empty: none
	// (REALITY links then say chrome).
	Fingerprint string
}

// Name returns the server's name, the fragment of its links.
func (s *Server) Name() string { return "test-" + string(s.Kind) }

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// linkAddr is the server's address as links give it: LinkHost or
// 127.0.0.1, and the port.
func (s *Server) linkAddr() string {
	if s.LinkHost != "" {
		return net.JoinHostPort(s.LinkHost, strconv.Itoa(s.Port))
	}
	return s.Addr()
}

// ServerConfig returns the sing-box configuration of the server.
func (s *Server) ServerConfig() ([]byte, error) {
	tls := map[string]any{
		"enabled":          true,
		"server_name":      "localhost",
		"certificate_path": s.Cert.CertFile,
		"key_path":         s.Cert.KeyFile,
	}
	in := map[string]any{"tag": "in", "listen": "127.0.0.1", "listen_port": s.Port}
	if (!s.NoTLS && s.Kind != VMessTCP && s.Kind != Shadowsocks) || s.Kind == Hysteria2 || s.Kind == TUIC {
		in["tls"] = tls
	}
	if s.Kind.usesWS() {
		in["transport"] = s.wsTransport()
	}
	if s.Kind.reality() {
		s.realityTLS(tls)
	}
	if s.Kind == VMessH2 {
		in["transport"] = map[string]any{"type": "http", "path": "/h2"}
		tls["alpn"] = []string{"h2"}
	}
	if s.Kind == VLESSGRPC {
		in["transport"] = map[string]any{"type": "grpc", "service_name": GRPCService}
	}
	switch s.Kind {
	case Hysteria2:
		in["type"] = "hysteria2"
		in["users"] = []map[string]any{{"name": "test", "password": s.Password}}
		if s.ObfsPassword != "" {
			in["obfs"] = map[string]any{"type": "salamander", "password": s.ObfsPassword}
		}
		tls["alpn"] = []string{"h3"}
	case HysteriaV1:
		s.hysteriaV1Inbound(in, tls)
	case TUIC:
		in["type"] = "tuic"
		in["users"] = []map[string]any{{"name": "test", "uuid": s.UUID, "password": s.Password}}
		in["zero_rtt_handshake"] = s.ZeroRTT
		tls["alpn"] = []string{"h3"}
	case AnyTLS:
		in["type"] = "anytls"
		in["users"] = []map[string]any{{"name": "test", "password": s.Password}}
	case VLESSWS, VLESSTCP, VLESSGRPC, VLESSVision, VLESSReality, VLESSRealityVision:
		in["type"] = "vless"
		in["users"] = []map[string]any{{"name": "test", "uuid": s.UUID, "flow": s.Kind.flow()}}
	case Shadowsocks:
		s.ssInbound(in)
	case TrojanTLS, TrojanWS:
		in["type"] = "trojan"
		in["users"] = []map[string]any{{"name": "test", "password": s.Password}}
	case VMessTCP, VMessTLS, VMessWS, VMessH2:
		in["type"] = "vmess"
		in["users"] = []map[string]any{{"name": "test", "uuid": s.UUID, "alterId": 0}}
	default:
		return nil, fmt.Errorf("harness: unknown server kind %q", s.Kind)
	}
	level := "info"
	if s.LogLevel != "" {
		level = s.LogLevel
	}
	cfg := map[string]any{
		"log":       map[string]any{"level": level, "timestamp": true},
		"inbounds":  []any{in},
		"outbounds": []any{map[string]any{"type": "direct", "tag": "direct"}},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

func (s *Server) wsTransport() map[string]any {
	ws := map[string]any{"type": "ws", "path": s.Path}
	if s.EarlyData > 0 {
		ws["max_early_data"] = s.EarlyData
		ws["early_data_header_name"] = "Sec-WebSocket-Protocol"
	}
	return ws
}

// ClientTLS is how a client link treats the server's certificate.
type ClientTLS struct {
	Insecure bool   // skip chain verification (insecure=1 / allowInsecure=1)
	Pin      string // hex SHA-256 of the certificate to pin; "" none
}

// Trusting returns the ClientTLS under which a client accepts the test
// certificate: Hysteria2 links pin it, VLESS links skip verification.
func (s *Server) Trusting() ClientTLS {
	if s.Kind == Hysteria2 || s.Kind == TUIC || s.Kind == HysteriaV1 {
		return ClientTLS{Insecure: true, Pin: s.Cert.PinSHA256}
	}
	return ClientTLS{Insecure: true}
}

// Link returns a share link for the server as a skiff user would paste it.
func (s *Server) Link(tls ClientTLS) string {
	q := url.Values{}
	q.Set("sni", "localhost")
	switch s.Kind {
	case Hysteria2:
		if s.ObfsPassword != "" {
			q.Set("obfs", "salamander")
			q.Set("obfs-password", s.ObfsPassword)
		}
		if tls.Insecure {
			q.Set("insecure", "1")
		}
		if tls.Pin != "" {
			q.Set("pinSHA256", tls.Pin)
		}
		u := url.URL{Scheme: "hysteria2", User: url.User(s.Password), Host: s.linkAddr(), Path: "/", RawQuery: q.Encode(), Fragment: s.Name()}
		return u.String()
	case HysteriaV1:
		return s.HysteriaV1Link(tls, s.Password)
	case TUIC:
		q.Set("alpn", "h3")
		q.Set("congestion_control", "cubic")
		if s.UDPRelayMode != "" {
			q.Set("udp_relay_mode", s.UDPRelayMode)
		}
		if s.ZeroRTT {
			q.Set("reduce_rtt", "1")
		}
		if s.DisableSNI {
			q.Set("disable_sni", "1")
		}
		if tls.Insecure {
			q.Set("allow_insecure", "1")
		}
		if tls.Pin != "" {
			q.Set("pinSHA256", tls.Pin)
		}
		u := url.URL{Scheme: "tuic", User: url.UserPassword(s.UUID, s.Password), Host: s.linkAddr(), RawQuery: q.Encode(), Fragment: s.Name()}
		return u.String()
	case AnyTLS:
		if tls.Insecure {
			q.Set("insecure", "1")
		}
		if tls.Pin != "" {
			q.Set("pinSHA256", tls.Pin)
		}
		u := url.URL{Scheme: "anytls", User: url.User(s.Password), Host: s.linkAddr(), Path: "/", RawQuery: q.Encode(), Fragment: s.Name()}
		return u.String()
	case VMessTCP, VMessTLS, VMessWS, VMessH2:
		return s.vmessLink(tls)
	case TrojanTLS, TrojanWS:
		q.Set("security", "tls")
		if s.Fingerprint != "" {
			q.Set("fp", s.Fingerprint)
		}
		if tls.Insecure {
			q.Set("allowInsecure", "1")
		}
		if tls.Pin != "" {
			q.Set("pcs", tls.Pin)
		}
		if s.Kind == TrojanWS {
			q.Set("type", "ws")
			q.Set("host", "localhost")
			q.Set("path", s.wsPath())
		}
		u := url.URL{Scheme: "trojan", User: url.User(s.Password), Host: s.linkAddr(), RawQuery: q.Encode(), Fragment: s.Name()}
		return u.String()
	case Shadowsocks:
		return s.ssLink()
	default:
		q.Set("encryption", "none")
		q.Set("security", "tls")
		if tls.Insecure {
			q.Set("allowInsecure", "1")
		}
		if s.Fingerprint != "" {
			q.Set("fp", s.Fingerprint)
		}
		if s.Kind.reality() {
			q.Set("security", "reality")
			q.Del("allowInsecure")
			q.Set("pbk", s.Reality.Public)
			q.Set("sid", s.ShortID)
			if s.Fingerprint == "" {
				q.Set("fp", "chrome")
			}
		}
		if f := s.Kind.flow(); f != "" {
			q.Set("flow", f)
		}
		if s.Kind == VLESSWS {
			q.Set("type", "ws")
			q.Set("host", "localhost")
			q.Set("path", s.wsPath())
		} else if s.Kind == VLESSGRPC {
			q.Set("type", "grpc")
			q.Set("serviceName", GRPCService)
		} else {
			q.Set("type", "tcp")
		}
		u := url.URL{Scheme: "vless", User: url.User(s.UUID), Host: s.linkAddr(), RawQuery: q.Encode(), Fragment: s.Name()}
		return u.String()
	}
}

// wsPath is the WebSocket path of a link, with ?ed=N for early data.
func (s *Server) wsPath() string {
	if s.EarlyData > 0 {
		return s.Path + "?ed=" + strconv.Itoa(s.EarlyData)
	}
	return s.Path
}

// vmessLink returns the v2rayN vmess:// link (base64 of JSON) of s.
func (s *Server) vmessLink(t ClientTLS) string {
	host, _, _ := net.SplitHostPort(s.linkAddr())
	j := map[string]string{"v": "2", "ps": s.Name(), "add": host, "port": strconv.Itoa(s.Port), "id": s.UUID,
		"aid": "0", "scy": s.security(), "net": "tcp", "type": "none"}
	if s.Kind != VMessTCP {
		j["tls"], j["sni"] = "tls", "localhost"
		if s.Fingerprint != "" {
			j["fp"] = s.Fingerprint
		}
		if t.Insecure {
			j["allowInsecure"] = "1"
		}
		if t.Pin != "" {
			j["pinSHA256"] = t.Pin
		}
	}
	if s.Kind == VMessWS {
		j["net"], j["host"], j["path"] = "ws", "localhost", s.wsPath()
	}
	if s.Kind == VMessH2 {
		j["net"], j["host"], j["path"] = "h2", "localhost", "/h2"
	}
	b, _ := json.Marshal(j)
	return "vmess://" + base64.StdEncoding.EncodeToString(b)
}

func (s *Server) security() string {
	if s.Security == "" {
		return "auto"
	}
	return s.Security
}

// ClientOutbound returns a sing-box outbound that reaches the server, for
// sing-box used as the client. It trusts the test certificate.
func (s *Server) ClientOutbound() map[string]any {
	out := map[string]any{"tag": "proxy", "server": "127.0.0.1", "server_port": s.Port}
	tls := map[string]any{"enabled": true, "server_name": "localhost", "certificate_path": s.Cert.CertFile}
	if s.Kind != VMessTCP {
		out["tls"] = tls
	}
	if s.Kind.usesWS() {
		ws := s.wsTransport()
		ws["headers"] = map[string]any{"Host": "localhost"}
		out["transport"] = ws
	}
	if s.Kind == VMessH2 {
		out["transport"] = map[string]any{"type": "http", "host": []string{"localhost"}, "path": "/h2"}
	}
	if s.Kind == VLESSGRPC {
		out["transport"] = map[string]any{"type": "grpc", "service_name": GRPCService}
	}
	switch s.Kind {
	case Hysteria2:
		out["type"] = "hysteria2"
		out["password"] = s.Password
		if s.ObfsPassword != "" {
			out["obfs"] = map[string]any{"type": "salamander", "password": s.ObfsPassword}
		}
		tls["alpn"] = []string{"h3"}
	case HysteriaV1:
		s.hysteriaV1Outbound(out, tls)
	case AnyTLS:
		out["type"] = "anytls"
		out["password"] = s.Password
	case TUIC:
		out["type"] = "tuic"
		out["uuid"] = s.UUID
		out["password"] = s.Password
		out["congestion_control"] = "cubic"
		if s.UDPRelayMode != "" {
			out["udp_relay_mode"] = s.UDPRelayMode
		}
		out["zero_rtt_handshake"] = s.ZeroRTT
		tls["alpn"] = []string{"h3"}
		if s.DisableSNI {
			tls["disable_sni"] = true
		}
	case Shadowsocks:
		s.ssOutbound(out)
	case TrojanTLS, TrojanWS:
		out["type"] = "trojan"
		out["password"] = s.Password
	case VMessTCP, VMessTLS, VMessWS, VMessH2:
		out["type"] = "vmess"
		out["uuid"] = s.UUID
		out["security"] = s.security()
	default:
		out["type"] = "vless"
		out["uuid"] = s.UUID
		if f := s.Kind.flow(); f != "" {
			out["flow"] = f
		}
	}
	if s.Kind.reality() {
		delete(tls, "certificate_path")
		tls["utls"] = map[string]any{"enabled": true, "fingerprint": "chrome"}
		tls["reality"] = map[string]any{"enabled": true, "public_key": s.Reality.Public, "short_id": s.ShortID}
	}
	return out
}

// ClientConfig returns a sing-box configuration with a mixed (SOCKS5 and
// HTTP) inbound on 127.0.0.1:listenPort that sends everything to out.
func ClientConfig(listenPort int, out map[string]any) ([]byte, error) {
	cfg := map[string]any{
		"log": map[string]any{"level": "info", "timestamp": true},
		"inbounds": []any{map[string]any{
			"type": "mixed", "tag": "mixed", "listen": "127.0.0.1", "listen_port": listenPort,
		}},
		"outbounds": []any{out},
		"route":     map[string]any{"final": out["tag"]},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// StartSingBox writes config into dir and starts sing-box with it, waiting
// until it reports that it started. The caller owns the process.
func StartSingBox(ctx context.Context, bin, dir, name string, config []byte) (*Process, error) {
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		return nil, err
	}
	p, err := StartProcess(name, bin, "run", "--disable-color", "-c", path)
	if err != nil {
		return nil, err
	}
	if err := p.WaitText(ctx, "sing-box started"); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// SingBox starts sing-box with config for t, waits until it has started and
// stops it in t.Cleanup.
func SingBox(t testing.TB, name string, config []byte) *Process {
	t.Helper()
	bin := NeedSingBox(t)
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	p := Start(t, name, bin, "run", "--disable-color", "-c", path)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitText(ctx, "sing-box started"); err != nil {
		t.Fatal(err)
	}
	return p
}
