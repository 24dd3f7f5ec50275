package sniff

import (
	"context"
	"crypto/tls"

	"github.com/quic-go/quic-go"
)

// dialQUIC starts a quic-go handshake toward addr and returns when ctx ends
// or the dial gives up.
func dialQUIC(ctx context.Context, addr, sni string, v2 bool) {
	conf := &quic.Config{}
	if v2 {
		conf.Versions = []quic.Version{quic.Version2}
	}
	c, err := quic.DialAddr(ctx, addr, &tls.Config{ServerName: sni, NextProtos: []string{"h3"}}, conf)
	if err == nil {
		_ = c.CloseWithError(0, "")
	}
}
