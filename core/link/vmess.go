package link

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/node"
)

// vmessSecurities are the VMess body ciphers (JSON "scy").
var vmessSecurities = map[string]bool{"auto": true, "aes-128-gcm": true, "chacha20-poly1305": true, "none": true, "zero": true}

// vmessJSON is v2rayN's vmess:// payload ("分享链接格式说明 (ver 2)"), as
// Format writes it: every value a string. allowInsecure and pinSHA256 are
// this package's extensions; other clients ignore them.
type vmessJSON struct {
	V             string `json:"v"`
	PS            string `json:"ps"`
	Add           string `json:"add"`
	Port          string `json:"port"`
	ID            string `json:"id"`
	Aid           string `json:"aid"`
	Scy           string `json:"scy"`
	Net           string `json:"net"`
	Type          string `json:"type"`
	Host          string `json:"host"`
	Path          string `json:"path"`
	TLS           string `json:"tls"`
	SNI           string `json:"sni"`
	ALPN          string `json:"alpn"`
	FP            string `json:"fp"`
	AllowInsecure string `json:"allowInsecure,omitempty"`
	PinSHA256     string `json:"pinSHA256,omitempty"`
	ECH           string `json:"ech,omitempty"`       // as the URL forms' ech= (link/ech.go)
	Authority     string `json:"authority,omitempty"` // grpc :authority (v2rayN)
	Extra         string `json:"extra,omitempty"`     // xhttp: its extra= (v2rayN puts the mode in type)
}

// parseVMess reads vmess://base64(JSON) (v2rayN; the base64 may be
// standard or URL-safe, padded or not) and, when the payload is not base64,
// the Xray proposal's URL form vmess://uuid@host:port?….
func parseVMess(rest string) (*node.Node, error) {
	const s = schemeVMess
	body, frag, _ := strings.Cut(rest, "#")
	dec, ok := decodeBase64(body)
	if !ok || !strings.HasPrefix(strings.TrimSpace(dec), "{") {
		if strings.IndexByte(body, '@') >= 0 {
			return uriForm(s, parseVMessURL)(rest)
		}
		return nil, errf(s, "payload", "not base64 of a JSON object")
	}
	fields := map[string]any{}
	d := json.NewDecoder(strings.NewReader(dec))
	d.UseNumber()
	if err := d.Decode(&fields); err != nil {
		return nil, errf(s, "payload", "bad JSON")
	}
	str := func(k string) string {
		switch v := fields[k].(type) {
		case string:
			return v
		case json.Number:
			return v.String()
		case bool:
			return strconv.FormatBool(v)
		}
		return ""
	}

	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(str("add")), "["), "]")
	if host == "" {
		return nil, errf(s, "add", "empty")
	}
	if strings.IndexByte(host, ':') >= 0 {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return nil, errf(s, "add", "not a host name or IP address")
		}
		host = a.String()
	} else if err := checkHostName(s, host); err != nil {
		return nil, err
	}
	port, err := parsePort(s, strings.TrimSpace(str("port")), 0)
	if err != nil {
		return nil, err
	}
	id, err := checkUUID(s, strings.TrimSpace(str("id")))
	if err != nil {
		return nil, err
	}
	aid := 0
	if a := strings.TrimSpace(str("aid")); a != "" {
		if !allDigits(a) {
			return nil, errf(s, "aid", "not a number")
		}
		if aid, err = strconv.Atoi(a); err != nil || aid > 65535 {
			return nil, errf(s, "aid", "out of range")
		}
	}
	scy := strings.ToLower(strings.TrimSpace(str("scy")))
	if scy == "" {
		scy = "auto"
	}
	if !vmessSecurities[scy] {
		return nil, refuse(s, "scy", "unsupported", scy)
	}

	// The JSON's fields mapped to the URL form's names, so that the
	// transport and TLS are read by the same code as VLESS's.
	q := params{"type": strings.TrimSpace(str("net")), "host": str("host"), "path": str("path")}
	switch strings.ToLower(q["type"]) {
	case "grpc", "gun":
		// 3x-ui: the service in path, "multi" in type (else "gun" or "none").
		q["serviceName"], q["authority"] = q["path"], str("authority")
		if strings.EqualFold(strings.TrimSpace(str("type")), "multi") {
			q["mode"] = "multi"
		}
	case "", "tcp", "raw":
		q["headerType"] = strings.TrimSpace(str("type"))
	case "xhttp", "splithttp":
		q["mode"], q["extra"] = strings.TrimSpace(str("type")), str("extra")
	}
	tr, err := streamTransport(s, q)
	if err != nil {
		if e, ok := err.(*Error); ok && e.Field == "type" {
			e.Field = "net"
		}
		return nil, err
	}

	var t *node.TLS
	switch sec := strings.ToLower(strings.TrimSpace(str("tls"))); sec {
	case "", "none", "false", "0":
	case "tls", "true", "1":
		ins := false
		for _, k := range []string{"allowInsecure", "insecure", "skip-cert-verify", "allow_insecure"} {
			if v := strings.ToLower(strings.TrimSpace(str(k))); v == "1" || v == "true" {
				ins = true
			}
		}
		p, err := pin(s, strings.TrimSpace(str("pinSHA256")))
		if err != nil {
			return nil, err
		}
		ech, err := echParam(s, str("ech"))
		if err != nil {
			return nil, err
		}
		t = &node.TLS{SNI: str("sni"), ALPN: splitList(str("alpn")), Insecure: ins, PinSHA256: p, Fingerprint: fingerprint(str("fp")), ECH: ech}
	default:
		return nil, refuse(s, "tls", "unsupported", sec)
	}

	name := str("ps")
	if name == "" {
		name = (&uri{fragment: frag}).name()
	}
	return &node.Node{
		Name: name, Protocol: node.VMess, Server: host, Port: port, TLS: t, Transport: tr,
		VMess: &node.VMessOptions{UUID: id, AlterID: aid, Security: scy},
	}, nil
}

