// Package node holds the typed description of one proxy server as the user
// got it from a share link or a subscription: where it is, which protocol it
// speaks, with which credentials, transport and TLS settings.
//
// It is plain data with validation and no network code, so that link
// parsing, subscriptions, the saved profile and the GUI can all use it
// without pulling in protocol implementations; the engine turns a Node into
// an outbound.Outbound.
package node

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Protocol names.
const (
	Hysteria2   = "hysteria2"
	VLESS       = "vless"
	VMess       = "vmess"
	Shadowsocks = "shadowsocks"
	Trojan      = "trojan"
	TUIC        = "tuic"
	AnyTLS      = "anytls"
	SSH         = "ssh"
	WireGuard   = "wireguard"
	Hysteria    = "hysteria" // Hysteria v1
)

// Node is one server. Exactly one of the protocol fields is set, the one
// that Protocol names.
type Node struct {
	Name     string `json:"name"`
	Protocol string `json:"protocol"`
	Server   string `json:"server"` // host name or IP literal (no brackets)
	Port     uint16 `json:"port"`

	TLS       *TLS       `json:"tls,omitempty"`       // nil: no TLS layer (Hysteria2 and TUIC always use TLS; for them nil means defaults)
	Transport *Transport `json:"transport,omitempty"` // nil: plain TCP
	// Multiplex names the stream multiplexer a configuration turned on
	// (sing-box multiplex.protocol, Clash smux.protocol: "smux", "yamux",
	// "h2mux"); empty: none. The stream outbounds refuse a node with one.
	Multiplex string `json:"multiplex,omitempty"`
	// MultiplexOptions tunes Multiplex; nil: the defaults.
	MultiplexOptions *MultiplexOptions `json:"multiplexOptions,omitempty"`

	Hysteria2   *Hysteria2Options   `json:"hysteria2,omitempty"`
	VLESS       *VLESSOptions       `json:"vless,omitempty"`
	VMess       *VMessOptions       `json:"vmess,omitempty"`
	Shadowsocks *ShadowsocksOptions `json:"shadowsocks,omitempty"`
	Trojan      *TrojanOptions      `json:"trojan,omitempty"`
	TUIC        *TUICOptions        `json:"tuic,omitempty"`
	AnyTLS      *AnyTLSOptions      `json:"anytls,omitempty"`
	SSH         *SSHOptions         `json:"ssh,omitempty"`
	WireGuard   *WireGuardOptions   `json:"wireguard,omitempty"`
	Hysteria    *HysteriaOptions    `json:"hysteria,omitempty"`
}

// TLS is the TLS layer's settings.
type TLS struct {
	SNI         string   `json:"sni,omitempty"`         // server name to send and verify; empty: Server when it is a name
	ALPN        []string `json:"alpn,omitempty"`        // empty: the protocol's default
	Insecure    bool     `json:"insecure,omitempty"`    // skip certificate verification: only when the user's link asks for it
	PinSHA256   string   `json:"pinSHA256,omitempty"`   // hex SHA-256 of the leaf certificate (DER); checked even when Insecure
	Fingerprint string   `json:"fingerprint,omitempty"` // uTLS ClientHello fingerprint name ("chrome", …); empty: Go's own
	Reality     *Reality `json:"reality,omitempty"`
	// NoSNI sends no server name in the ClientHello (TUIC disable_sni,
	// sing-box tls.disable_sni, Clash disable-sni); the certificate is
	// still verified against SNI (or Server).
	NoSNI bool `json:"noSNI,omitempty"`
	// ECH is Encrypted Client Hello; nil: none. A node with it is dialled
	// with ECH or not at all (tlsconf), never in clear.
	ECH *ECH `json:"ech,omitempty"`
}

