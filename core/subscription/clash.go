package subscription

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"gopkg.in/yaml.v3"
)

// maxYAMLNodes bounds the YAML nodes a Clash document's proxies may expand
// to, aliases counted each time they are used: an alias bomb stops here
// instead of eating memory.
const maxYAMLNodes = 1 << 20

// maxYAMLDepth bounds nesting, aliases included.
const maxYAMLDepth = 64

// clashProxy is one entry of a Clash/mihomo proxies: list, with the fields
// Skiff maps (mihomo's names; unknown fields are ignored).
type clashProxy struct {
	Name   string    `yaml:"name"`
	Type   string    `yaml:"type"`
	Server string    `yaml:"server"`
	Port   clashPort `yaml:"port"`

	TLS               bool     `yaml:"tls"`
	SNI               string   `yaml:"sni"`
	ServerName        string   `yaml:"servername"`
	SkipCertVerify    bool     `yaml:"skip-cert-verify"`
	DisableSNI        bool     `yaml:"disable-sni"`
	ALPN              []string `yaml:"alpn"`
	Fingerprint       string   `yaml:"fingerprint"` // certificate SHA-256
	ClientFingerprint string   `yaml:"client-fingerprint"`
	RealityOpts       *struct {
		PublicKey string `yaml:"public-key"`
		ShortID   string `yaml:"short-id"`
	} `yaml:"reality-opts"`

	Network string `yaml:"network"`
	WSOpts  *struct {
		Path                string            `yaml:"path"`
		Headers             map[string]string `yaml:"headers"`
		MaxEarlyData        int               `yaml:"max-early-data"`
		EarlyDataHeaderName string            `yaml:"early-data-header-name"`
		V2rayHTTPUpgrade    bool              `yaml:"v2ray-http-upgrade"`
		HTTPUpgradeFastOpen bool              `yaml:"v2ray-http-upgrade-fast-open"`
	} `yaml:"ws-opts"`
	GRPCOpts *struct {
		ServiceName string `yaml:"grpc-service-name"`
	} `yaml:"grpc-opts"`
	H2Opts *struct {
		Host []string `yaml:"host"`
		Path string   `yaml:"path"`
	} `yaml:"h2-opts"`
	HTTPOpts *struct {
		Path    []string            `yaml:"path"`
		Headers map[string][]string `yaml:"headers"`
	} `yaml:"http-opts"`
	XHTTPOpts map[string]any `yaml:"xhttp-opts"`

	Password             string         `yaml:"password"`
	UUID                 string         `yaml:"uuid"`
	Flow                 string         `yaml:"flow"`
	Encryption           string         `yaml:"encryption"`
	AlterID              int            `yaml:"alterId"`
	Cipher               string         `yaml:"cipher"`
	Plugin               string         `yaml:"plugin"`
	PluginOpts           map[string]any `yaml:"plugin-opts"`
	UDPOverTCP           bool           `yaml:"udp-over-tcp"`
	UDPOverTCPVersion    int            `yaml:"udp-over-tcp-version"`
	Ports                string         `yaml:"ports"`
	HopInterval          string         `yaml:"hop-interval"` // seconds
	Obfs                 string         `yaml:"obfs"`
	ObfsPassword         string         `yaml:"obfs-password"`
	Up                   string         `yaml:"up"`
	Down                 string         `yaml:"down"`
	CongestionController string         `yaml:"congestion-controller"`
	UDPRelayMode         string         `yaml:"udp-relay-mode"`
	ReduceRTT            bool           `yaml:"reduce-rtt"`
	HeartbeatInterval    int            `yaml:"heartbeat-interval"` // milliseconds
	UDPOverStream        bool           `yaml:"udp-over-stream"`
	IdleSessionCheck     string         `yaml:"idle-session-check-interval"` // seconds
	IdleSessionTimeout   string         `yaml:"idle-session-timeout"`        // seconds
	MinIdleSession       int            `yaml:"min-idle-session"`
	Token                string         `yaml:"token"` // TUIC v4
	GlobalPadding        bool           `yaml:"global-padding"`
	AuthenticatedLength  bool           `yaml:"authenticated-length"`
	PacketEncoding       string         `yaml:"packet-encoding"`
	Smux                 *struct {
		Enabled        bool   `yaml:"enabled"`
		Protocol       string `yaml:"protocol"`
		MaxConnections int    `yaml:"max-connections"`
		MinStreams     int    `yaml:"min-streams"`
		MaxStreams     int    `yaml:"max-streams"`
		Padding        bool   `yaml:"padding"`
	} `yaml:"smux"`
	clashSSH `yaml:",inline"`
	ECHOpts  *clashECH `yaml:"ech-opts"`
	SSOpts   *struct {
		Enabled bool   `yaml:"enabled"`
		Method  string `yaml:"method"`
	} `yaml:"ss-opts"`

	raw           *yaml.Node // the entry, for protocols that decode their own fields (wireguard.go)
	clashHysteria `yaml:",inline"`
}

