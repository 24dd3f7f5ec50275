package subscription

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

// listable is sing-box's "one value or a list" field.
type listable []string

func (l *listable) UnmarshalJSON(b []byte) error {
	return shortOrFull(b, l, func(one string) listable { return listable{one} },
		func(many []string) listable { return many }, "want a string or a list of strings")
}

// shortOrFull decodes a field that sing-box takes in a short form S or in
// full F into *dst, through short or full; msg is the error when b is
// neither.
func shortOrFull[S, F, T any](b []byte, dst *T, short func(S) T, full func(F) T, msg string) error {
	var s S
	if json.Unmarshal(b, &s) == nil {
		*dst = short(s)
		return nil
	}
	var f F
	if json.Unmarshal(b, &f) != nil {
		return errors.New(msg)
	}
	*dst = full(f)
	return nil
}

// hopInterval is sing-box's hop_interval: a duration string like "30s"
// (or, leniently, a number of seconds).
type hopInterval time.Duration

func (d *hopInterval) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if json.Unmarshal(b, &n) != nil {
			return errors.New("want a duration like \"30s\"")
		}
		s = n.String()
	}
	v, err := parseHopInterval(s)
	if err != nil {
		return err
	}
	*d = hopInterval(v)
	return nil
}

// sbUoT is sing-box's udp_over_tcp: true, or an object with enabled and
// version (0: sing-box's default, 2).
type sbUoT struct {
	Enabled bool `json:"enabled"`
	Version int  `json:"version"`
}

func (u *sbUoT) UnmarshalJSON(b []byte) error {
	type object sbUoT // without this method
	return shortOrFull(b, u, func(on bool) sbUoT { return sbUoT{Enabled: on} },
		func(o object) sbUoT { return sbUoT(o) }, "udp_over_tcp: want true/false or {\"enabled\": …, \"version\": …}")
}

// sbOutbound is one sing-box outbound with the fields Skiff maps.
type sbOutbound struct {
	Type        string      `json:"type"`
	Tag         string      `json:"tag"`
	Server      string      `json:"server"`
	ServerPort  uint16      `json:"server_port"`
	ServerPorts listable    `json:"server_ports"`
	HopInterval hopInterval `json:"hop_interval"`

	// selector and urltest: the group's members by tag, a selector's
	// default member, and urltest's probe.
	Outbounds []string `json:"outbounds"`
	Default   string   `json:"default"`
	URL       string   `json:"url"`
	Interval  string   `json:"interval"`

	Password            string      `json:"password"`
	UUID                string      `json:"uuid"`
	Flow                string      `json:"flow"`
	Security            string      `json:"security"`
	AlterID             int         `json:"alter_id"`
	Method              string      `json:"method"`
	Plugin              string      `json:"plugin"`
	PluginOpts          string      `json:"plugin_opts"`
	UpMbps              int         `json:"up_mbps"`
	DownMbps            int         `json:"down_mbps"`
	CongestionControl   string      `json:"congestion_control"`
	UDPRelayMode        string      `json:"udp_relay_mode"`
	ZeroRTTHandshake    bool        `json:"zero_rtt_handshake"`
	Heartbeat           hopInterval `json:"heartbeat"` // a duration, as hop_interval
	UDPOverStream       bool        `json:"udp_over_stream"`
	IdleSessionCheck    hopInterval `json:"idle_session_check_interval"` // durations, as hop_interval
	IdleSessionTimeout  hopInterval `json:"idle_session_timeout"`
	MinIdleSession      int         `json:"min_idle_session"`
	UDPOverTCP          sbUoT       `json:"udp_over_tcp"`
	GlobalPadding       bool        `json:"global_padding"`
	AuthenticatedLength bool        `json:"authenticated_length"`
	PacketEncoding      string      `json:"packet_encoding"`
	sbSSH
	sbShadowTLS
	Multiplex *struct {
		Enabled        bool   `json:"enabled"`
		Protocol       string `json:"protocol"`
		MaxConnections int    `json:"max_connections"`
		MinStreams     int    `json:"min_streams"`
		MaxStreams     int    `json:"max_streams"`
		Padding        bool   `json:"padding"`
	} `json:"multiplex"`
	Obfs *sbObfs `json:"obfs"`
	sbHysteria

	TLS *struct {
		Enabled    bool     `json:"enabled"`
		ServerName string   `json:"server_name"`
		Insecure   bool     `json:"insecure"`
		DisableSNI bool     `json:"disable_sni"`
		ALPN       listable `json:"alpn"`
		UTLS       *struct {
			Enabled     bool   `json:"enabled"`
			Fingerprint string `json:"fingerprint"`
		} `json:"utls"`
		Reality *struct {
			Enabled   bool   `json:"enabled"`
			PublicKey string `json:"public_key"`
			ShortID   string `json:"short_id"`
		} `json:"reality"`
		ECH *sbECH `json:"ech"`
	} `json:"tls"`

	Transport *struct {
		Type                string              `json:"type"`
		Path                string              `json:"path"`
		Host                listable            `json:"host"`
		Headers             map[string]listable `json:"headers"`
		MaxEarlyData        int                 `json:"max_early_data"`
		EarlyDataHeaderName string              `json:"early_data_header_name"`
		ServiceName         string              `json:"service_name"`
	} `json:"transport"`

	raw json.RawMessage // the entry, for protocols that decode their own fields (wireguard.go)
}

