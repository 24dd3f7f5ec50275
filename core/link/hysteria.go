package link

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/node"
)

const schemeHysteria = "hysteria"

// parseHysteria reads a Hysteria v1 link (v1.hysteria.network "URI
// Scheme"): hysteria://host:port?protocol=udp&auth=…&peer=…&insecure=1&
// upmbps=…&downmbps=…&alpn=…&obfs=xplus&obfsParam=…#name. obfsparam is
// read too (Hiddify lower-cases the keys), and so is an obfsParam without
// obfs: v1 has only xplus. A port-hopping list keeps its first port.
func parseHysteria(u *uri) (*node.Node, error) {
	s := u.scheme
	q := u.query
	o := &node.HysteriaOptions{}
	n := &node.Node{Name: u.name(), Protocol: node.Hysteria, Server: u.host, Hysteria: o}
	port := u.port
	var err error
	if strings.ContainsAny(port, ",-") {
		if n.Port, err = parsePortList(s, port); err != nil {
			return nil, err
		}
	} else if n.Port, err = parsePort(s, port, 0); err != nil {
		return nil, err
	}
	if a := q.get("auth", "auth_str"); a != "" {
		o.Auth = []byte(a)
	}
	switch p := strings.ToLower(q.get("protocol")); p {
	case "", node.HysteriaUDP:
	case node.HysteriaFakeTCP, node.HysteriaWechatVideo:
		o.Protocol = p // kept, and refused by the outbound with the reason
	default:
		return nil, refuse(s, "protocol", "unknown", p)
	}
	key := q.get("obfsParam", "obfsparam", "obfs-password")
	switch obfs := q.get("obfs"); strings.ToLower(obfs) {
	case "", "none", "plain":
		o.Obfs = key
	case "xplus":
		if key == "" {
			return nil, errf(s, "obfsParam", "empty with obfs=xplus")
		}
		o.Obfs = key
	default:
		return nil, refuse(s, "obfs", "unknown type", obfs)
	}
	if o.UpMbps, o.DownMbps, err = readRates(s, q); err != nil {
		return nil, err
	}
	if n.TLS, err = quicTLS(s, q); err != nil {
		return nil, err
	}
	return n, nil
}

func formatHysteria(n *node.Node) (string, error) {
	const s = schemeHysteria
	o := n.Hysteria
	var q query
	if o.Protocol != "" {
		q.add("protocol", o.Protocol)
	}
	if len(o.Auth) > 0 {
		if !utf8.Valid(o.Auth) {
			return "", errf(s, "auth", "not text: a link cannot carry it")
		}
		q.add("auth", string(o.Auth))
	}
	if err := addQUICTLS(s, &q, n.TLS, "insecure"); err != nil {
		return "", err
	}
	q.addRates(o.UpMbps, o.DownMbps)
	if o.Obfs != "" {
		q.add("obfs", "xplus")
		q.add("obfsParam", o.Obfs)
	}
	if o.RecvWindowConn != 0 || o.RecvWindow != 0 || o.DisableMTUDiscovery {
		return "", errf(s, "recv-window", "receive windows and MTU discovery have no link field")
	}
	return joinURI(s, "", n, "", "", &q), nil
}

// readRates reads the upmbps and downmbps of a Hysteria link (v1 or 2).
func readRates(scheme string, q params) (up, down int, err error) {
	if up, err = q.number(scheme, "upmbps", 1<<20); err != nil {
		return 0, 0, err
	}
	if down, err = q.number(scheme, "downmbps", 1<<20); err != nil {
		return 0, 0, err
	}
	return up, down, nil
}

// addRates writes the rates readRates reads, those that are set.
func (q *query) addRates(up, down int) {
	if up > 0 {
		q.add("upmbps", strconv.Itoa(up))
	}
	if down > 0 {
		q.add("downmbps", strconv.Itoa(down))
	}
}
