// Package link reads and writes proxy share links (hysteria2://, hy2://,
// vless://, vmess://, ss://, trojan://, tuic://, anytls://,
// wireguard://, wg://, Hiddify's ssh://): the one-line form in which users
// and subscriptions pass servers around.
//
// Parse turns one link into a validated node.Node; Format turns a node back
// into a canonical link that parses to an equal node. The formats come from
// each protocol's public documentation (hysteria.network URI scheme, the
// Xray VLESS share-link proposal, v2rayN's vmess JSON, SIP002/SIP022 for
// Shadowsocks, trojan-url) and from what common clients write, so Parse is
// lenient about aliases while Format always writes one canonical form.
//
// Links carry secrets: no error from this package contains a password,
// UUID, auth string or key.
package link

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/internal/safetext"
)

// Scheme names as they appear in errors. hy2:// reports as hysteria2.
const (
	schemeHysteria2 = "hysteria2"
	schemeVLESS     = "vless"
	schemeVMess     = "vmess"
	schemeSS        = "ss"
	schemeTrojan    = "trojan"
	schemeTUIC      = "tuic"
	schemeAnyTLS    = "anytls"
)

// Error is a link that could not be parsed or a node that could not be
// written as a link. It names the scheme and the field, never the value of
// a secret.
type Error struct {
	Scheme string // "hysteria2", "vless", …; empty when the scheme itself is the problem
	Field  string // "port", "uuid", "security", …
	Reason string // what is wrong with the field
}

// Error returns "link: scheme: field: reason".
func (e *Error) Error() string {
	if e.Scheme == "" {
		return "link: " + e.Reason
	}
	if e.Field == "" {
		return "link: " + e.Scheme + ": " + e.Reason
	}
	return "link: " + e.Scheme + ": " + e.Field + ": " + e.Reason
}

func errf(scheme, field, format string, args ...any) error {
	return &Error{Scheme: scheme, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// refuse is the error for a value v of field that is not accepted: v is
// quoted after reason only when it is a short token, so that a secret
// pasted into the wrong field is never echoed.
func refuse(scheme, field, reason, v string) error {
	if isToken(v) && len(v) <= 32 {
		return errf(scheme, field, "%s %q", reason, v)
	}
	return errf(scheme, field, "%s", reason)
}

// Parse reads one share link into a validated node. Leading and trailing
// white space and a byte-order mark are ignored. The name is the link's
// fragment, percent-decoded, through safetext.Clean (invalid UTF-8 becomes
// U+FFFD, control and bidi runes are removed); an empty name becomes
// "host:port".
func Parse(s string) (*node.Node, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "\uFEFF"))
	i := strings.Index(s, "://")
	if i <= 0 {
		return nil, &Error{Reason: "not a share link (no scheme://)"}
	}
	scheme, rest := strings.ToLower(s[:i]), s[i+3:]
	f := formatOfScheme(scheme)
	if f == nil {
		if !isToken(scheme) || len(scheme) > 16 {
			return nil, &Error{Reason: "unsupported scheme"}
		}
		return nil, &Error{Reason: fmt.Sprintf("unsupported scheme %q", scheme)}
	}
	n, err := f.parse(rest)
	if err != nil {
		return nil, err
	}
	// A name is for display: valid UTF-8, nothing a terminal acts on.
	n.Name = safetext.Clean(n.Name)
	if n.Name == "" {
		n.Name = n.Address()
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("link: %s: %w", schemeOf(n.Protocol), err)
	}
	return n, nil
}

// Format writes n as a canonical share link of its protocol. Parse of the
// result gives a node equal to n when n came from Parse. Settings that no
// share link can carry (extra transport headers, a custom early-data
// header) are an error rather than silently dropped.
func Format(n *node.Node) (string, error) {
	if n == nil {
		return "", &Error{Reason: "nil node"}
	}
	if err := n.Validate(); err != nil {
		return "", fmt.Errorf("link: %s: %w", schemeOf(n.Protocol), err)
	}
	if strings.IndexByte(n.Server, ':') >= 0 {
		if a, err := netip.ParseAddr(n.Server); err != nil || !a.Is6() || a.Zone() != "" {
			return "", errf(schemeOf(n.Protocol), "host", "not a host name or IP address")
		}
	} else if err := checkHostName(schemeOf(n.Protocol), n.Server); err != nil {
		return "", err
	}
	for i := range formats {
		if f := &formats[i]; f.protocol == n.Protocol {
			return f.format(n)
		}
	}
	return "", &Error{Reason: fmt.Sprintf("protocol %q has no share link", n.Protocol)}
}

