package stack

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/transport/xhttp"
)

// xhttpConfig builds the XHTTP settings of n and the ALPN its TLS offers.
// As in Xray, extra is the whole configuration and the link's host, path
// and mode are put back over it when set. The HTTP version is Xray's
// choice: HTTP/1.1 without TLS or with ALPN exactly http/1.1, HTTP/3 with
// ALPN exactly h3 (refused), HTTP/2 otherwise and always under REALITY.
func xhttpConfig(proto string, n *node.Node) (xhttp.Config, []string, error) {
	addr := n.Address()
	t := n.Transport
	var opt node.XHTTP
	if t.XHTTP != nil {
		opt = *t.XHTTP
	}
	ex, err := xhttp.ParseExtra(opt.Extra)
	var ue *xhttp.UnsupportedError
	if errors.As(err, &ue) {
		return xhttp.Config{}, nil, node.Unsupportedf(node.FeatureTransport, "xhttp "+ue.Key, "%s: %s: %v", proto, addr, err)
	}
	if err != nil {
		return xhttp.Config{}, nil, fmt.Errorf("%s: %s: %w", proto, addr, err)
	}
	cfg := xhttp.Config{Host: ex.Host, Path: ex.Path, Mode: ex.Mode, Headers: map[string]string{},
		Padding: ex.Padding, NoGRPCHeader: ex.NoGRPCHeader, MaxEachPost: ex.MaxEachPost, MinPostsInterval: ex.MinPostsInterval}
	for k, v := range ex.Headers {
		cfg.Headers[k] = v
	}
	for k, v := range t.Headers {
		cfg.Headers[k] = v
	}
	if opt.Mode != "" {
		if cfg.Mode, err = xhttp.ParseMode(opt.Mode); err != nil {
			return xhttp.Config{}, nil, fmt.Errorf("%s: %s: xhttp: %w", proto, addr, err)
		}
	}
	if t.Path != "" {
		cfg.Path = t.Path
	}
	if t.Host != "" {
		cfg.Host = t.Host
	}
	for k, v := range cfg.Headers {
		if strings.EqualFold(k, "Host") && v != "" && cfg.Host == "" {
			cfg.Host = v
		}
	}
	reality := n.TLS != nil && n.TLS.Reality != nil
	cfg.Mode = xhttp.ResolveMode(cfg.Mode, reality)
	cfg.TLS = n.TLS != nil
	if cfg.Host == "" && n.TLS != nil && n.TLS.SNI != "" {
		cfg.Host = n.TLS.SNI
	}
	if cfg.Host == "" {
		cfg.Host = n.Server
		if strings.Contains(cfg.Host, ":") {
			cfg.Host = "[" + cfg.Host + "]"
		}
	}
	var alpn []string
	switch {
	case reality:
		// The ALPN a browser offers, for the hello the cover site sees;
		// REALITY reports none, and Xray's server speaks h2 under it.
		cfg.HTTP, alpn = xhttp.HTTP2, []string{"h2", "http/1.1"}
	case n.TLS == nil:
		cfg.HTTP = xhttp.HTTP1
	case slices.Equal(n.TLS.ALPN, []string{"h3"}):
		return xhttp.Config{}, nil, node.Unsupportedf(node.FeatureTransport, "xhttp h3", "%s: %s: XHTTP over HTTP/3 (alpn h3) is not supported yet", proto, addr)
	case slices.Equal(n.TLS.ALPN, []string{"http/1.1"}):
		cfg.HTTP, alpn = xhttp.HTTP1, []string{"http/1.1"}
	default:
		cfg.HTTP, alpn = xhttp.HTTP2, []string{"h2"}
	}
	if cfg.HTTP == xhttp.HTTP1 && cfg.Mode != xhttp.PacketUp {
		return xhttp.Config{}, nil, node.Unsupportedf(node.FeatureTransport, "xhttp "+string(cfg.Mode)+" over HTTP/1.1", "%s: %s: XHTTP %s needs HTTP/2 (TLS with alpn h2, or REALITY)", proto, addr, cfg.Mode)
	}
	return cfg, alpn, nil
}
