package link

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// maxEarlyData bounds ?ed=N; larger values are left in the path as written.
const maxEarlyData = 65535

// streamTLS reads the security layer of the stream protocols (VLESS,
// Trojan) as the Xray share-link proposal writes it: security=none|tls|
// reality with sni, fp, alpn, pbk, sid, spx, pcs (pinned certificate
// SHA-256; pinSHA256 is read too), and the skip-verify flag in any of the
// spellings clients use. vcn (verifyPeerCertByName) has no node field and
// is ignored, which only makes verification stricter. def is the security
// when none is given.
func streamTLS(scheme string, q params, def string) (*node.TLS, error) {
	sec := q.get("security")
	if sec == "" {
		sec = def
	}
	switch sec {
	case "none":
		return nil, nil
	case "tls", "reality":
	case "xtls":
		return nil, errf(scheme, "security", "xtls is obsolete (use tls with flow=xtls-rprx-vision)")
	default:
		return nil, refuse(scheme, "security", "unsupported", sec)
	}
	t, err := tlsParams(scheme, q, "allowInsecure", "insecure", "allow_insecure")
	if err != nil {
		return nil, err
	}
	if sec == "reality" {
		r, err := reality(scheme, q)
		if err != nil {
			return nil, err
		}
		t.Reality = r
	}
	return t, nil
}

// tlsParams reads the TLS parameters every share link spells alike: sni
// (peer), alpn, fp, the pinned certificate (pinParam) and the skip-verify
// flag under insecureKeys, the first given of which counts.
func tlsParams(scheme string, q params, insecureKeys ...string) (*node.TLS, error) {
	ins, err := q.boolean(scheme, insecureKeys...)
	if err != nil {
		return nil, err
	}
	p, err := pinParam(scheme, q)
	if err != nil {
		return nil, err
	}
	ech, err := echParam(scheme, q.get("ech"))
	if err != nil {
		return nil, err
	}
	return &node.TLS{
		SNI:         q.get("sni", "peer"),
		ALPN:        splitList(q.get("alpn")),
		Insecure:    ins,
		PinSHA256:   p,
		Fingerprint: fingerprint(q.get("fp")),
		ECH:         ech,
	}, nil
}

// readStream reads the security layer (streamTLS, def when security is
// not given) and the transport (streamTransport) of a stream protocol's
// link into n. REALITY is refused for VMess.
func readStream(n *node.Node, scheme string, q params, def string) error {
	var err error
	if n.TLS, err = streamTLS(scheme, q, def); err != nil {
		return err
	}
	if n.Protocol == node.VMess && n.TLS != nil && n.TLS.Reality != nil {
		return errf(scheme, "security", "reality is for VLESS and Trojan")
	}
	n.Transport, err = streamTransport(scheme, q)
	return err
}

// addStream writes what readStream reads.
func addStream(scheme string, q *query, n *node.Node) error {
	if err := addStreamTLS(scheme, q, n.TLS); err != nil {
		return err
	}
	return addStreamTransport(scheme, q, n.Transport)
}

// reality reads pbk (X25519 public key, base64url), sid (short ID, hex)
// and spx (spider path).
func reality(scheme string, q params) (*node.Reality, error) {
	pbk := strings.TrimRight(q.get("pbk"), "=")
	if pbk == "" {
		return nil, errf(scheme, "pbk", "empty with security=reality")
	}
	// Accept the standard alphabet too, and keep the key in the one form
	// Xray prints (base64url, no padding).
	pbk = strings.NewReplacer("+", "-", "/", "_").Replace(pbk)
	if k, err := base64.RawURLEncoding.DecodeString(pbk); err != nil || len(k) != 32 {
		return nil, errf(scheme, "pbk", "not a base64url X25519 public key")
	}
	sid := strings.ToLower(q.get("sid"))
	if len(sid) > 16 || len(sid)%2 != 0 {
		return nil, errf(scheme, "sid", "want an even number of hex digits, at most 16")
	}
	for i := 0; i < len(sid); i++ {
		if !isHex(sid[i]) {
			return nil, errf(scheme, "sid", "want an even number of hex digits, at most 16")
		}
	}
	return &node.Reality{PublicKey: pbk, ShortID: sid, SpiderX: q.get("spx")}, nil
}

