package harness

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// RealityKeys is a REALITY server's X25519 key pair, in the base64url form
// (no padding) that sing-box configurations and share links use.
type RealityKeys struct {
	Private, Public string
}

// NewRealityKeys makes a fresh key pair.
func NewRealityKeys() (RealityKeys, error) {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return RealityKeys{}, err
	}
	enc := base64.RawURLEncoding
	return RealityKeys{Private: enc.EncodeToString(k.Bytes()), Public: enc.EncodeToString(k.PublicKey().Bytes())}, nil
}

// TLSSite is a plain TLS 1.3 server on loopback standing for the real site
// a REALITY server borrows its handshake from (and a site a client may be
// pointed at by mistake). It answers any request with a short HTTP
// response and counts what clients send it after a completed handshake:
// a REALITY client that refuses it must leave AppBytes at zero.
type TLSSite struct {
	ln        net.Listener
	wg        sync.WaitGroup
	Conns     atomic.Int64 // TCP connections accepted
	Handshook atomic.Int64 // handshakes completed
	AppBytes  atomic.Int64 // application bytes received after a handshake
}

// StartTLSSite starts a TLSSite with cert. Close stops it.
func StartTLSSite(cert *Cert) (*TLSSite, error) {
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"h2", "http/1.1"},
	})
	if err != nil {
		return nil, err
	}
	s := &TLSSite{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.Conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					return
				}
				s.Handshook.Add(1)
				buf := make([]byte, 4096)
				n, _ := tc.Read(buf)
				s.AppBytes.Add(int64(n))
				if n > 0 {
					io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
				}
				for n > 0 {
					n, _ = tc.Read(buf)
					s.AppBytes.Add(int64(n))
				}
			}()
		}
	}()
	return s, nil
}

// Addr returns "127.0.0.1:port".
func (s *TLSSite) Addr() string { return s.ln.Addr().String() }

// Port returns the site's port.
func (s *TLSSite) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Close stops the site and waits for its connections to end.
func (s *TLSSite) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// realityTLS turns a sing-box server's TLS settings into REALITY's: the
// handshake borrowed from s.Site, the private key and the short id.
func (s *Server) realityTLS(tls map[string]any) {
	delete(tls, "certificate_path")
	delete(tls, "key_path")
	tls["reality"] = map[string]any{
		"enabled":     true,
		"handshake":   map[string]any{"server": "127.0.0.1", "server_port": s.Site.Port()},
		"private_key": s.Reality.Private,
		"short_id":    []string{s.ShortID},
	}
}