// group is a selector or urltest outbound as a provider's group: its
// members are other outbounds' tags (a direct or block one names no
// server, and is reported as such when the groups are applied).
func (o *sbOutbound) group(line int) Group {
	g := Group{Name: o.Tag, Type: profile.GroupSelector, Members: o.Outbounds, Default: o.Default, Line: line}
	if o.Type == "urltest" {
		g.Type, g.ProbeURL = profile.GroupURLTest, o.URL
		if d, err := time.ParseDuration(o.Interval); err == nil && d > 0 {
			g.Interval = d
		}
	}
	return g
}

// sbSkip lists outbound types that are not servers.
var sbSkip = map[string]bool{"direct": true, "block": true, "dns": true, "selector": true, "urltest": true}

// parseSingBox maps a sing-box config's outbounds to nodes, reporting each
// unusable outbound with the line it starts on.
func parseSingBox(body []byte, res *Result) error {
	notServer := map[string]bool{} // tags of direct, block and dns outbounds
	var st shadowTLSDetours
	defer func() {
		st.resolve(res)
		for i := range res.Groups {
			g := &res.Groups[i]
			kept := g.Members[:0:0]
			for _, m := range g.Members {
				if !notServer[m] {
					kept = append(kept, m)
				}
			}
			g.Members = kept
		}
	}()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonError(body, err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return jsonError(body, err)
		}
		if key != "outbounds" && key != "endpoints" { // endpoints: WireGuard since sing-box 1.11
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return jsonError(body, err)
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			if err == nil {
				err = errors.New("outbounds: not a list")
			}
			return fmt.Errorf("sing-box: %w", err)
		}
		for dec.More() {
			line := lineAt(body, skipSpace(body, dec.InputOffset()))
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return jsonError(body, err)
			}
			o := sbOutbound{raw: raw}
			if err := json.Unmarshal(raw, &o); err != nil {
				res.warn(line, "invalid outbound: "+jsonFieldError(err))
				continue
			}
			if o.Type == "selector" || o.Type == "urltest" {
				res.Groups = append(res.Groups, o.group(line))
				continue
			}
			if sbSkip[o.Type] || st.take(&o) {
				notServer[o.Tag] = true
				continue
			}
			st.serverless(&o)
			if n, err := o.node(); res.add(line, n, err) {
				st.note(&o, n, line)
			}
		}
		if _, err := dec.Token(); err != nil {
			return jsonError(body, err)
		}
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return jsonError(body, err)
	}
	return nil
}