// addStreamTLS writes what streamTLS reads.
func addStreamTLS(scheme string, q *query, t *node.TLS) error {
	if t == nil {
		q.add("security", "none")
		return nil
	}
	if t.Reality != nil {
		q.add("security", "reality")
	} else {
		q.add("security", "tls")
	}
	q.addNonEmpty("sni", t.SNI)
	q.addNonEmpty("fp", t.Fingerprint)
	if err := addALPN(scheme, q, t.ALPN); err != nil {
		return err
	}
	if t.Insecure {
		q.add("allowInsecure", "1")
	}
	if err := addPin(scheme, q, "pcs", t.PinSHA256); err != nil {
		return err
	}
	if err := addECH(scheme, q, t.ECH); err != nil {
		return err
	}
	if r := t.Reality; r != nil {
		q.add("pbk", r.PublicKey)
		q.addNonEmpty("sid", r.ShortID)
		q.addNonEmpty("spx", r.SpiderX)
	}
	return nil
}

// addALPN writes alpn, when there is any, after checking that a share
// link can carry it.
func addALPN(scheme string, q *query, alpn []string) error {
	if len(alpn) == 0 {
		return nil
	}
	if err := checkALPN(scheme, alpn); err != nil {
		return err
	}
	q.add("alpn", strings.Join(alpn, ","))
	return nil
}

// addPin writes the pinned certificate hash, when there is one, under key
// in the form pinParam reads.
func addPin(scheme string, q *query, key, pinned string) error {
	if pinned == "" {
		return nil
	}
	p, err := pin(scheme, pinned)
	if err != nil {
		return err
	}
	q.add(key, p)
	return nil
}

// streamTransport reads type=tcp|raw|ws|grpc|httpupgrade|http|h2 with
// host, path, serviceName and headerType. Plain TCP gives nil.
func streamTransport(scheme string, q params) (*node.Transport, error) {
	typ := strings.ToLower(q.get("type", "net"))
	switch typ {
	case "", "tcp", "raw", "original":
		switch h := q.get("headerType"); h {
		case "", "none":
			return nil, nil
		case "http":
			return &node.Transport{Type: node.TransportTCP, HeaderType: "http", Host: q.get("host"), Path: q.get("path")}, nil
		default:
			return nil, refuse(scheme, "headerType", "unsupported", h)
		}
	case "ws", "websocket":
		path, ed := splitEarlyData(q.get("path"))
		return &node.Transport{Type: node.TransportWS, Host: q.get("host"), Path: path, MaxEarlyData: ed}, nil
	case "httpupgrade":
		// ?ed=N is Xray's fast open (the first bytes sent before the 101).
		path, ed := splitEarlyData(q.get("path"))
		return &node.Transport{Type: node.TransportHTTPUpgrade, Host: q.get("host"), Path: path, MaxEarlyData: ed}, nil
	case "grpc", "gun":
		return grpcTransport(scheme, q)
	case "http", "h2":
		return &node.Transport{Type: node.TransportH2, Host: q.get("host"), Path: q.get("path")}, nil
	case "xhttp", "splithttp":
		return xhttpTransport(scheme, q)
	}
	return nil, refuse(scheme, "type", "unsupported", typ)
}