// parseVMessURL reads the Xray proposal's vmess://uuid@host:port?
// encryption=auto&security=tls&type=ws…#name (its "encryption" is the
// VMess cipher).
func parseVMessURL(u *uri) (*node.Node, error) {
	s := u.scheme
	id, err := checkUUID(s, u.user)
	if err != nil {
		return nil, err
	}
	port, err := parsePort(s, u.port, 0)
	if err != nil {
		return nil, err
	}
	q := u.query
	scy := q.get("encryption")
	if scy == "" {
		scy = "auto"
	}
	if !vmessSecurities[scy] {
		return nil, refuse(s, "encryption", "unsupported", scy)
	}
	n := &node.Node{Name: u.name(), Protocol: node.VMess, Server: u.host, Port: port,
		VMess: &node.VMessOptions{UUID: id, Security: scy}}
	if err := readStream(n, s, q, "none"); err != nil {
		return nil, err
	}
	return n, nil
}

func formatVMess(n *node.Node) (string, error) {
	const s = schemeVMess
	o := n.VMess
	id, err := checkUUID(s, o.UUID)
	if err != nil {
		return "", err
	}
	scy := o.Security
	if scy == "" {
		scy = "auto"
	}
	if !vmessSecurities[scy] {
		return "", errf(s, "scy", "unsupported")
	}
	if o.AlterID < 0 || o.AlterID > 65535 {
		return "", errf(s, "aid", "out of range")
	}
	if o.GlobalPadding || o.AuthenticatedLength || o.PacketEncoding != "" || n.Multiplex != "" {
		return "", errf(s, "payload", "global padding, authenticated length, packet encoding and multiplex have no vmess:// form")
	}
	j := vmessJSON{V: "2", PS: n.Name, Add: n.Server, Port: strconv.Itoa(int(n.Port)), ID: id,
		Aid: strconv.Itoa(o.AlterID), Scy: scy, Net: "tcp", Type: "none"}
	if tr := n.Transport; tr != nil {
		if err := checkTransport(s, tr); err != nil {
			return "", err
		}
		switch tr.Type {
		case node.TransportTCP:
			if tr.HeaderType != "" {
				j.Type, j.Host, j.Path = tr.HeaderType, tr.Host, tr.Path
			}
		case node.TransportWS:
			j.Net, j.Host, j.Path = "ws", tr.Host, joinEarlyData(tr.Path, tr.MaxEarlyData)
		case node.TransportHTTPUpgrade:
			j.Net, j.Host, j.Path = "httpupgrade", tr.Host, joinEarlyData(tr.Path, tr.MaxEarlyData)
		case node.TransportGRPC:
			j.Net, j.Type, j.Path, j.Authority = "grpc", grpcMode(tr.MultiMode), tr.ServiceName, tr.Authority
		case node.TransportH2:
			j.Net, j.Host, j.Path = "h2", tr.Host, tr.Path
		case node.TransportXHTTP:
			j.Net, j.Host, j.Path, j.Type = "xhttp", tr.Host, tr.Path, ""
			if x := tr.XHTTP; x != nil {
				j.Type, j.Extra = x.Mode, x.Extra
			}
		}
	}
	if t := n.TLS; t != nil {
		if t.Reality != nil {
			return "", errf(s, "reality", "not supported by VMess")
		}
		if err := checkALPN(s, t.ALPN); err != nil {
			return "", err
		}
		j.TLS, j.SNI, j.ALPN, j.FP = "tls", t.SNI, strings.Join(t.ALPN, ","), t.Fingerprint
		if t.Insecure {
			j.AllowInsecure = "1"
		}
		if t.PinSHA256 != "" {
			if j.PinSHA256, err = pin(s, t.PinSHA256); err != nil {
				return "", err
			}
		}
		if j.ECH, err = echValue(s, t.ECH); err != nil {
			return "", err
		}
	}
	// JSON can carry only valid UTF-8.
	for _, f := range []struct{ name, v string }{{"ps", j.PS}, {"host", j.Host}, {"path", j.Path}, {"sni", j.SNI}, {"fp", j.FP}, {"alpn", j.ALPN}} {
		if !utf8.ValidString(f.v) {
			return "", errf(s, f.name, "not valid UTF-8")
		}
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(j); err != nil {
		return "", errf(s, "payload", "encoding JSON")
	}
	return "vmess://" + base64.StdEncoding.EncodeToString(bytes.TrimSpace(buf.Bytes())), nil
}