// skipSpace moves off past white space and a comma, to where the next
// value starts.
func skipSpace(b []byte, off int64) int64 {
	for off < int64(len(b)) {
		switch b[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// jsonFieldError describes a type error by field, without the value.
func jsonFieldError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}

func (o *sbOutbound) node() (*node.Node, error) {
	n, err := o.build()
	name := o.Tag
	if name == "" {
		name = o.Type
	}
	if err != nil {
		return nil, fmt.Errorf("outbound %q: %w", name, err)
	}
	if n.Name == "" {
		n.Name = n.Address()
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("outbound %q: %w", name, err)
	}
	return n, nil
}

// multiplex sets n's multiplex from o's.
func (o *sbOutbound) multiplex(n *node.Node) {
	if m := o.Multiplex; m != nil && m.Enabled {
		n.Multiplex = m.Protocol
		if n.Multiplex == "" {
			n.Multiplex = "h2mux" // sing-box's default
		}
		n.MultiplexOptions = muxOptions(m.MaxConnections, m.MinStreams, m.MaxStreams, m.Padding)
	}
}

func (o *sbOutbound) build() (*node.Node, error) {
	n := &node.Node{Name: strings.TrimSpace(o.Tag), Server: strings.Trim(o.Server, "[]"), Port: o.ServerPort}
	if o.Type == "wireguard" {
		return singBoxWireGuard(n, o.raw) // an endpoint's peers carry the server
	}
	if n.Server == "" {
		return nil, errors.New("server: missing")
	}
	if t := o.TLS; t != nil && t.Enabled {
		n.TLS = &node.TLS{SNI: t.ServerName, Insecure: t.Insecure, ALPN: t.ALPN, NoSNI: t.DisableSNI}
		if t.UTLS != nil && t.UTLS.Enabled {
			n.TLS.Fingerprint = t.UTLS.Fingerprint
			if n.TLS.Fingerprint == "" {
				n.TLS.Fingerprint = "chrome"
			}
		}
		if r := t.Reality; r != nil && r.Enabled {
			n.TLS.Reality = &node.Reality{PublicKey: r.PublicKey, ShortID: r.ShortID}
		}
		var err error
		if n.TLS.ECH, err = t.ECH.node(); err != nil {
			return nil, err
		}
	}
	needTLS := func() {
		if n.TLS == nil {
			n.TLS = &node.TLS{}
		}
	}
	switch o.Type {
	case "hysteria2":
		var ports []string
		for _, p := range o.ServerPorts {
			ports = append(ports, strings.ReplaceAll(p, ":", "-"))
		}
		n.Protocol = node.Hysteria2
		n.Hysteria2 = &node.Hysteria2Options{Auth: o.Password, Ports: strings.Join(ports, ","), HopInterval: time.Duration(o.HopInterval), UpMbps: o.UpMbps, DownMbps: o.DownMbps}
		if n.Port == 0 && len(ports) > 0 {
			n.Port = firstPort(ports[0])
		}
		if o.Obfs != nil {
			n.Hysteria2.Obfs, n.Hysteria2.ObfsPassword = o.Obfs.Type, o.Obfs.Password
		}
		needTLS()
		return n, nil
	case "hysteria":
		if err := o.hysteria(n); err != nil {
			return nil, err
		}
		needTLS()
		return n, nil
	case "vless":
		n.Protocol = node.VLESS
		n.VLESS = &node.VLESSOptions{UUID: o.UUID, Flow: o.Flow, Encryption: "none"}
	case "vmess":
		n.Protocol = node.VMess
		n.VMess = &node.VMessOptions{UUID: o.UUID, AlterID: o.AlterID, Security: o.Security,
			GlobalPadding: o.GlobalPadding, AuthenticatedLength: o.AuthenticatedLength, PacketEncoding: o.PacketEncoding}
	case "trojan":
		n.Protocol = node.Trojan
		n.Trojan = &node.TrojanOptions{Password: o.Password}
	case "shadowsocks":
		n.Protocol = node.Shadowsocks
		n.Shadowsocks = &node.ShadowsocksOptions{Method: o.Method, Password: o.Password, Plugin: o.Plugin, PluginOpts: o.PluginOpts, UDPOverTCP: o.UDPOverTCP.Enabled, UDPOverTCPVersion: o.UDPOverTCP.Version}
		o.multiplex(n)
		return n, nil
	case "tuic":
		n.Protocol = node.TUIC
		n.TUIC = &node.TUICOptions{UUID: o.UUID, Password: o.Password, CongestionControl: o.CongestionControl, UDPRelayMode: o.UDPRelayMode,
			ZeroRTT: o.ZeroRTTHandshake, Heartbeat: time.Duration(o.Heartbeat), UDPOverStream: o.UDPOverStream}
		needTLS()
		return n, nil
	case "anytls":
		n.Protocol = node.AnyTLS
		n.AnyTLS = &node.AnyTLSOptions{Password: o.Password, IdleSessionCheckInterval: time.Duration(o.IdleSessionCheck),
			IdleSessionTimeout: time.Duration(o.IdleSessionTimeout), MinIdleSession: o.MinIdleSession}
		needTLS()
		return n, nil
	case "ssh":
		return o.sshNode(n), nil
	case "":
		return nil, errors.New("type: missing")
	default:
		return nil, fmt.Errorf("type %q is not a protocol Skiff knows", o.Type)
	}
	o.multiplex(n)
	if t := o.Transport; t != nil {
		tr := &node.Transport{Path: t.Path, MaxEarlyData: t.MaxEarlyData, EarlyDataHeader: t.EarlyDataHeaderName, ServiceName: t.ServiceName}
		if len(t.Host) > 0 {
			tr.Host = t.Host[0]
		}
		for k, v := range t.Headers {
			if len(v) == 0 {
				continue
			}
			if strings.EqualFold(k, "host") {
				if tr.Host == "" {
					tr.Host = v[0]
				}
				continue
			}
			if tr.Headers == nil {
				tr.Headers = make(map[string]string)
			}
			tr.Headers[k] = v[0]
		}
		switch t.Type {
		case "ws":
			tr.Type = node.TransportWS
			if tr.Path == "" {
				tr.Path = "/"
			}
		case "grpc":
			tr.Type = node.TransportGRPC
		case "httpupgrade":
			tr.Type = node.TransportHTTPUpgrade
		case "http":
			tr.Type = node.TransportH2
			if n.TLS == nil {
				// Without TLS sing-box speaks HTTP/1.1 with V2Ray's
				// request disguise: kept, so the outbound names it.
				tr.Type, tr.HeaderType = node.TransportTCP, "http"
			}
		default:
			return nil, fmt.Errorf("transport %q is not one Skiff knows", t.Type)
		}
		n.Transport = tr
	}
	return n, nil
}
