package subscription

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// clashHysteria holds the Clash/mihomo fields only Hysteria v1 proxies
// have (Meta-Docs hysteria.en.md); obfs, up, down, ports and the TLS
// fields are clashProxy's.
type clashHysteria struct {
	AuthStr             string `yaml:"auth-str"`
	AuthBase64          string `yaml:"auth"` // base64
	Protocol            string `yaml:"protocol"`
	ObfsProtocol        string `yaml:"obfs-protocol"` // older spelling of protocol
	RecvWindowConn      int64  `yaml:"recv-window-conn"`
	RecvWindow          int64  `yaml:"recv-window"`
	DisableMTUDiscovery bool   `yaml:"disable_mtu_discovery"`
}

// hysteria maps a Clash type: hysteria proxy into n; Clash's obfs is the
// xplus key itself.
func (cp *clashProxy) hysteria(n *node.Node) error {
	if n.Port == 0 && cp.Ports != "" {
		n.Port = firstPort(cp.Ports)
	}
	up, err := parseMbps(cp.Up)
	if err != nil {
		return fmt.Errorf("up: %w", err)
	}
	down, err := parseMbps(cp.Down)
	if err != nil {
		return fmt.Errorf("down: %w", err)
	}
	auth, err := hysteriaAuth(cp.AuthStr, cp.AuthBase64)
	if err != nil {
		return err
	}
	proto := cp.Protocol
	if proto == "" {
		proto = cp.ObfsProtocol
	}
	o := &node.HysteriaOptions{Auth: auth, UpMbps: up, DownMbps: down, Obfs: cp.Obfs, RecvWindowConn: cp.RecvWindowConn,
		RecvWindow: cp.RecvWindow, DisableMTUDiscovery: cp.DisableMTUDiscovery}
	if o.Protocol, err = hysteriaProtocol(proto); err != nil {
		return err
	}
	n.Protocol, n.Hysteria = node.Hysteria, o
	return nil
}

// sbHysteria holds the sing-box fields only the hysteria outbound has
// (option/hysteria.go); up_mbps, down_mbps and obfs are sbOutbound's.
type sbHysteria struct {
	Up                  string `json:"up"`
	Down                string `json:"down"`
	AuthBase64          []byte `json:"auth"` // encoding/json decodes the base64
	AuthStr             string `json:"auth_str"`
	RecvWindowConn      int64  `json:"recv_window_conn"`
	RecvWindow          int64  `json:"recv_window"`
	DisableMTUDiscovery bool   `json:"disable_mtu_discovery"`
}

// hysteria maps a sing-box hysteria outbound into n.
func (o *sbOutbound) hysteria(n *node.Node) error {
	up, down := o.UpMbps, o.DownMbps
	var err error
	if up == 0 && o.Up != "" {
		if up, err = parseMbps(o.Up); err != nil {
			return fmt.Errorf("up: %w", err)
		}
	}
	if down == 0 && o.Down != "" {
		if down, err = parseMbps(o.Down); err != nil {
			return fmt.Errorf("down: %w", err)
		}
	}
	auth := o.AuthBase64
	if len(auth) == 0 && o.AuthStr != "" {
		auth = []byte(o.AuthStr)
	}
	if n.Port == 0 && len(o.ServerPorts) > 0 {
		n.Port = firstPort(strings.ReplaceAll(o.ServerPorts[0], ":", "-"))
	}
	h := &node.HysteriaOptions{Auth: auth, UpMbps: up, DownMbps: down, RecvWindowConn: o.RecvWindowConn,
		RecvWindow: o.RecvWindow, DisableMTUDiscovery: o.DisableMTUDiscovery}
	if o.Obfs != nil {
		h.Obfs = o.Obfs.Password
	}
	n.Protocol, n.Hysteria = node.Hysteria, h
	return nil
}

// sbObfs is sing-box's obfs: Hysteria 2's {"type", "password"}, or
// Hysteria v1's key as a string (then Type is "xplus").
type sbObfs struct {
	Type     string `json:"type"`
	Password string `json:"password"`
}

func (o *sbObfs) UnmarshalJSON(b []byte) error {
	type object sbObfs // without this method
	return shortOrFull(b, o, func(key string) sbObfs { return sbObfs{Type: "xplus", Password: key} },
		func(v object) sbObfs { return sbObfs(v) }, "obfs: want a key or {\"type\": …, \"password\": …}")
}

// hysteriaAuth is the auth payload from a text form and a base64 form;
// the text wins when both are given, as in mihomo.
func hysteriaAuth(text, b64 string) ([]byte, error) {
	if text != "" {
		return []byte(text), nil
	}
	if b64 == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, errors.New("auth: not base64")
	}
	return b, nil
}

// hysteriaProtocol checks v1's transport protocol; faketcp and
// wechat-video are kept for the outbound to refuse with its reason.
func hysteriaProtocol(p string) (string, error) {
	switch p = strings.ToLower(strings.TrimSpace(p)); p {
	case "", node.HysteriaUDP:
		return "", nil
	case node.HysteriaFakeTCP, node.HysteriaWechatVideo:
		return p, nil
	}
	if len(p) <= 16 && isPlainToken(p) {
		return "", fmt.Errorf("protocol: unknown %q", p)
	}
	return "", errors.New("protocol: unknown")
}

func isPlainToken(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