// linkFormat is one protocol's share link: the schemes Parse reads it
// under, and its parser and writer.
type linkFormat struct {
	protocol string
	schemes  []string
	parse    func(rest string) (*node.Node, error)
	format   func(*node.Node) (string, error)
}

var formats = []linkFormat{
	{node.Hysteria2, []string{"hysteria2", "hy2"}, uriForm(schemeHysteria2, parseHysteria2), formatHysteria2},
	{node.VLESS, []string{"vless"}, uriForm(schemeVLESS, parseVLESS), formatVLESS},
	{node.VMess, []string{"vmess"}, parseVMess, formatVMess},
	{node.Shadowsocks, []string{"ss"}, parseSS, formatSS},
	{node.Trojan, []string{"trojan"}, uriForm(schemeTrojan, parseTrojan), formatTrojan},
	{node.TUIC, []string{"tuic"}, uriForm(schemeTUIC, parseTUIC), formatTUIC},
	{node.AnyTLS, []string{"anytls"}, uriForm(schemeAnyTLS, parseAnyTLS), formatAnyTLS},
	{node.SSH, []string{"ssh"}, uriForm(schemeSSH, parseSSH), formatSSH},
	{node.WireGuard, []string{"wireguard", "wg", "awg"}, uriForm(schemeWireGuard, parseWireGuard), formatWireGuard},
	{node.Hysteria, []string{"hysteria"}, uriForm(schemeHysteria, parseHysteria), formatHysteria},
}

// uriForm is the parser of a link in URL form: splitURI splits it, with
// errors under scheme, and parse reads the parts.
func uriForm(scheme string, parse func(*uri) (*node.Node, error)) func(rest string) (*node.Node, error) {
	return func(rest string) (*node.Node, error) {
		u, err := splitURI(scheme, rest)
		if err != nil {
			return nil, err
		}
		return parse(u)
	}
}

// formatOfScheme returns the format Parse reads scheme (lower case)
// under, or nil.
func formatOfScheme(scheme string) *linkFormat {
	for i := range formats {
		if slices.Contains(formats[i].schemes, scheme) {
			return &formats[i]
		}
	}
	return nil
}

func schemeOf(protocol string) string {
	if protocol == node.Shadowsocks {
		return schemeSS
	}
	if isToken(protocol) && len(protocol) <= 16 {
		return protocol
	}
	return "node"
}

// uri is a share link split into its parts. Go's net/url is not used: it
// rejects Hysteria2's multi-port authorities and is stricter than the
// links found in the wild about characters in user info.
type uri struct {
	scheme   string
	user     string // user info, percent-decoded
	hasUser  bool
	host     string // without brackets
	port     string // as written; "" when absent
	path     string // raw, "" or starting with '/'
	query    params
	fragment string // raw, still percent-encoded
}

// splitURI splits rest (the link after "scheme://") into its parts.
func splitURI(scheme, rest string) (*uri, error) {
	u := &uri{scheme: scheme}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, u.fragment = rest[:i], rest[i+1:]
	}
	rawQuery := ""
	hasQuery := false
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, rawQuery, hasQuery = rest[:i], rest[i+1:], true
	}
	// The user info ends at the last '@' so that an unescaped '@' or '/'
	// in a password (common in hand-written links) stays in the password.
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		raw := rest[:i]
		rest = rest[i+1:]
		user, err := pathUnescape(raw)
		if err != nil {
			return nil, errf(scheme, "userinfo", "bad percent-escape")
		}
		u.user, u.hasUser = user, true
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest, u.path = rest[:i], rest[i:]
	}
	host, port, err := splitHostPort(scheme, rest)
	if err != nil {
		return nil, err
	}
	u.host, u.port = host, port
	if hasQuery {
		q, err := parseQuery(scheme, rawQuery)
		if err != nil {
			return nil, err
		}
		u.query = q
	}
	return u, nil
}

