// Package subscription turns what a provider serves into nodes: it fetches
// a subscription URL (with the headers that carry remaining traffic, expiry
// and the refresh interval), detects the body's format — base64 or plain
// share-link lists, Clash/mihomo YAML, sing-box JSON, SIP008 JSON — and maps
// each entry to a node.Node, reporting every entry it could not use with its
// line and reason instead of failing the whole import. Refresher keeps
// subscriptions current in the background without ever replacing a good
// node list with a bad one.
package subscription

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
	"gopkg.in/yaml.v3"
)

// MaxBodySize is the largest subscription body accepted: real ones with
// thousands of nodes are well under 1 MiB.
const MaxBodySize = 16 << 20

// Format names a subscription body's format.
type Format string

// Formats Detect recognizes.
const (
	FormatURIList Format = "uri-list" // one share link per line
	FormatBase64  Format = "base64"   // a base64-encoded share-link list
	FormatClash   Format = "clash"    // Clash / mihomo YAML with proxies:
	FormatSingBox Format = "sing-box" // sing-box JSON with outbounds
	FormatSIP008  Format = "sip008"   // Shadowsocks SIP008 JSON
)

// Errors for bodies that hold no usable subscription. Parse wraps them with
// details.
var (
	ErrEmpty         = errors.New("the subscription is empty")
	ErrHTML          = errors.New("the server sent a web page, not a subscription (check the URL, or whether the provider wants you to log in)")
	ErrUnknownFormat = errors.New("unrecognized subscription format (expected share links, base64, Clash YAML, sing-box JSON or SIP008 JSON)")
	ErrNoNodes       = errors.New("no node could be imported")
	ErrTooLarge      = fmt.Errorf("the subscription is larger than %d MiB", MaxBodySize>>20)
)

// Result is what Parse found.
type Result struct {
	Format   Format
	Nodes    []*node.Node       // every server found, including those Skiff cannot dial yet (see protocol.Supported)
	Warnings []profile.Warning  // entries that were skipped, with line and reason
	UserInfo *profile.UserInfo  // traffic figures carried in the body (SIP008), if any
	Groups   []Group            // the provider's own groups (Clash proxy-groups)
	Routes   *profile.SubRoutes // the body's own rules (Clash, sing-box); nil: none (see rules.go)
}

// add keeps n, the node of the entry at line, or when err is set records
// the entry as skipped for that reason; it reports whether n was kept.
func (r *Result) add(line int, n *node.Node, err error) bool {
	if err != nil {
		r.warn(line, err.Error())
		return false
	}
	r.Nodes = append(r.Nodes, n)
	return true
}

// warn records that the entry at line was skipped, and why.
func (r *Result) warn(line int, reason string) {
	r.Warnings = append(r.Warnings, profile.Warning{Line: line, Reason: reason})
}

// Unsupported counts the nodes protocol.Supported rejects.
func (r *Result) Unsupported() int {
	c := 0
	for _, n := range r.Nodes {
		if ok, _ := protocol.Supported(n); !ok {
			c++
		}
	}
	return c
}

// Parse detects body's format and parses it. Entries that cannot be used are
// listed in Result.Warnings and the rest still import. When nothing at all
// could be imported the error wraps ErrNoNodes and the Result, still
// non-nil, holds the warnings that say why.
func Parse(body []byte) (*Result, error) {
	d, err := detect(body, 0)
	if err != nil {
		return nil, err
	}
	res := &Result{Format: d.format}
	switch d.format {
	case FormatURIList, FormatBase64:
		parseURIList(d.text, res)
	case FormatClash:
		if err := parseClash(d.yaml, res); err != nil {
			return nil, err
		}
		parseClashRules(d.yaml, res)
	case FormatSingBox:
		if err := parseSingBox(d.text, res); err != nil {
			return nil, err
		}
		parseSingBoxRules(d.text, res)
	case FormatSIP008:
		if err := parseSIP008(d.text, res); err != nil {
			return nil, err
		}
	}
	res.clean()
	if len(res.Nodes) == 0 {
		if len(res.Warnings) == 0 {
			return res, fmt.Errorf("%w: the %s document lists no servers", ErrNoNodes, res.Format)
		}
		return res, fmt.Errorf("%w: all %d entries were skipped", ErrNoNodes, len(res.Warnings))
	}
	return res, nil
}

// Detect names body's format, or says why it is not a subscription.
func Detect(body []byte) (Format, error) {
	d, err := detect(body, 0)
	if err != nil {
		return "", err
	}
	return d.format, nil
}

type detection struct {
	format Format
	text   []byte     // the body without BOM; for base64, the decoded list
	yaml   *yaml.Node // the parsed document, for FormatClash
}

var bom = []byte("\xef\xbb\xbf")

