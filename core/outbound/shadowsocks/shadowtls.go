package shadowsocks

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/transport/shadowtls"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// setShadowTLS reads shadow-tls's options (mihomo's plugin-opts: host,
// password, version, fingerprint (a certificate pin), skip-cert-verify,
// alpn (comma separated here); with client-fingerprint, the proxy's in
// Clash). A node that names no version is mihomo's default, 2.
func (c *Client) setShadowTLS(kv []pluginOpt) error {
	cfg := shadowtls.Config{}
	version := 2 // mihomo's default
	for _, o := range kv {
		switch o.key {
		case "host":
			cfg.ServerName = o.val
		case "password":
			cfg.Password = o.val
		case "version":
			v, err := strconv.Atoi(o.val)
			if err != nil {
				return errors.New("plugin shadow-tls: version: not a number")
			}
			version = v
		case "client-fingerprint":
			cfg.Fingerprint = o.val
		case "fingerprint":
			// mihomo's: the certificate's SHA-256, as its TLS options
			// name it (client-fingerprint is the ClientHello's).
			pin, err := tlsconf.ParsePin(o.val)
			if err != nil {
				return errors.New("plugin shadow-tls: fingerprint: want the site's certificate SHA-256, 64 hex digits (a ClientHello's name goes in client-fingerprint)")
			}
			cfg.PinSHA256 = pin
		case "alpn":
			cfg.ALPN = strings.Split(o.val, ",")
		case "skip-cert-verify", "insecure":
			cfg.Insecure = o.val == "" || o.val == "true" || o.val == "1"
		default:
			return node.Unsupportedf(node.FeaturePlugin, "shadow-tls "+o.key, "plugin shadow-tls: option %q is not supported", o.key)
		}
	}
	if version < 1 || version > 3 {
		return fmt.Errorf("plugin shadow-tls: version %d: want 1, 2 or 3", version)
	}
	cfg.Version = version
	stls, err := shadowtls.New(cfg)
	if err != nil {
		return fmt.Errorf("plugin %w", err)
	}
	c.stls = stls
	return nil
}