// ECH is Encrypted Client Hello's settings: the real server name travels
// encrypted in an inner ClientHello, the outer one names the config's
// public name.
type ECH struct {
	// Config is the ECHConfigList (the link's ech=, Clash
	// ech-opts.config, sing-box tls.ech.config). Empty: it is looked up
	// in the DNS HTTPS record of QueryServerName (else the SNI), through
	// DNS when that is set.
	Config []byte `json:"config,omitempty"`
	// DNS is the server to look the config up with, as Xray links spell
	// it ("https://1.1.1.1/dns-query"); empty: the system's.
	DNS string `json:"dns,omitempty"`
	// QueryServerName is the name whose HTTPS record holds the config
	// (Clash query-server-name, sing-box query_server_name, Xray's
	// "name+https://…"); empty: the SNI.
	QueryServerName string `json:"queryServerName,omitempty"`
}

// Reality is VLESS+REALITY's settings.
type Reality struct {
	PublicKey string `json:"publicKey"`
	ShortID   string `json:"shortID,omitempty"`
	SpiderX   string `json:"spiderX,omitempty"`
}

// Multiplexers (Node.Multiplex).
const (
	MultiplexSmux  = "smux"
	MultiplexYamux = "yamux"
	MultiplexH2    = "h2mux"
)

// MultiplexOptions is sing-box multiplex's (Clash smux's) settings besides
// the protocol. Zero values mean sing-box's defaults: without MaxStreams,
// up to 4 connections, each filled to 4 streams before the next opens
// (core/outbound/mux).
type MultiplexOptions struct {
	MaxConnections int  `json:"maxConnections,omitempty"` // sessions open at most
	MinStreams     int  `json:"minStreams,omitempty"`     // streams on a session before another is opened
	MaxStreams     int  `json:"maxStreams,omitempty"`     // streams a session carries at most (excludes MaxConnections/MinStreams)
	Padding        bool `json:"padding,omitempty"`        // sing-mux padding; a padding server refuses clients without it
}

// Transport types.
const (
	TransportTCP         = "tcp"
	TransportWS          = "ws"
	TransportGRPC        = "grpc"
	TransportHTTPUpgrade = "httpupgrade"
	TransportH2          = "h2"
)

// Transport is the layer between TLS and the protocol, for the stream
// protocols that have one (VLESS, VMess, Trojan).
type Transport struct {
	Type            string            `json:"type"`                      // one of the Transport* constants
	Path            string            `json:"path,omitempty"`            // ws/httpupgrade path, without the ?ed= query
	Host            string            `json:"host,omitempty"`            // HTTP Host header
	Headers         map[string]string `json:"headers,omitempty"`         // extra request headers
	MaxEarlyData    int               `json:"maxEarlyData,omitempty"`    // ws: bytes of the first write sent in the upgrade request (?ed=N); httpupgrade: > 0 sends the first write with the request (fast open)
	EarlyDataHeader string            `json:"earlyDataHeader,omitempty"` // ws: header carrying early data; empty: Sec-WebSocket-Protocol
	ServiceName     string            `json:"serviceName,omitempty"`     // grpc
	MultiMode       bool              `json:"multiMode,omitempty"`       // grpc: TunMulti (mode=multi) instead of Tun (gun)
	Authority       string            `json:"authority,omitempty"`       // grpc :authority; empty: the TLS server name
	HeaderType      string            `json:"headerType,omitempty"`      // tcp: "" (none) or "http" (HTTP/1.1 request header disguise with Host and Path); an outbound that cannot do it must refuse the node
	XHTTP           *XHTTP            `json:"xhttp,omitempty"`           // xhttp: mode and extra
}

// Hysteria2Options is Hysteria2's settings. TLS settings are in Node.TLS.
type Hysteria2Options struct {
	Auth  string `json:"auth"`
	Ports string `json:"ports,omitempty"` // port hopping: "443,5000-6000"; empty: Node.Port only
	// HopInterval is how often a connection to several Ports moves to
	// another of them; 0: the client's default (30 s). Share links have
	// no field for it; sing-box (hop_interval) and Clash (hop-interval)
	// configurations do.
	HopInterval  time.Duration `json:"hopInterval,omitempty"`
	Obfs         string        `json:"obfs,omitempty"`         // "" or "salamander"
	ObfsPassword string        `json:"obfsPassword,omitempty"` // salamander key
	UpMbps       int           `json:"upMbps,omitempty"`       // 0: unknown (the server's congestion control decides)
	DownMbps     int           `json:"downMbps,omitempty"`     // declared as Hysteria-CC-RX; 0: unknown
}

