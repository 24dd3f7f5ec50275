package subscription

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// clashXHTTPKeys maps mihomo's xhttp-opts keys to Xray's xhttpSettings
// names, which node.XHTTP.Extra holds (as a share link's extra= does).
var clashXHTTPKeys = map[string]string{
	"no-grpc-header":           "noGRPCHeader",
	"x-padding-bytes":          "xPaddingBytes",
	"x-padding-obfs-mode":      "xPaddingObfsMode",
	"x-padding-key":            "xPaddingKey",
	"x-padding-header":         "xPaddingHeader",
	"x-padding-placement":      "xPaddingPlacement",
	"x-padding-method":         "xPaddingMethod",
	"uplink-http-method":       "uplinkHTTPMethod",
	"session-placement":        "sessionPlacement",
	"session-key":              "sessionKey",
	"seq-placement":            "seqPlacement",
	"seq-key":                  "seqKey",
	"uplink-data-placement":    "uplinkDataPlacement",
	"uplink-data-key":          "uplinkDataKey",
	"sc-max-each-post-bytes":   "scMaxEachPostBytes",
	"sc-min-posts-interval-ms": "scMinPostsIntervalMs",
	"reuse-settings":           "xmux",
	"download-settings":        "downloadSettings",
}

// clashXHTTP reads mihomo's xhttp-opts: path, host, mode and headers go
// to the transport, the rest into Extra under Xray's names (nested maps,
// as reuse-settings, get their keys camel-cased: max-connections ->
// maxConnections). Keys mihomo does not document are ignored.
func clashXHTTP(o map[string]any) (*node.Transport, error) {
	t := &node.Transport{Type: node.TransportXHTTP}
	extra := map[string]any{}
	var mode string
	for k, v := range o {
		switch k {
		case "path", "host", "mode":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("xhttp-opts: %s: not a string", k)
			}
			switch k {
			case "path":
				t.Path = s
			case "host":
				t.Host = s
			case "mode":
				mode = strings.ToLower(strings.TrimSpace(s))
				switch mode {
				case "", "auto", "packet-up", "stream-up", "stream-one":
				default:
					return nil, fmt.Errorf("xhttp-opts: mode %q is not an XHTTP mode", s)
				}
			}
		case "headers":
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("xhttp-opts: headers: not a map")
			}
			t.Headers = map[string]string{}
			for hk, hv := range m {
				t.Headers[hk] = fmt.Sprint(hv)
			}
		default:
			if name, ok := clashXHTTPKeys[k]; ok && v != nil {
				extra[name] = camelKeys(v)
			}
		}
	}
	if len(t.Headers) > 0 && t.Host == "" {
		t.Host, t.Headers = splitHost(t.Headers)
	}
	if mode != "" || len(extra) > 0 {
		t.XHTTP = &node.XHTTP{Mode: mode}
		if len(extra) > 0 {
			b, err := json.Marshal(extra)
			if err != nil {
				return nil, fmt.Errorf("xhttp-opts: %v", err)
			}
			t.XHTTP.Extra = string(b)
		}
	}
	return t, nil
}

// camelKeys rewrites the keys of nested maps from kebab-case to camelCase.
func camelKeys(v any) any {
	switch m := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			parts := strings.Split(k, "-")
			for i := 1; i < len(parts); i++ {
				if parts[i] != "" {
					parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
				}
			}
			out[strings.Join(parts, "")] = camelKeys(v)
		}
		return out
	case []any:
		out := make([]any, len(m))
		for i, e := range m {
			out[i] = camelKeys(e)
		}
		return out
	}
	return v
}