func detect(body []byte, depth int) (detection, error) {
	if len(body) > MaxBodySize {
		return detection{}, ErrTooLarge
	}
	body = bytes.TrimPrefix(body, bom)
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return detection{}, ErrEmpty
	}
	if looksHTML(trimmed) {
		return detection{}, ErrHTML
	}
	switch trimmed[0] {
	case '{':
		return detectJSON(body)
	case '[':
		return detection{}, fmt.Errorf("%w: a JSON array, not an object with outbounds (sing-box) or servers (SIP008)", ErrUnknownFormat)
	}
	if hasURILine(body) {
		return detection{format: FormatURIList, text: body}, nil
	}
	if isBase64Text(trimmed) {
		dec, err := decodeBase64(trimmed)
		if err != nil {
			return detection{}, fmt.Errorf("the subscription looks like base64 but does not decode: %w", err)
		}
		if depth == 0 && utf8.Valid(dec) {
			if d, err := detect(dec, depth+1); err == nil && d.format == FormatURIList {
				d.format = FormatBase64
				return d, nil
			}
		}
		return detection{}, fmt.Errorf("%w: base64 that does not decode to share links", ErrUnknownFormat)
	}
	if !utf8.Valid(body) {
		return detection{}, fmt.Errorf("%w: binary data, not UTF-8 text", ErrUnknownFormat)
	}
	return detectYAML(body)
}

// looksHTML reports whether b starts like an HTML page (an error or login
// page served with status 200).
func looksHTML(b []byte) bool {
	head := b[:min(len(b), 512)]
	if head[0] != '<' {
		return false
	}
	lower := strings.ToLower(string(head))
	for _, p := range []string{"<!doctype html", "<html", "<head", "<body", "<!--", "<title", "<meta", "<div", "<script"} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return strings.Contains(lower, "<html")
}

// hasURILine reports whether any line starts with scheme://.
func hasURILine(b []byte) bool {
	for line := range bytes.Lines(b) {
		if isURILine(bytes.TrimSpace(line)) {
			return true
		}
	}
	return false
}

func isURILine(l []byte) bool {
	i := bytes.Index(l, []byte("://"))
	if i <= 0 || i > 32 {
		return false
	}
	for j, c := range l[:i] {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

func isBase64Text(b []byte) bool {
	for _, c := range b {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9',
			c == '+', c == '/', c == '-', c == '_', c == '=',
			c == '\r', c == '\n': // spaces inside mean words, not base64
		default:
			return false
		}
	}
	return true
}

// decodeBase64 decodes standard or URL-alphabet base64, padded or not, with
// line breaks or spaces anywhere.
func decodeBase64(b []byte) ([]byte, error) {
	clean := make([]byte, 0, len(b))
	url := false
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '-', '_':
			url = true
		}
		clean = append(clean, c)
	}
	clean = bytes.TrimRight(clean, "=")
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	out := make([]byte, enc.DecodedLen(len(clean)))
	n, err := enc.Decode(out, clean)
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

func detectJSON(body []byte) (detection, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return detection{}, jsonError(body, err)
	}
	switch {
	case top["outbounds"] != nil:
		return detection{format: FormatSingBox, text: body}, nil
	case top["servers"] != nil:
		return detection{format: FormatSIP008, text: body}, nil
	}
	return detection{}, fmt.Errorf("%w: JSON without outbounds (sing-box) or servers (SIP008)", ErrUnknownFormat)
}

// jsonError describes a JSON syntax error with its line.
func jsonError(body []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if se.Offset >= int64(len(bytes.TrimRight(body, " \t\r\n"))) {
			return fmt.Errorf("the JSON subscription is truncated (it ends at line %d before the document is complete)", lineAt(body, se.Offset))
		}
		return fmt.Errorf("invalid JSON at line %d: %v", lineAt(body, se.Offset), se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("invalid JSON at line %d: %v", lineAt(body, te.Offset), te)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// lineAt returns the 1-based line of byte offset off.
func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return bytes.Count(b[:off], []byte{'\n'}) + 1
}

func detectYAML(body []byte) (detection, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return detection{}, fmt.Errorf("%w: not YAML either (%v)", ErrUnknownFormat, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return detection{}, fmt.Errorf("%w: the text is not a list of share links", ErrUnknownFormat)
	}
	root := doc.Content[0]
	if mapValue(root, "proxies") != nil {
		return detection{format: FormatClash, yaml: root}, nil
	}
	if mapValue(root, "proxy-providers") != nil {
		return detection{}, fmt.Errorf("%w: this Clash config has no proxies of its own, only proxy-providers: import the provider URLs instead", ErrNoNodes)
	}
	return detection{}, fmt.Errorf("%w: YAML without a proxies: list", ErrUnknownFormat)
}

// mapValue returns the value of key in a YAML mapping, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
