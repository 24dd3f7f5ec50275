package node

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// WireGuardOptions is WireGuard's settings (and Cloudflare WARP's, which is
// WireGuard with Reserved set). Node.Server and Node.Port are the first
// peer's endpoint.
type WireGuardOptions struct {
	PrivateKey string          `json:"privateKey"`    // base64, 32 bytes
	Addresses  []string        `json:"addresses"`     // the interface's own addresses as prefixes: "172.16.0.2/32", "2606:4700:110::2/128"
	MTU        int             `json:"mtu,omitempty"` // 0: 1408 (fits a 1500-byte path over IPv6 with room for PPPoE)
	DNS        []string        `json:"dns,omitempty"` // IP addresses of resolvers reached through the tunnel for names dialled through it; empty: 1.1.1.1
	Peers      []WireGuardPeer `json:"peers"`
	// Amnezia holds AmneziaWG's obfuscation settings; nil: plain WireGuard.
	Amnezia *AmneziaOptions `json:"amnezia,omitempty"`
}

// WireGuardPeer is one peer of a WireGuard interface.
type WireGuardPeer struct {
	// Server and Port are the peer's endpoint; empty and 0 for the first
	// peer, whose endpoint is Node.Server and Node.Port.
	Server       string   `json:"server,omitempty"`
	Port         uint16   `json:"port,omitempty"`
	PublicKey    string   `json:"publicKey"`              // base64, 32 bytes
	PresharedKey string   `json:"presharedKey,omitempty"` // base64, 32 bytes
	AllowedIPs   []string `json:"allowedIPs,omitempty"`   // prefixes routed to this peer; empty: 0.0.0.0/0 and ::/0
	// Reserved is written into bytes 1..3 of every message to this peer
	// (WARP's client id) and cleared in every message from it.
	Reserved  [3]byte       `json:"reserved,omitzero"`
	Keepalive time.Duration `json:"keepalive,omitempty"` // persistent keepalive interval; 0: off
}

// AmneziaOptions is AmneziaWG's junk packets and header obfuscation
// (Clash amnezia-wg-option, the awg fields of Hiddify's and Throne's
// links), kept as written: Skiff cannot dial such a node yet.
type AmneziaOptions struct {
	JunkCount int `json:"jc,omitempty"`
	JunkMin   int `json:"jmin,omitempty"`
	JunkMax   int `json:"jmax,omitempty"`
	// S is s1..s4: padding of init, response, cookie and transport
	// messages.
	S [4]int `json:"s,omitzero"`
	// H is h1..h4: the message types (a number, or a range "a-b" in
	// AmneziaWG 2).
	H [4]string `json:"h,omitzero"`
	// I is i1..i5: the special junk packets' templates.
	I [5]string `json:"i,omitzero"`
}

// WireGuardKey decodes a base64 WireGuard key (standard or URL alphabet,
// padded or not); field names it in the error, which never holds the key.
func WireGuardKey(field, s string) ([32]byte, error) {
	var k [32]byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil && len(b) == 32 {
			copy(k[:], b)
			return k, nil
		}
	}
	if s == "" {
		return k, fmt.Errorf("node: %s: empty", field)
	}
	return k, fmt.Errorf("node: %s: not a base64 32-byte key", field)
}

// DefaultAllowedIPs are a peer's allowed IPs when it names none.
var DefaultAllowedIPs = []string{"0.0.0.0/0", "::/0"}

func (o *WireGuardOptions) validate() error {
	if _, err := WireGuardKey("private-key", o.PrivateKey); err != nil {
		return err
	}
	if len(o.Addresses) == 0 {
		return errors.New("node: address: none (the interface needs an IPv4 or IPv6 address)")
	}
	for _, a := range o.Addresses {
		if _, err := netip.ParsePrefix(a); err != nil {
			return fmt.Errorf("node: address: %q not an address prefix", a)
		}
	}
	if o.MTU != 0 && (o.MTU < 576 || o.MTU > 9000) {
		return fmt.Errorf("node: mtu: %d out of range 576-9000", o.MTU)
	}
	for _, d := range o.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			return fmt.Errorf("node: dns: %q not an IP address", d)
		}
	}
	if len(o.Peers) == 0 {
		return errors.New("node: peers: none")
	}
	for i, p := range o.Peers {
		if _, err := WireGuardKey("public-key", p.PublicKey); err != nil {
			return fmt.Errorf("peer %d: %w", i+1, err)
		}
		if p.PresharedKey != "" {
			if _, err := WireGuardKey("pre-shared-key", p.PresharedKey); err != nil {
				return fmt.Errorf("peer %d: %w", i+1, err)
			}
		}
		if i > 0 && (p.Server == "" || p.Port == 0) {
			return fmt.Errorf("node: peer %d: endpoint missing", i+1)
		}
		for _, a := range p.AllowedIPs {
			if _, err := netip.ParsePrefix(a); err != nil {
				return fmt.Errorf("node: peer %d: allowed-ips: %q not a prefix", i+1, a)
			}
		}
		if p.Keepalive < 0 || p.Keepalive > 65535*time.Second {
			return fmt.Errorf("node: peer %d: keepalive out of range", i+1)
		}
	}
	return nil
}

// CanonicalWireGuardKey returns key s (see WireGuardKey) in standard
// padded base64, the one spelling nodes keep. A space, which form
// decoding makes of an unescaped '+', is read as '+'.
func CanonicalWireGuardKey(field, s string) (string, error) {
	k, err := WireGuardKey(field, strings.ReplaceAll(strings.TrimSpace(s), " ", "+"))
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(k[:]), nil
}

// ParseReserved reads WireGuard reserved bytes written as three decimal
// numbers split by ',' or '-' ("168,26,21", Throne's "1-2-3") or as the
// base64 of three bytes (WARP's client_id, "qBoV").
func ParseReserved(s string) ([3]byte, error) {
	var r [3]byte
	parts := strings.FieldsFunc(s, func(c rune) bool { return c == ',' || c == '-' || c == ' ' })
	if len(parts) == 3 {
		ok := true
		for i, p := range parts {
			b, err := strconv.ParseUint(p, 10, 8)
			if err != nil {
				ok = false
				break
			}
			r[i] = byte(b)
		}
		if ok {
			return r, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(strings.ReplaceAll(s, " ", "+")); err == nil && len(b) == 3 {
			return [3]byte(b), nil
		}
	}
	return [3]byte{}, errors.New("not three bytes (a,b,c or base64)")
}

// InterfacePrefix reads an interface address written as a prefix or a
// bare address (which gets /32 or /128), in its one spelling.
func InterfacePrefix(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.IndexByte(s, '/') >= 0 {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return "", err
		}
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()).String(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()).String(), nil
}
