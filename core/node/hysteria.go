package node

import "errors"

// Hysteria v1 transport protocols (HysteriaOptions.Protocol).
const (
	HysteriaUDP         = "udp"
	HysteriaFakeTCP     = "faketcp"
	HysteriaWechatVideo = "wechat-video"
)

// HysteriaOptions is Hysteria v1's settings. TLS settings (SNI from the
// link's peer, ALPN, which defaults to "hysteria") are in Node.TLS.
type HysteriaOptions struct {
	// Auth is the authentication payload: the link's auth and Clash's
	// auth-str as text, sing-box's and Clash's base64 auth decoded.
	Auth []byte `json:"auth,omitempty"`
	// UpMbps and DownMbps are the rates declared to the server in the
	// client hello; the protocol needs both.
	UpMbps   int `json:"upMbps"`
	DownMbps int `json:"downMbps"`
	// Obfs is the xplus obfuscation key ("obfs" in v1 configurations,
	// the link's obfsParam); empty: none.
	Obfs string `json:"obfs,omitempty"`
	// Protocol is what carries QUIC: "" or "udp"; "faketcp" and
	// "wechat-video" are v1's other two, which Skiff does not have.
	Protocol string `json:"protocol,omitempty"`
	// RecvWindowConn and RecvWindow are QUIC's stream and connection
	// receive windows in bytes; 0: the client's defaults.
	RecvWindowConn int64 `json:"recvWindowConn,omitempty"`
	RecvWindow     int64 `json:"recvWindow,omitempty"`
	// DisableMTUDiscovery turns QUIC's path MTU discovery off (Clash
	// disable_mtu_discovery).
	DisableMTUDiscovery bool `json:"disableMTUDiscovery,omitempty"`
}

func (o *HysteriaOptions) validate() error {
	if o == nil {
		return errors.New("node: hysteria: options missing")
	}
	if o.UpMbps < 0 || o.DownMbps < 0 {
		return errors.New("node: hysteria: up and down Mbps must not be negative")
	}
	if o.RecvWindowConn < 0 || o.RecvWindow < 0 {
		return errors.New("node: hysteria: receive windows must not be negative")
	}
	return nil
}
