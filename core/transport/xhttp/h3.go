package xhttp

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// QUIC keepalive of HTTP/3 connections, as the HTTP/2 pings: a silent
// connection is pinged every 15 s and given up after 30 s without packets.
const (
	quicKeepAlive = 15 * time.Second
	quicIdle      = 30 * time.Second
)

// NewHTTP3 returns a client whose requests go over HTTP/3 (Xray's XHTTP
// with ALPN h3). dial opens one QUIC connection to the server with the
// TLS and QUIC settings given; the client's connections share nothing
// else. tlsConf must offer ALPN h3.
func NewHTTP3(cfg Config, tlsConf *tls.Config, dial func(ctx context.Context, tc *tls.Config, qc *quic.Config) (*quic.Conn, error)) (*Client, error) {
	cfg.HTTP = HTTP3
	cfg.TLS = true
	c, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	t := &http3.Transport{
		TLSClientConfig:    tlsConf,
		QUICConfig:         &quic.Config{KeepAlivePeriod: quicKeepAlive, MaxIdleTimeout: quicIdle},
		DisableCompression: true,
		Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, dialTimeout)
			defer cancel()
			return dial(ctx, tc, qc)
		},
	}
	c.rts, c.idle = []http.RoundTripper{t}, []func(){t.CloseIdleConnections}
	return c, nil
}