// name is the link's name: the fragment, percent-decoded when it decodes.
func (u *uri) name() string {
	if s, err := pathUnescape(u.fragment); err == nil {
		return s
	}
	return u.fragment
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port". The
// port is returned as written (it may be a Hysteria2 port list).
func splitHostPort(scheme, hp string) (host, port string, err error) {
	if strings.HasPrefix(hp, "[") {
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return "", "", errf(scheme, "host", "missing ']' after IPv6 address")
		}
		host, rest := hp[1:end], hp[end+1:]
		a, perr := netip.ParseAddr(host)
		if perr != nil || !a.Is6() || a.Zone() != "" {
			return "", "", errf(scheme, "host", "not an IPv6 address in brackets")
		}
		host = a.String() // one spelling per address
		switch {
		case rest == "":
		case rest[0] == ':':
			port = rest[1:]
			if port == "" {
				return "", "", errf(scheme, "port", "empty")
			}
		default:
			return "", "", errf(scheme, "host", "junk after ']'")
		}
		return host, port, nil
	}
	host = hp
	if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		host, port = hp[:i], hp[i+1:]
		if port == "" {
			return "", "", errf(scheme, "port", "empty")
		}
	}
	if host == "" {
		return "", "", errf(scheme, "host", "empty")
	}
	if strings.IndexByte(host, ':') >= 0 {
		return "", "", errf(scheme, "host", "IPv6 address must be in brackets")
	}
	if err := checkHostName(scheme, host); err != nil {
		return "", "", err
	}
	return host, port, nil
}

// checkHostName accepts an IPv4 literal or an ASCII host name (IDNs must be
// written in their xn-- form, as the VLESS proposal requires).
func checkHostName(scheme, h string) error {
	if len(h) > 253 {
		return errf(scheme, "host", "longer than 253 bytes")
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= 0x80 {
			return errf(scheme, "host", "not ASCII (write an IDN as xn--…)")
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return errf(scheme, "host", "invalid character")
		}
	}
	return nil
}

// parsePort reads a single port. required=false allows "" (returns def).
func parsePort(scheme, s string, def uint16) (uint16, error) {
	if s == "" {
		if def == 0 {
			return 0, errf(scheme, "port", "missing")
		}
		return def, nil
	}
	if !allDigits(s) {
		return 0, errf(scheme, "port", "not a number")
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 || v > 65535 {
		if len(s) > 12 {
			return 0, errf(scheme, "port", "out of range")
		}
		return 0, errf(scheme, "port", "%q out of range", s)
	}
	return uint16(v), nil
}

// hostPort writes host:port with brackets around an IPv6 literal.
func hostPort(host, port string) string {
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// joinURI writes n's link as splitURI reads it: scheme://userinfo@
// server:port, path, q and #name. userinfo goes in as given (escape its
// parts first), and "" writes no '@'; port "" is n.Port.
func joinURI(scheme, userinfo string, n *node.Node, port, path string, q *query) string {
	if port == "" {
		port = strconv.Itoa(int(n.Port))
	}
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	if userinfo != "" {
		b.WriteString(userinfo)
		b.WriteByte('@')
	}
	b.WriteString(hostPort(n.Server, port))
	b.WriteString(path)
	b.WriteString(q.String())
	b.WriteByte('#')
	b.WriteString(escape(n.Name))
	return b.String()
}

// params is a decoded query string. The first of repeated keys wins.
type params map[string]string

func parseQuery(scheme, raw string) (params, error) {
	q := params{}
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		key, err := queryUnescape(k)
		if err != nil {
			return nil, errf(scheme, "query", "bad percent-escape in a parameter name")
		}
		val, err := queryUnescape(v)
		if err != nil {
			if isToken(key) && len(key) <= 32 {
				return nil, errf(scheme, key, "bad percent-escape")
			}
			return nil, errf(scheme, "query", "bad percent-escape")
		}
		if !utf8.ValidString(val) {
			if isToken(key) && len(key) <= 32 {
				return nil, errf(scheme, key, "not valid UTF-8")
			}
			return nil, errf(scheme, "query", "not valid UTF-8")
		}
		if _, dup := q[key]; !dup {
			q[key] = val
		}
	}
	return q, nil
}

// get returns the value of the first of keys that is present.
func (q params) get(keys ...string) string {
	for _, k := range keys {
		if v, ok := q[k]; ok {
			return v
		}
	}
	return ""
}

// has reports whether any of keys is present.
func (q params) has(keys ...string) bool {
	for _, k := range keys {
		if _, ok := q[k]; ok {
			return true
		}
	}
	return false
}

// boolean reads a flag written as 1/0/true/false (any case); absent is false.
func (q params) boolean(scheme string, keys ...string) (bool, error) {
	for _, k := range keys {
		v, ok := q[k]
		if !ok {
			continue
		}
		switch strings.ToLower(v) {
		case "1", "t", "true", "yes":
			return true, nil
		case "0", "f", "false", "no", "":
			return false, nil
		}
		if len(v) <= 8 && isToken(v) {
			return false, errf(scheme, k, "%q not a boolean", v)
		}
		return false, errf(scheme, k, "not a boolean")
	}
	return false, nil
}

// uint reads a non-negative integer no larger than max; absent is 0.
func (q params) number(scheme, key string, max int) (int, error) {
	v, ok := q[key]
	if !ok || v == "" {
		return 0, nil
	}
	if !allDigits(v) {
		return 0, errf(scheme, key, "not a number")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > max {
		return 0, errf(scheme, key, "out of range")
	}
	return n, nil
}

// query builds a query string in the order the pairs are added, escaping
// values as encodeURIComponent does (space as %20, never '+').
type query struct{ b strings.Builder }

func (q *query) add(k, v string) {
	if q.b.Len() == 0 {
		q.b.WriteByte('?')
	} else {
		q.b.WriteByte('&')
	}
	q.b.WriteString(k)
	q.b.WriteByte('=')
	q.b.WriteString(escape(v))
}

// addNonEmpty adds k=v when v is not empty.
func (q *query) addNonEmpty(k, v string) {
	if v != "" {
		q.add(k, v)
	}
}

func (q *query) String() string { return q.b.String() }

// escape percent-encodes everything but RFC 3986 unreserved characters.
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// pathUnescape decodes %XX escapes and leaves '+' alone (user info,
// fragments).
func pathUnescape(s string) (string, error) { return unescape(s, false) }

// queryUnescape decodes %XX escapes and '+' as a space, as form encoding
// (Go's url.Values, Python's urlencode) writes them.
func queryUnescape(s string) (string, error) { return unescape(s, true) }

var errEscape = errors.New("bad percent-escape")

func unescape(s string, plus bool) (string, error) {
	if strings.IndexByte(s, '%') < 0 && (!plus || strings.IndexByte(s, '+') < 0) {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", errEscape
			}
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		case c == '+' && plus:
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return string(b), nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isToken reports whether s is made only of characters safe to echo in an
// error (letters, digits, '-', '_', '.', '/').
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return false
		}
	}
	return s != ""
}

