package link

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// ssMethods are the Shadowsocks ciphers a link may name, with the PSK
// length in bytes for the SIP022 (2022) ones and 0 for the others. Stream
// ciphers are deprecated and not accepted.
var ssMethods = map[string]int{
	"none":                          0,
	"plain":                         0,
	"aes-128-gcm":                   0,
	"aes-192-gcm":                   0,
	"aes-256-gcm":                   0,
	"chacha20-ietf-poly1305":        0,
	"xchacha20-ietf-poly1305":       0,
	"2022-blake3-aes-128-gcm":       16,
	"2022-blake3-aes-256-gcm":       32,
	"2022-blake3-chacha20-poly1305": 32,
}

func is2022(method string) bool { return strings.HasPrefix(method, "2022-") }

// parseSS reads the three ss:// forms in use:
//   - SIP002: ss://base64url(method:password)@host:port/?plugin=…#name
//   - SIP022 (2022 ciphers), and some other clients for every cipher:
//     ss://percent-encoded(method:password)@host:port#name
//   - legacy: ss://base64(method:password@host:port)#name
func parseSS(rest string) (*node.Node, error) {
	const s = schemeSS
	body := rest
	if i := strings.IndexAny(body, "?#"); i >= 0 {
		body = body[:i]
	}
	if strings.IndexByte(body, '@') < 0 {
		return parseSSLegacy(rest)
	}
	u, err := splitURI(s, rest)
	if err != nil {
		return nil, err
	}
	userinfo := u.user
	if strings.IndexByte(userinfo, ':') < 0 {
		dec, ok := decodeBase64(userinfo)
		if !ok || strings.IndexByte(dec, ':') < 0 {
			return nil, errf(s, "userinfo", "neither method:password nor its base64")
		}
		userinfo = dec
	}
	method, password, _ := strings.Cut(userinfo, ":")
	port, err := parsePort(s, u.port, 0)
	if err != nil {
		return nil, err
	}
	o, err := ssOptions(method, password)
	if err != nil {
		return nil, err
	}
	if p := u.query.get("plugin"); p != "" {
		name, opts, _ := strings.Cut(p, ";")
		if name = strings.TrimSpace(name); name != "" {
			o.Plugin, o.PluginOpts = name, opts
		}
	}
	if err := ssUoT(u.query, o); err != nil {
		return nil, err
	}
	return &node.Node{Name: u.name(), Protocol: node.Shadowsocks, Server: u.host, Port: port, Shadowsocks: o}, nil
}

// ssUoT reads UDP over TCP as mihomo's converter writes it into ss://
// links: udp-over-tcp=true or uot=1, with udp-over-tcp-version (Clash's
// default, 1, when absent).
func ssUoT(q params, o *node.ShadowsocksOptions) error {
	on, err := q.boolean(schemeSS, "udp-over-tcp", "uot")
	if err != nil || !on {
		return err
	}
	v, err := q.number(schemeSS, "udp-over-tcp-version", 2)
	if err != nil {
		return err
	}
	o.UDPOverTCP, o.UDPOverTCPVersion = true, max(v, 1)
	return nil
}

// parseSSLegacy reads ss://base64(method:password@host:port)#name. A '/'
// before the '#' may be a separator or the last base64 character: both
// readings are tried.
func parseSSLegacy(rest string) (*node.Node, error) {
	body, frag, _ := strings.Cut(rest, "#")
	body, _, _ = strings.Cut(body, "?")
	if b, err := pathUnescape(body); err == nil {
		body = b
	}
	n, err := parseSSLegacyBody(body)
	if err != nil && strings.HasSuffix(body, "/") {
		if m, err2 := parseSSLegacyBody(strings.TrimSuffix(body, "/")); err2 == nil {
			n, err = m, nil
		}
	}
	if err != nil {
		return nil, err
	}
	n.Name = (&uri{fragment: frag}).name()
	return n, nil
}

func parseSSLegacyBody(body string) (*node.Node, error) {
	const s = schemeSS
	dec, ok := decodeBase64(body)
	if !ok {
		return nil, errf(s, "userinfo", "no '@' and not base64 of method:password@host:port")
	}
	at := strings.LastIndexByte(dec, '@')
	if at < 0 {
		return nil, errf(s, "userinfo", "base64 form without '@'")
	}
	method, password, found := strings.Cut(dec[:at], ":")
	if !found {
		return nil, errf(s, "userinfo", "base64 form without method:password")
	}
	host, portStr, err := splitHostPort(s, dec[at+1:])
	if err != nil {
		return nil, err
	}
	port, err := parsePort(s, portStr, 0)
	if err != nil {
		return nil, err
	}
	o, err := ssOptions(method, password)
	if err != nil {
		return nil, err
	}
	return &node.Node{Protocol: node.Shadowsocks, Server: host, Port: port, Shadowsocks: o}, nil
}

// ssOptions checks the method and, for the 2022 ciphers, that the password
// is base64 of a key of the right length (several keys joined by ':' for
// multi-user servers).
func ssOptions(method, password string) (*node.ShadowsocksOptions, error) {
	const s = schemeSS
	method = strings.ToLower(method)
	keyLen, ok := ssMethods[method]
	if !ok {
		if isToken(method) && len(method) <= 40 {
			return nil, errf(s, "method", "unsupported %q", method)
		}
		return nil, errf(s, "method", "unsupported")
	}
	switch {
	case keyLen > 0:
		for _, k := range strings.Split(password, ":") {
			b, err := base64.StdEncoding.DecodeString(k)
			if err != nil || len(b) != keyLen {
				return nil, errf(s, "password", "not base64 of a %d-byte key", keyLen)
			}
		}
	case password == "" && method != "none" && method != "plain":
		return nil, errf(s, "password", "empty")
	}
	return &node.ShadowsocksOptions{Method: method, Password: password}, nil
}

func formatSS(n *node.Node) (string, error) {
	const s = schemeSS
	o := n.Shadowsocks
	if _, err := ssOptions(o.Method, o.Password); err != nil {
		return "", err
	}
	var q query
	switch {
	case o.Plugin != "":
		if strings.ContainsRune(o.Plugin, ';') || strings.TrimSpace(o.Plugin) != o.Plugin {
			return "", errf(s, "plugin", "name contains ';' or spaces")
		}
		p := o.Plugin
		if o.PluginOpts != "" {
			p += ";" + o.PluginOpts
		}
		q.add("plugin", p)
	case o.PluginOpts != "":
		return "", errf(s, "pluginOpts", "set without a plugin")
	}
	if o.UDPOverTCP {
		q.add("udp-over-tcp", "true")
		// The link's default is Clash's, 1; the node's (0) is 2.
		if o.UDPOverTCPVersion != 1 {
			q.add("udp-over-tcp-version", strconv.Itoa(max(o.UDPOverTCPVersion, 2)))
		}
	}
	userinfo := base64.RawURLEncoding.EncodeToString([]byte(o.Method + ":" + o.Password))
	if is2022(o.Method) {
		userinfo = escape(o.Method) + ":" + escape(o.Password)
	}
	path := ""
	if q.String() != "" {
		path = "/"
	}
	return joinURI(s, userinfo, n, "", path, &q), nil
}

// decodeBase64 decodes standard or URL-safe base64, padded or not, and
// ignores line breaks and spaces inside it.
func decodeBase64(s string) (string, bool) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\r', '\n', ' ', '\t':
			return -1
		case '-':
			return '+'
		case '_':
			return '/'
		}
		return r
	}, s)
	s = strings.TrimRight(s, "=")
	if s == "" {
		return "", false
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return "", false
	}
	return string(b), true
}