// addStreamTransport writes what streamTransport reads.
func addStreamTransport(scheme string, q *query, t *node.Transport) error {
	if t == nil {
		q.add("type", "tcp")
		return nil
	}
	if err := checkTransport(scheme, t); err != nil {
		return err
	}
	switch t.Type {
	case node.TransportTCP:
		q.add("type", "tcp")
		if t.HeaderType != "" {
			q.add("headerType", t.HeaderType)
			q.addNonEmpty("host", t.Host)
			q.addNonEmpty("path", t.Path)
		}
	case node.TransportWS:
		q.add("type", "ws")
		q.addNonEmpty("host", t.Host)
		q.addNonEmpty("path", joinEarlyData(t.Path, t.MaxEarlyData))
	case node.TransportHTTPUpgrade:
		q.add("type", "httpupgrade")
		q.addNonEmpty("host", t.Host)
		q.addNonEmpty("path", joinEarlyData(t.Path, t.MaxEarlyData))
	case node.TransportGRPC:
		q.add("type", "grpc")
		q.addNonEmpty("serviceName", t.ServiceName)
		q.addNonEmpty("authority", t.Authority)
		q.add("mode", grpcMode(t.MultiMode))
	case node.TransportH2:
		q.add("type", "http")
		q.addNonEmpty("host", t.Host)
		q.addNonEmpty("path", t.Path)
	case node.TransportXHTTP:
		q.add("type", "xhttp")
		q.addNonEmpty("host", t.Host)
		q.addNonEmpty("path", t.Path)
		if x := t.XHTTP; x != nil {
			q.addNonEmpty("mode", x.Mode)
			q.addNonEmpty("extra", x.Extra)
		}
	}
	return nil
}

// checkTransport rejects transport settings no share link can carry.
func checkTransport(scheme string, t *node.Transport) error {
	if len(t.Headers) > 0 {
		return errf(scheme, "headers", "extra transport headers have no share-link form")
	}
	if t.EarlyDataHeader != "" && t.EarlyDataHeader != "Sec-WebSocket-Protocol" {
		return errf(scheme, "earlyDataHeader", "a custom early-data header has no share-link form")
	}
	if t.MaxEarlyData != 0 && (t.Type != node.TransportWS && t.Type != node.TransportHTTPUpgrade || t.MaxEarlyData < 0 || t.MaxEarlyData > maxEarlyData) {
		return errf(scheme, "maxEarlyData", "only 0-%d with ws or httpupgrade", maxEarlyData)
	}
	return nil
}

// splitEarlyData takes ?ed=N out of a WebSocket path ("/ws?ed=2560" →
// "/ws", 2560), keeping any other query parameters in the path. The last
// ed wins (joinEarlyData appends it last); one that is not a number in
// range stays in the path as written.
func splitEarlyData(p string) (string, int) {
	base, raw, ok := strings.Cut(p, "?")
	if !ok {
		return p, 0
	}
	var keep []string
	ed, found := 0, false
	for _, kv := range strings.Split(raw, "&") {
		if kv == "" {
			continue
		}
		if k, v, _ := strings.Cut(kv, "="); k == "ed" && allDigits(v) {
			if n, err := strconv.Atoi(v); err == nil && n <= maxEarlyData {
				ed, found = n, true
				continue
			}
		}
		keep = append(keep, kv)
	}
	if !found {
		return p, 0
	}
	if len(keep) > 0 {
		base += "?" + strings.Join(keep, "&")
	}
	return base, ed
}

// joinEarlyData is the inverse of splitEarlyData.
func joinEarlyData(p string, ed int) string {
	if ed <= 0 {
		return p
	}
	if strings.IndexByte(p, '?') >= 0 {
		return p + "&ed=" + strconv.Itoa(ed)
	}
	return p + "?ed=" + strconv.Itoa(ed)
}

// grpcTransport reads serviceName, authority and mode=gun|multi (v2rayN,
// 3x-ui); no mode is gun.
func grpcTransport(scheme string, q params) (*node.Transport, error) {
	t := &node.Transport{Type: node.TransportGRPC, ServiceName: q.get("serviceName"), Authority: q.get("authority")}
	switch m := strings.ToLower(q.get("mode")); m {
	case "", "gun":
	case "multi":
		t.MultiMode = true
	default:
		return nil, refuse(scheme, "mode", "unsupported", m)
	}
	return t, nil
}

func grpcMode(multi bool) string {
	if multi {
		return "multi"
	}
	return "gun"
}