// checkUUID accepts the 8-4-4-4-12 hex form and returns it in lower case.
func checkUUID(scheme, s string) (string, error) {
	if s == "" {
		return "", errf(scheme, "uuid", "empty")
	}
	if len(s) != 36 {
		return "", errf(scheme, "uuid", "not a UUID")
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return "", errf(scheme, "uuid", "not a UUID")
			}
		default:
			if !isHex(s[i]) {
				return "", errf(scheme, "uuid", "not a UUID")
			}
		}
	}
	return strings.ToLower(s), nil
}

// pin normalises a certificate SHA-256 written as hex, with or without ':'
// or '-' between byte pairs (as the Hysteria client accepts), to 64
// lower-case hex digits.
func pin(scheme, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	h := strings.ToLower(strings.NewReplacer(":", "", "-", "").Replace(s))
	if len(h) != 64 {
		return "", errf(scheme, "pinSHA256", "want 64 hex digits")
	}
	for i := 0; i < len(h); i++ {
		if !isHex(h[i]) {
			return "", errf(scheme, "pinSHA256", "want 64 hex digits")
		}
	}
	return h, nil
}

// pinParam reads the pinned leaf-certificate SHA-256 from pinSHA256
// (Hysteria2's name) or pcs (pinnedPeerCertSha256, the Xray share-link
// standard's name since allowInsecure was removed from Xray).
func pinParam(scheme string, q params) (string, error) {
	for _, k := range []string{"pinSHA256", "pcs"} {
		v, ok := q[k]
		if !ok || v == "" {
			continue
		}
		if strings.IndexByte(v, ',') >= 0 {
			return "", errf(scheme, k, "several certificate hashes are not supported")
		}
		p, err := pin(scheme, v)
		if err != nil {
			return "", errf(scheme, k, "want 64 hex digits")
		}
		return p, nil
	}
	return "", nil
}

// splitList splits a comma-separated list, dropping empty items; nil when
// nothing is left.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
