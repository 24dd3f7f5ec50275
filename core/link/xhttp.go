package link

import (
	"encoding/json"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// xhttpTransport reads type=xhttp (or splithttp) with host, path, mode and
// extra, a JSON object of further settings kept as written (the transport
// reads it; one it cannot honour greys the node, with the reason).
func xhttpTransport(scheme string, q params) (*node.Transport, error) {
	mode := strings.ToLower(strings.TrimSpace(q.get("mode")))
	switch mode {
	case "", "auto", "packet-up", "stream-up", "stream-one":
	default:
		return nil, refuse(scheme, "mode", "unsupported", mode)
	}
	extra := strings.TrimSpace(q.get("extra"))
	if extra != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(extra), &obj); err != nil || obj == nil {
			return nil, errf(scheme, "extra", "not a JSON object")
		}
	}
	t := &node.Transport{Type: node.TransportXHTTP, Host: q.get("host"), Path: q.get("path")}
	if mode != "" || extra != "" {
		t.XHTTP = &node.XHTTP{Mode: mode, Extra: extra}
	}
	return t, nil
}
