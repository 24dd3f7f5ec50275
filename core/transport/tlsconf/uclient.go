package tlsconf

import (
	"fmt"
	"net"

	utls "github.com/refraction-networking/utls"
)

// UClient returns a uTLS client on conn that sends f's ClientHello with
// alpn as its ALPN list (none: the browser's own), for a layer that
// drives the handshake itself (ShadowTLS signs the hello's session id).
// The caller builds the hello (BuildHandshakeState) or lets the handshake
// do it.
func (f *Fingerprint) UClient(conn net.Conn, cfg *utls.Config, alpn []string) (*utls.UConn, error) {
	id, spec, err := f.hello(alpn)
	if err != nil {
		return nil, err
	}
	uc, err := newUClient(conn, cfg, id, spec)
	if err != nil {
		return nil, fmt.Errorf("tls: fingerprint %s: %w", f.name, err)
	}
	return uc, nil
}