// clashPort accepts a port written as a number or a string.
type clashPort uint16

func (p *clashPort) UnmarshalYAML(n *yaml.Node) error {
	v, err := strconv.ParseUint(strings.TrimSpace(n.Value), 10, 16)
	if err != nil || v == 0 {
		return errors.New("port: must be 1-65535")
	}
	*p = clashPort(v)
	return nil
}

// parseClash maps a Clash/mihomo document's proxies: to nodes.
func parseClash(root *yaml.Node, res *Result) error {
	proxies := mapValue(root, "proxies")
	if proxies.Kind == yaml.AliasNode {
		proxies = proxies.Alias
	}
	if proxies == nil || proxies.Kind != yaml.SequenceNode {
		if proxies != nil && proxies.Tag == "!!null" {
			return nil
		}
		return fmt.Errorf("clash: line %d: proxies: not a list", lineOf(proxies))
	}
	budget := maxYAMLNodes
	if err := countYAML(proxies, &budget, 0); err != nil {
		return fmt.Errorf("clash: proxies: %w", err)
	}
	for _, entry := range proxies.Content {
		line := entry.Line
		cp := clashProxy{raw: entry}
		if err := entry.Decode(&cp); err != nil {
			reason := yamlReason(err)
			if name := mapValue(entry, "name"); name != nil && name.Kind == yaml.ScalarNode {
				reason = fmt.Sprintf("proxy %q: %s", name.Value, reason)
			}
			res.warn(line, reason)
			continue
		}
		n, err := cp.node()
		res.add(line, n, err)
	}
	parseClashGroups(root, res)
	return nil
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// yamlReason strips yaml.v3's prefix and the values it quotes.
func yamlReason(err error) string {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	// yaml.v3 quotes offending values in backticks; they may be secrets.
	var b strings.Builder
	in := false
	for _, r := range msg {
		if r == '`' {
			if !in {
				b.WriteString("(value)")
			}
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return "invalid entry: " + b.String()
}

// countYAML walks n, following aliases, and fails once more than *budget
// nodes or maxYAMLDepth levels have been seen.
func countYAML(n *yaml.Node, budget *int, depth int) error {
	if n == nil {
		return nil
	}
	if depth > maxYAMLDepth {
		return fmt.Errorf("nested deeper than %d levels", maxYAMLDepth)
	}
	*budget--
	if *budget < 0 {
		return fmt.Errorf("more than %d YAML nodes once aliases are expanded (an alias bomb?)", maxYAMLNodes)
	}
	if n.Kind == yaml.AliasNode {
		return countYAML(n.Alias, budget, depth+1)
	}
	for _, c := range n.Content {
		if err := countYAML(c, budget, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// node maps one Clash proxy to a node; its errors name the proxy.
func (cp *clashProxy) node() (*node.Node, error) {
	n, err := cp.build()
	if err != nil {
		name := cp.Name
		if name == "" {
			name = cp.Type
		}
		return nil, fmt.Errorf("proxy %q: %w", name, err)
	}
	if n.Name == "" {
		n.Name = n.Address()
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("proxy %q: %w", cp.Name, err)
	}
	return n, nil
}

// multiplex sets n's multiplex from cp's smux.
func (cp *clashProxy) multiplex(n *node.Node) {
	if m := cp.Smux; m != nil && m.Enabled {
		n.Multiplex = m.Protocol
		if n.Multiplex == "" {
			n.Multiplex = "h2mux" // mihomo's default
		}
		n.MultiplexOptions = muxOptions(m.MaxConnections, m.MinStreams, m.MaxStreams, m.Padding)
	}
}

func (cp *clashProxy) build() (*node.Node, error) {
	n := &node.Node{
		Name:   strings.TrimSpace(cp.Name),
		Server: strings.Trim(strings.TrimSpace(cp.Server), "[]"),
		Port:   uint16(cp.Port),
	}
	if strings.EqualFold(cp.Type, "wireguard") {
		return wireGuardNode(n, cp.raw) // its peers may carry the server
	}
	if n.Server == "" {
		return nil, errors.New("server: missing")
	}
	sni := cp.SNI
	if sni == "" {
		sni = cp.ServerName
	}
	ech, err := cp.ECHOpts.node()
	if err != nil {
		return nil, err
	}
	tlsOn := func() {
		n.TLS = &node.TLS{
			SNI: sni, ALPN: cp.ALPN, Insecure: cp.SkipCertVerify,
			PinSHA256: normalizePin(cp.Fingerprint), Fingerprint: cp.ClientFingerprint, NoSNI: cp.DisableSNI, ECH: ech,
		}
		if r := cp.RealityOpts; r != nil {
			n.TLS.Reality = &node.Reality{PublicKey: r.PublicKey, ShortID: r.ShortID}
		}
	}
	switch strings.ToLower(cp.Type) {
	case "hysteria2", "hy2":
		if n.Port == 0 && cp.Ports != "" {
			n.Port = firstPort(cp.Ports)
		}
		up, err := parseMbps(cp.Up)
		if err != nil {
			return nil, fmt.Errorf("up: %w", err)
		}
		down, err := parseMbps(cp.Down)
		if err != nil {
			return nil, fmt.Errorf("down: %w", err)
		}
		hop, err := parseHopInterval(cp.HopInterval)
		if err != nil {
			return nil, fmt.Errorf("hop-interval: %w", err)
		}
		n.Protocol = node.Hysteria2
		n.Hysteria2 = &node.Hysteria2Options{
			Auth: cp.Password, Ports: strings.ReplaceAll(cp.Ports, " ", ""), HopInterval: hop,
			Obfs: cp.Obfs, ObfsPassword: cp.ObfsPassword, UpMbps: up, DownMbps: down,
		}
		tlsOn()
		return n, nil
	case "hysteria":
		if err := cp.hysteria(n); err != nil {
			return nil, err
		}
		tlsOn()
		return n, nil
	case "vless":
		n.Protocol = node.VLESS
		enc := cp.Encryption
		if enc == "" {
			enc = "none"
		}
		n.VLESS = &node.VLESSOptions{UUID: cp.UUID, Flow: cp.Flow, Encryption: enc}
		if cp.TLS || cp.RealityOpts != nil {
			tlsOn()
		}
	case "vmess":
		n.Protocol = node.VMess
		n.VMess = &node.VMessOptions{UUID: cp.UUID, AlterID: cp.AlterID, Security: cp.Cipher,
			GlobalPadding: cp.GlobalPadding, AuthenticatedLength: cp.AuthenticatedLength, PacketEncoding: cp.PacketEncoding}
		if cp.TLS {
			tlsOn()
		}
	case "trojan":
		n.Protocol = node.Trojan
		n.Trojan = &node.TrojanOptions{Password: cp.Password}
		if o := cp.SSOpts; o != nil && o.Enabled {
			n.Trojan.SSMethod = o.Method
			if n.Trojan.SSMethod == "" {
				n.Trojan.SSMethod = "aes-128-gcm" // trojan-go's default
			}
		}
		tlsOn()
	case "ss", "shadowsocks":
		n.Protocol = node.Shadowsocks
		plugin, opts, err := sip003Plugin(cp.Plugin, cp.pluginOpts())
		if err != nil {
			return nil, err
		}
		n.Shadowsocks = &node.ShadowsocksOptions{Method: cp.Cipher, Password: cp.Password, Plugin: plugin, PluginOpts: opts, UDPOverTCP: cp.UDPOverTCP}
		if cp.UDPOverTCP {
			n.Shadowsocks.UDPOverTCPVersion = cp.UDPOverTCPVersion
			if n.Shadowsocks.UDPOverTCPVersion == 0 {
				n.Shadowsocks.UDPOverTCPVersion = 1 // mihomo's default
			}
		}
		cp.multiplex(n)
		return n, nil
	case "tuic":
		if cp.UUID == "" && cp.Token != "" {
			return nil, errors.New("TUIC v4 (token) is not supported, only v5 (uuid and password)")
		}
		n.Protocol = node.TUIC
		if cp.HeartbeatInterval < 0 {
			return nil, errors.New("heartbeat-interval: negative")
		}
		n.TUIC = &node.TUICOptions{UUID: cp.UUID, Password: cp.Password, CongestionControl: cp.CongestionController, UDPRelayMode: cp.UDPRelayMode,
			ZeroRTT: cp.ReduceRTT, Heartbeat: time.Duration(cp.HeartbeatInterval) * time.Millisecond, UDPOverStream: cp.UDPOverStream}
		tlsOn()
		return n, nil
	case "anytls":
		n.Protocol = node.AnyTLS
		check, err := parseHopInterval(cp.IdleSessionCheck) // whole seconds, or a Go duration
		if err != nil {
			return nil, fmt.Errorf("idle-session-check-interval: %w", err)
		}
		timeout, err := parseHopInterval(cp.IdleSessionTimeout)
		if err != nil {
			return nil, fmt.Errorf("idle-session-timeout: %w", err)
		}
		n.AnyTLS = &node.AnyTLSOptions{Password: cp.Password, IdleSessionCheckInterval: check, IdleSessionTimeout: timeout, MinIdleSession: cp.MinIdleSession}
		tlsOn()
		return n, nil
	case "ssh":
		return cp.sshNode(n), nil
	case "":
		return nil, errors.New("type: missing")
	default:
		return nil, fmt.Errorf("type %q is not a protocol Skiff knows", cp.Type)
	}
	// The stream protocols' multiplexing and transport.
	cp.multiplex(n)
	t, err := cp.transport()
	if err != nil {
		return nil, err
	}
	n.Transport = t
	return n, nil
}

// fastOpenEarlyData marks an HTTPUpgrade node with fast open, as a link's
// ?ed=2048 (the value Xray's panels write) does.
const fastOpenEarlyData = 2048

func (cp *clashProxy) transport() (*node.Transport, error) {
	switch strings.ToLower(cp.Network) {
	case "", "tcp":
		return nil, nil
	case "ws":
		t := &node.Transport{Type: node.TransportWS, Path: "/"}
		if o := cp.WSOpts; o != nil {
			if o.Path != "" {
				t.Path = o.Path
			}
			t.Path, t.MaxEarlyData = splitEarlyData(t.Path)
			if o.MaxEarlyData > 0 {
				t.MaxEarlyData = o.MaxEarlyData
			}
			t.EarlyDataHeader = o.EarlyDataHeaderName
			t.Host, t.Headers = splitHost(o.Headers)
			if o.V2rayHTTPUpgrade {
				t.Type = node.TransportHTTPUpgrade
				t.MaxEarlyData, t.EarlyDataHeader = 0, ""
				if o.HTTPUpgradeFastOpen {
					t.MaxEarlyData = fastOpenEarlyData
				}
			}
		}
		return t, nil
	case "grpc":
		t := &node.Transport{Type: node.TransportGRPC}
		if cp.GRPCOpts != nil {
			t.ServiceName = cp.GRPCOpts.ServiceName
		}
		return t, nil
	case "h2":
		t := &node.Transport{Type: node.TransportH2}
		if o := cp.H2Opts; o != nil {
			t.Path = o.Path
			if len(o.Host) > 0 {
				t.Host = o.Host[0]
			}
		}
		return t, nil
	case "httpupgrade":
		return &node.Transport{Type: node.TransportHTTPUpgrade, Path: "/"}, nil
	case "http":
		// HTTP/1.1 request disguise on plain TCP (V2Ray's tcp header
		// "http"), kept so that the outbound can name what it lacks.
		t := &node.Transport{Type: node.TransportTCP, HeaderType: "http"}
		if o := cp.HTTPOpts; o != nil {
			if len(o.Path) > 0 {
				t.Path = o.Path[0]
			}
			for k, v := range o.Headers {
				if strings.EqualFold(k, "host") && len(v) > 0 {
					t.Host = v[0]
				}
			}
		}
		return t, nil
	case "xhttp":
		return clashXHTTP(cp.XHTTPOpts)
	default:
		return nil, fmt.Errorf("network %q is not a transport Skiff knows", cp.Network)
	}
}

// splitHost takes the Host header out of a header map.
func splitHost(h map[string]string) (string, map[string]string) {
	host := ""
	var rest map[string]string
	for k, v := range h {
		if strings.EqualFold(k, "host") {
			host = v
			continue
		}
		if rest == nil {
			rest = make(map[string]string)
		}
		rest[k] = v
	}
	return host, rest
}

// splitEarlyData takes Xray's "?ed=N" off a WebSocket path.
func splitEarlyData(p string) (string, int) {
	i := strings.IndexByte(p, '?')
	if i < 0 {
		return p, 0
	}
	q, err := url.ParseQuery(p[i+1:])
	if err != nil || q.Get("ed") == "" {
		return p, 0
	}
	ed, err := strconv.Atoi(q.Get("ed"))
	if err != nil || ed < 0 {
		return p, 0
	}
	q.Del("ed")
	rest := p[:i]
	if len(q) > 0 {
		rest += "?" + q.Encode()
	}
	return rest, ed
}

// normalizePin turns "AB:CD:…" or "abcd…" into lower-case hex without
// separators.
func normalizePin(s string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), ":", ""))
}

// firstPort returns the first port of a hopping spec like "443,5000-6000".
func firstPort(spec string) uint16 {
	f := strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == '-' || r == ':' || r == ' ' })
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseUint(f[0], 10, 16)
	if err != nil {
		return 0
	}
	return uint16(v)
}

// parseHopInterval reads a port-hopping interval: whole seconds as Clash
// writes it ("30") or a Go duration as sing-box does ("30s", "1m"). Empty
// is 0, the client's default; the client raises a short one to its
// minimum.
func parseHopInterval(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}

// parseMbps reads a bandwidth like "100", "100 Mbps", "1 Gbps", "500 Kbps"
// or "20 MB/s" as whole Mbit/s. Empty is 0.
func parseMbps(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	v, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || v < 0 || v > 1e7 {
		return 0, fmt.Errorf("bandwidth %q: not a number of Mbps", s)
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	switch unit {
	case "", "m", "mbps", "mbit", "mbit/s", "mb":
	case "k", "kbps", "kbit", "kbit/s", "kb":
		v /= 1000
	case "g", "gbps", "gbit", "gbit/s", "gb":
		v *= 1000
	case "t", "tbps":
		v *= 1e6
	case "bps", "b":
		v /= 1e6
	case "mb/s", "mbyte/s", "mbytes/s":
		v *= 8
	case "kb/s":
		v = v * 8 / 1000
	case "gb/s":
		v *= 8000
	default:
		return 0, fmt.Errorf("bandwidth %q: unknown unit", s)
	}
	if v > 0 && v < 1 {
		v = 1
	}
	return int(v), nil
}

// sip003Plugin turns Clash's plugin name and options into the SIP003 plugin
// name and option string that ss:// links carry.
func sip003Plugin(name string, opts map[string]any) (string, string, error) {
	if name == "" {
		return "", "", nil
	}
	str := func(k string) string {
		v, ok := opts[k]
		if !ok || v == nil {
			return ""
		}
		return fmt.Sprint(v)
	}
	var parts []string
	// known maps Clash's names of a plugin's options to SIP003 ones; the
	// rest pass under their own names, so that the outbound names what it
	// does not implement.
	var known map[string]string
	switch name {
	case "obfs":
		name = "obfs-local"
		known = map[string]string{"mode": "obfs", "host": "obfs-host"}
	case "v2ray-plugin":
		known = map[string]string{"mode": "mode", "tls": "tls", "host": "host", "path": "path", "mux": "mux", "skip-cert-verify": "skip-cert-verify"}
	}
	if known != nil {
		rest := map[string]any{}
		for _, k := range []string{"mode", "tls", "host", "path", "mux", "skip-cert-verify"} {
			sip, ok := known[k]
			v := str(k)
			switch {
			case !ok || v == "":
			case v == "true" && (k == "tls" || k == "skip-cert-verify"):
				parts = append(parts, sip)
			case v == "false" && (k == "tls" || k == "skip-cert-verify" || k == "mux"):
			case k == "mux" && v == "true":
				parts = append(parts, "mux=1")
			default:
				parts = append(parts, sip+"="+sip003Escape(v))
			}
		}
		for k, v := range opts {
			if _, ok := known[k]; !ok {
				rest[k] = v
			}
		}
		opts = rest
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := opts[k].(type) {
		case map[string]any, []any:
			return "", "", fmt.Errorf("plugin %s: option %q: nested options are not supported", name, k)
		case bool:
			if v {
				parts = append(parts, k)
			}
		default:
			parts = append(parts, sip003Escape(k)+"="+sip003Escape(fmt.Sprint(v)))
		}
	}
	return name, strings.Join(parts, ";"), nil
}

// sip003Escape escapes '\', ';' and '=' in a SIP003 option name or value.
func sip003Escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, ";", `\;`, "=", `\=`).Replace(s)
}
