package link

import (
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// parseHysteria2 reads hysteria2://[auth@]host[:ports][/]?obfs=salamander&
// obfs-password=…&sni=…&insecure=1&pinSHA256=…#name (hysteria.network
// "URI Scheme"). The port part may be a port-hopping list such as
// "443,5000-6000"; mport= (another clients' extension) is read too.
func parseHysteria2(u *uri) (*node.Node, error) {
	s := u.scheme
	q := u.query
	o := &node.Hysteria2Options{Auth: u.user}
	n := &node.Node{Name: u.name(), Protocol: node.Hysteria2, Server: u.host, Hysteria2: o}
	var err error

	switch {
	case u.port == "":
		n.Port = 443
	case strings.ContainsAny(u.port, ",-"):
		first, err := parsePortList(s, u.port)
		if err != nil {
			return nil, err
		}
		n.Port, o.Ports = first, u.port
	default:
		if n.Port, err = parsePort(s, u.port, 443); err != nil {
			return nil, err
		}
	}
	if mp := q.get("mport"); mp != "" && o.Ports == "" {
		if _, err := parsePortList(s, mp); err != nil {
			return nil, errf(s, "mport", "%s", err.(*Error).Reason)
		}
		o.Ports = mp
	}

	switch obfs := q.get("obfs"); strings.ToLower(obfs) {
	case "", "none":
	case "salamander":
		o.Obfs = "salamander"
		o.ObfsPassword = q.get("obfs-password")
		if o.ObfsPassword == "" {
			return nil, errf(s, "obfs-password", "empty with obfs=salamander")
		}
	default:
		return nil, refuse(s, "obfs", "unknown type", obfs)
	}
	if o.UpMbps, o.DownMbps, err = readRates(s, q); err != nil {
		return nil, err
	}

	t, err := quicTLS(s, q)
	if err != nil {
		return nil, err
	}
	n.TLS = t
	return n, nil
}

// quicTLS reads the TLS settings of the protocols that always use TLS
// (Hysteria2, TUIC, AnyTLS): sni (peer), insecure (allowInsecure,
// allow_insecure), pinSHA256, alpn, fp. Nil when none is given.
func quicTLS(scheme string, q params) (*node.TLS, error) {
	t, err := tlsParams(scheme, q, "insecure", "allowInsecure", "allow_insecure")
	if err != nil {
		return nil, err
	}
	if t.SNI == "" && t.ALPN == nil && !t.Insecure && t.PinSHA256 == "" && t.Fingerprint == "" && t.ECH == nil {
		return nil, nil
	}
	return t, nil
}

// addQUICTLS writes what quicTLS reads.
// insecureKey is the name the protocol's clients use for the skip-verify
// flag ("insecure" for Hysteria2 and AnyTLS, "allow_insecure" for TUIC).
func addQUICTLS(scheme string, q *query, t *node.TLS, insecureKey string) error {
	if t == nil {
		return nil
	}
	if t.Reality != nil {
		return errf(scheme, "reality", "not supported by this protocol")
	}
	q.addNonEmpty("sni", t.SNI)
	if err := addALPN(scheme, q, t.ALPN); err != nil {
		return err
	}
	if t.Insecure {
		q.add(insecureKey, "1")
	}
	if err := addPin(scheme, q, "pinSHA256", t.PinSHA256); err != nil {
		return err
	}
	q.addNonEmpty("fp", t.Fingerprint)
	return addECH(scheme, q, t.ECH)
}

// parsePortList checks a port-hopping list ("443,5000-6000") and returns
// its first port.
func parsePortList(scheme, list string) (uint16, error) {
	var first uint16
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parsePort(scheme, lo, 0)
		if err != nil {
			return 0, err
		}
		if isRange {
			b, err := parsePort(scheme, hi, 0)
			if err != nil {
				return 0, err
			}
			if b < a {
				return 0, errf(scheme, "port", "range %d-%d is backwards", a, b)
			}
		}
		if first == 0 {
			first = a
		}
	}
	return first, nil
}

func formatHysteria2(n *node.Node) (string, error) {
	const s = schemeHysteria2
	o := n.Hysteria2
	var q query
	port := "" // n.Port, or a hopping list that starts at it
	if o.Ports != "" {
		first, err := parsePortList(s, o.Ports)
		if err != nil {
			return "", err
		}
		if first == n.Port && strings.ContainsAny(o.Ports, ",-") {
			port = o.Ports
		} else {
			q.add("mport", o.Ports)
		}
	}
	if o.Obfs != "" {
		q.add("obfs", o.Obfs)
		q.add("obfs-password", o.ObfsPassword)
	}
	if err := addQUICTLS(s, &q, n.TLS, "insecure"); err != nil {
		return "", err
	}
	q.addRates(o.UpMbps, o.DownMbps)
	return joinURI(s, escape(o.Auth), n, port, "/", &q), nil
}

// fingerprint normalises a uTLS fingerprint name; "none" means Go's own.
func fingerprint(fp string) string {
	if strings.EqualFold(fp, "none") {
		return ""
	}
	return fp
}

// checkALPN rejects ALPN values that a comma-separated list cannot carry.
func checkALPN(scheme string, alpn []string) error {
	for _, a := range alpn {
		if a == "" || strings.ContainsRune(a, ',') || strings.TrimSpace(a) != a {
			return errf(scheme, "alpn", "value not expressible in a comma-separated list")
		}
	}
	return nil
}
