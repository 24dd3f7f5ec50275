package link

import "github.com/skiffvpn/skiff/core/node"

// VLESS flows that a share link may name.
var vlessFlows = map[string]bool{"": true, "xtls-rprx-vision": true, "xtls-rprx-vision-udp443": true}

// parseVLESS reads vless://UUID@host:port?encryption=none&security=…&type=…
// #name as the Xray share-link proposal (XTLS/Xray-core discussion #716)
// writes it. The port is required; security defaults to none.
func parseVLESS(u *uri) (*node.Node, error) {
	s := u.scheme
	if !u.hasUser {
		return nil, errf(s, "uuid", "missing")
	}
	id, err := checkUUID(s, u.user)
	if err != nil {
		return nil, err
	}
	port, err := parsePort(s, u.port, 0)
	if err != nil {
		return nil, err
	}
	q := u.query
	switch enc := q.get("encryption"); enc {
	case "", "none":
	default:
		// Post-quantum VLESS encryption strings carry key material: do
		// not echo them.
		return nil, errf(s, "encryption", "unsupported (only none)")
	}
	flow := q.get("flow")
	if !vlessFlows[flow] {
		return nil, refuse(s, "flow", "unsupported", flow)
	}
	n := &node.Node{
		Name: u.name(), Protocol: node.VLESS, Server: u.host, Port: port,
		VLESS: &node.VLESSOptions{UUID: id, Flow: flow, Encryption: "none"},
	}
	if err := readStream(n, s, q, "none"); err != nil {
		return nil, err
	}
	return n, nil
}

func formatVLESS(n *node.Node) (string, error) {
	const s = schemeVLESS
	o := n.VLESS
	id, err := checkUUID(s, o.UUID)
	if err != nil {
		return "", err
	}
	if o.Encryption != "" && o.Encryption != "none" {
		return "", errf(s, "encryption", "unsupported (only none)")
	}
	if !vlessFlows[o.Flow] {
		return "", errf(s, "flow", "unsupported")
	}
	var q query
	q.add("encryption", "none")
	q.addNonEmpty("flow", o.Flow)
	if err := addStream(s, &q, n); err != nil {
		return "", err
	}
	return joinURI(s, id, n, "", "", &q), nil
}

// parseTrojan reads trojan://password@host[:port]?security=tls&sni=…&
// type=ws&host=…&path=…&allowInsecure=1#name (trojan-url, extended with
// the VLESS proposal's transport and TLS parameters). TLS is on unless
// security=none; the port defaults to 443.
func parseTrojan(u *uri) (*node.Node, error) {
	s := u.scheme
	if u.user == "" {
		return nil, errf(s, "password", "empty")
	}
	port, err := parsePort(s, u.port, 443)
	if err != nil {
		return nil, err
	}
	q := u.query
	n := &node.Node{
		Name: u.name(), Protocol: node.Trojan, Server: u.host, Port: port,
		Trojan: &node.TrojanOptions{Password: u.user},
	}
	if err := readStream(n, s, q, "tls"); err != nil {
		return nil, err
	}
	return n, nil
}

func formatTrojan(n *node.Node) (string, error) {
	const s = schemeTrojan
	o := n.Trojan
	if o.Password == "" {
		return "", errf(s, "password", "empty")
	}
	if o.SSMethod != "" || n.Multiplex != "" {
		return "", errf(s, "ss-opts", "trojan-go's shadowsocks layer and multiplex have no trojan:// form")
	}
	var q query
	if err := addStream(s, &q, n); err != nil {
		return "", err
	}
	return joinURI(s, escape(o.Password), n, "", "", &q), nil
}