// VLESSOptions is VLESS's settings.
type VLESSOptions struct {
	UUID       string `json:"uuid"`
	Flow       string `json:"flow,omitempty"`       // "" or "xtls-rprx-vision"
	Encryption string `json:"encryption,omitempty"` // "none" (the only value defined)
}

// VMessOptions is VMess's settings.
type VMessOptions struct {
	UUID     string `json:"uuid"`
	AlterID  int    `json:"alterID,omitempty"`
	Security string `json:"security,omitempty"` // "auto", "aes-128-gcm", "chacha20-poly1305", "none", "zero"
	// GlobalPadding adds random padding to every chunk (sing-box
	// global_padding, Clash global-padding).
	GlobalPadding bool `json:"globalPadding,omitempty"`
	// AuthenticatedLength seals chunk lengths (sing-box
	// authenticated_length, Clash authenticated-length).
	AuthenticatedLength bool `json:"authenticatedLength,omitempty"`
	// PacketEncoding is how UDP is carried: "" (one stream per
	// destination), "xudp" or "packetaddr" (sing-box packet_encoding,
	// Clash packet-encoding).
	PacketEncoding string `json:"packetEncoding,omitempty"`
}

// ShadowsocksOptions is Shadowsocks's settings.
type ShadowsocksOptions struct {
	Method     string `json:"method"`
	Password   string `json:"password"`
	Plugin     string `json:"plugin,omitempty"`
	PluginOpts string `json:"pluginOpts,omitempty"`
	// UDPOverTCP is Clash's udp-over-tcp / sing-box's udp_over_tcp: UDP
	// carried inside a TCP stream instead of Shadowsocks UDP.
	UDPOverTCP bool `json:"udpOverTCP,omitempty"`
	// UDPOverTCPVersion is its version, 1 or 2 (Clash
	// udp-over-tcp-version, default 1; sing-box udp_over_tcp.version,
	// default 2); 0: 2.
	UDPOverTCPVersion int `json:"udpOverTCPVersion,omitempty"`
}

// TrojanOptions is Trojan's settings.
type TrojanOptions struct {
	Password string `json:"password"`
	// SSMethod is trojan-go's extra Shadowsocks AEAD layer (Clash
	// ss-opts), which Skiff does not have; empty: none.
	SSMethod string `json:"ssMethod,omitempty"`
}

// TUICOptions is TUIC v5's settings.
type TUICOptions struct {
	UUID              string `json:"uuid"`
	Password          string `json:"password"`
	CongestionControl string `json:"congestionControl,omitempty"` // "cubic", "new_reno", "bbr"
	UDPRelayMode      string `json:"udpRelayMode,omitempty"`      // "native" or "quic"
	// ZeroRTT is 0-RTT on resumed connections (sing-box
	// zero_rtt_handshake, Clash reduce-rtt).
	ZeroRTT bool `json:"zeroRTT,omitempty"`
	// Heartbeat is the Heartbeat command's interval; 0: the client's
	// default (10 s).
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// UDPOverStream is sing-box's udp_over_stream (UDP over TCP-like
	// streams), which Skiff does not have.
	UDPOverStream bool `json:"udpOverStream,omitempty"`
}

// AnyTLSOptions is AnyTLS's settings.
type AnyTLSOptions struct {
	Password string `json:"password"`
	// Idle-session cleanup (sing-box idle_session_check_interval,
	// idle_session_timeout, min_idle_session; Clash idle-session-…);
	// zero: the client's defaults.
	IdleSessionCheckInterval time.Duration `json:"idleSessionCheckInterval,omitempty"`
	IdleSessionTimeout       time.Duration `json:"idleSessionTimeout,omitempty"`
	MinIdleSession           int           `json:"minIdleSession,omitempty"`
}

// SSHOptions is an SSH server's settings (Clash type: ssh, sing-box ssh):
// streams go as direct-tcpip channels of one SSH connection.
type SSHOptions struct {
	User                 string `json:"user"`
	Password             string `json:"password,omitempty"`
	PrivateKey           string `json:"privateKey,omitempty"` // PEM (OpenSSH, PKCS#1/#8); never a file path
	PrivateKeyPassphrase string `json:"privateKeyPassphrase,omitempty"`
	// HostKeys pins the server's key: authorized_keys lines
	// ("ssh-ed25519 AAAA…"); the server must present one of them.
	HostKeys          []string `json:"hostKeys,omitempty"`
	HostKeyAlgorithms []string `json:"hostKeyAlgorithms,omitempty"`
	ClientVersion     string   `json:"clientVersion,omitempty"` // "SSH-2.0-…"; empty: the client's default
}

// Address returns "server:port" with brackets around an IPv6 literal.
func (n *Node) Address() string {
	return net.JoinHostPort(n.Server, strconv.Itoa(int(n.Port)))
}

// optionSet is one protocol and whether a node has its options.
type optionSet struct {
	protocol string
	set      bool
}

// optionSets lists every protocol with whether n has its option set.
func (n *Node) optionSets() []optionSet {
	return []optionSet{
		{Hysteria2, n.Hysteria2 != nil}, {VLESS, n.VLESS != nil}, {VMess, n.VMess != nil},
		{Shadowsocks, n.Shadowsocks != nil}, {Trojan, n.Trojan != nil}, {TUIC, n.TUIC != nil},
		{AnyTLS, n.AnyTLS != nil}, {SSH, n.SSH != nil}, {WireGuard, n.WireGuard != nil},
		{Hysteria, n.Hysteria != nil},
	}
}

// Validate checks the fields every node needs and those of its protocol.
// Errors name the field.
func (n *Node) Validate() error {
	if n.Server == "" {
		return errors.New("node: server: empty")
	}
	if n.Port == 0 {
		return errors.New("node: port: must be 1-65535")
	}
	set, known, has := 0, false, false
	for _, o := range n.optionSets() {
		if o.set {
			set++
		}
		if o.protocol == n.Protocol {
			known, has = true, o.set
		}
	}
	if set != 1 {
		return fmt.Errorf("node: %d protocol option sets, want exactly one", set)
	}
	if !known {
		return fmt.Errorf("node: protocol: unknown %q", n.Protocol)
	}
	if !has {
		return fmt.Errorf("node: %s: options missing", n.Protocol)
	}
	switch n.Protocol {
	case Hysteria2:
		if o := n.Hysteria2.Obfs; o != "" && o != "salamander" {
			return fmt.Errorf("node: obfs: unknown type %q", o)
		}
		if n.Hysteria2.Obfs == "salamander" && n.Hysteria2.ObfsPassword == "" {
			return errors.New("node: obfs-password: empty with salamander")
		}
	case VLESS:
		if n.VLESS.UUID == "" {
			return errors.New("node: uuid: empty")
		}
	case WireGuard:
		if err := n.WireGuard.validate(); err != nil {
			return err
		}
	case Hysteria:
		if err := n.Hysteria.validate(); err != nil {
			return err
		}
	}
	if n.Transport != nil {
		switch n.Transport.Type {
		case TransportTCP, TransportWS, TransportGRPC, TransportHTTPUpgrade, TransportH2, TransportXHTTP:
		default:
			return fmt.Errorf("node: transport: unknown type %q", n.Transport.Type)
		}
		if h := n.Transport.HeaderType; h != "" && (h != "http" || n.Transport.Type != TransportTCP) {
			return fmt.Errorf("node: transport: headerType %q with type %q", h, n.Transport.Type)
		}
	}
	return nil
}

// FailoverRank orders protocols for default failover, lowest first:
// Hysteria2 (fastest where UDP passes), then VLESS over WebSocket with TLS
// (where only TCP to 443 does), then other VLESS, then the rest.
func (n *Node) FailoverRank() int {
	switch {
	case n.Protocol == Hysteria2:
		return 0
	case n.Protocol == VLESS && n.Transport != nil && n.Transport.Type == TransportWS && n.TLS != nil:
		return 1
	case n.Protocol == VLESS:
		return 2
	}
	return 3
}
