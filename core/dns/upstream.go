package dns

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
)

// Upstream resolves a query: it sends one DNS message and returns the
// response to it. Implementations are safe for concurrent use.
type Upstream interface {
	Exchange(ctx context.Context, msg []byte) ([]byte, error)
}

// DefaultTimeout bounds an exchange whose context has no deadline.
const DefaultTimeout = 5 * time.Second

// maxIdleStreams is how many idle TCP/TLS connections a stream upstream
// keeps for reuse.
const maxIdleStreams = 2

func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// UDPUpstream is DNS over UDP to Server, carried by Outbound. A truncated
// answer is asked again over TCP through the same outbound.
type UDPUpstream struct {
	Outbound outbound.Outbound
	Server   flow.Addr
}

// Exchange implements Upstream.
func (u *UDPUpstream) Exchange(ctx context.Context, msg []byte) ([]byte, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	pc, err := u.Outbound.ListenPacket(ctx, u.Server)
	if err != nil {
		return nil, fmt.Errorf("dns: udp to %s: %w", u.Server, err)
	}
	defer pc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = pc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := pc.WriteTo(msg, u.Server); err != nil {
		return nil, fmt.Errorf("dns: udp to %s: %w", u.Server, err)
	}
	buf := make([]byte, 65535)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("dns: udp to %s: %w", u.Server, err)
		}
		resp := buf[:n]
		if !matches(msg, resp) {
			continue // a stray or spoofed datagram
		}
		if len(resp) > 2 && resp[2]&0x02 != 0 { // TC: ask again over TCP
			c, err := u.Outbound.DialContext(ctx, "tcp", u.Server)
			if err != nil {
				return nil, fmt.Errorf("dns: tcp to %s: %w", u.Server, err)
			}
			defer c.Close()
			resp, err := roundTrip(ctx, c, msg)
			if err != nil {
				return nil, fmt.Errorf("dns: tcp to %s: %w", u.Server, err)
			}
			return resp, nil
		}
		return bytes.Clone(resp), nil
	}
}

// matches reports whether resp is a response with the query's ID and
// question.
func matches(query, resp []byte) bool {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return false
	}
	q, err := p.Question()
	if err != nil {
		return false
	}
	return isResponseTo(resp, &request{header: h, q: q})
}

// TCPUpstream is DNS over TCP to Server, carried by Outbound. It keeps a
// few idle connections for reuse; Close releases them.
type TCPUpstream struct {
	Outbound outbound.Outbound
	Server   flow.Addr

	pool streamPool
}

// Exchange implements Upstream.
func (u *TCPUpstream) Exchange(ctx context.Context, msg []byte) ([]byte, error) {
	resp, err := u.pool.exchange(ctx, msg, func(ctx context.Context) (net.Conn, error) {
		return u.Outbound.DialContext(ctx, "tcp", u.Server)
	})
	if err != nil {
		return nil, fmt.Errorf("dns: tcp to %s: %w", u.Server, err)
	}
	return resp, nil
}

// Close closes the idle connections.
func (u *TCPUpstream) Close() error { u.pool.close(); return nil }

// TLSUpstream is DNS over TLS (RFC 7858) to Server, carried by Outbound.
// Config may set the server name and roots; without a ServerName the
// server's host is used. It keeps a few idle connections for reuse; Close
// releases them.
type TLSUpstream struct {
	Outbound outbound.Outbound
	Server   flow.Addr
	Config   *tls.Config

	pool streamPool
}

// Exchange implements Upstream.
func (u *TLSUpstream) Exchange(ctx context.Context, msg []byte) ([]byte, error) {
	resp, err := u.pool.exchange(ctx, msg, func(ctx context.Context) (net.Conn, error) {
		raw, err := u.Outbound.DialContext(ctx, "tcp", u.Server)
		if err != nil {
			return nil, err
		}
		cfg := u.tlsConfig()
		c := tls.Client(raw, cfg)
		if err := c.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("dns: tls to %s: %w", u.Server, err)
	}
	return resp, nil
}

func (u *TLSUpstream) tlsConfig() *tls.Config {
	var cfg *tls.Config
	if u.Config != nil {
		cfg = u.Config.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Server.Host()
	}
	if len(cfg.NextProtos) == 0 {
		cfg.NextProtos = []string{"dot"}
	}
	return cfg
}

// Close closes the idle connections.
func (u *TLSUpstream) Close() error { u.pool.close(); return nil }

// streamPool runs length-prefixed exchanges over stream connections and
// keeps a few idle ones.
type streamPool struct {
	mu   sync.Mutex
	idle []net.Conn
}

func (sp *streamPool) exchange(ctx context.Context, msg []byte, dial func(context.Context) (net.Conn, error)) ([]byte, error) {
	if len(msg) > 65535 {
		return nil, errors.New("message too long")
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	// A reused connection may have been closed by the server while idle:
	// then try once more on a fresh one.
	for {
		c := sp.take()
		reused := c != nil
		if c == nil {
			var err error
			if c, err = dial(ctx); err != nil {
				return nil, err
			}
		}
		resp, err := roundTrip(ctx, c, msg)
		if err == nil {
			sp.put(c)
			return resp, nil
		}
		c.Close()
		if !reused || ctx.Err() != nil {
			return nil, err
		}
	}
}

func (sp *streamPool) take() net.Conn {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if n := len(sp.idle); n > 0 {
		c := sp.idle[n-1]
		sp.idle = sp.idle[:n-1]
		return c
	}
	return nil
}

func (sp *streamPool) put(c net.Conn) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if len(sp.idle) < maxIdleStreams {
		sp.idle = append(sp.idle, c)
		return
	}
	c.Close()
}

func (sp *streamPool) close() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, c := range sp.idle {
		c.Close()
	}
	sp.idle = nil
}

// roundTrip writes msg with its length prefix and reads the matching
// response.
func roundTrip(ctx context.Context, c net.Conn, msg []byte) ([]byte, error) {
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	out := make([]byte, 2+len(msg))
	binary.BigEndian.PutUint16(out, uint16(len(msg)))
	copy(out[2:], msg)
	if _, err := c.Write(out); err != nil {
		return nil, err
	}
	for {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return nil, err
		}
		resp := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, resp); err != nil {
			return nil, err
		}
		if matches(msg, resp) {
			_ = c.SetDeadline(time.Time{})
			return resp, nil
		}
		// An answer to an earlier, abandoned query: skip it.
	}
}

// HTTPSUpstream is DNS over HTTPS (RFC 8484, POST with
// application/dns-message) carried by an Outbound. HTTP/2 is used when the
// server offers it, and connections are kept for reuse.
type HTTPSUpstream struct {
	url    string
	host   string
	client *http.Client
	tr     *http.Transport
}

// NewHTTPSUpstream returns a DoH upstream for the URL (for example
// "https://dns.google/dns-query"), whose connections ob carries. The
// URL's host reaches the outbound as a name, unresolved. cfg may set
// roots or a server name; nil uses the system roots.
func NewHTTPSUpstream(ob outbound.Outbound, rawURL string, cfg *tls.Config) (*HTTPSUpstream, error) {
	// Errors do not quote the URL: its path may identify an account.
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("dns: DoH URL: %w", bareURLError(err))
	}
	if u.Scheme != "https" || u.Hostname() == "" {
		return nil, errors.New("dns: DoH URL: want https://host/path")
	}
	if cfg != nil {
		cfg = cfg.Clone()
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			p, err := strconv.ParseUint(port, 10, 16)
			if err != nil {
				return nil, err
			}
			return ob.DialContext(ctx, "tcp", flow.NameAddr(host, uint16(p)))
		},
		TLSClientConfig:     cfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: DefaultTimeout,
		DisableCompression:  true,
	}
	return &HTTPSUpstream{url: u.String(), host: u.Host, client: &http.Client{Transport: tr}, tr: tr}, nil
}

// Exchange implements Upstream. The query is sent with ID 0, as RFC 8484
// asks, and the response given the query's ID back.
func (u *HTTPSUpstream) Exchange(ctx context.Context, msg []byte) ([]byte, error) {
	if len(msg) < 12 {
		return nil, errShortMessage
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	body := bytes.Clone(msg)
	body[0], body[1] = 0, 0
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("dns: https to %s: %w", u.host, err)
	}
	req.Header.Set("Content-Type", "application/dns-message")
	req.Header.Set("Accept", "application/dns-message")
	res, err := u.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dns: https to %s: %w", u.host, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("dns: https to %s: status %s", u.host, res.Status)
	}
	resp, err := io.ReadAll(io.LimitReader(res.Body, 65536))
	if err != nil {
		return nil, fmt.Errorf("dns: https to %s: %w", u.host, err)
	}
	if len(resp) < 12 || len(resp) > 65535 {
		return nil, fmt.Errorf("dns: https to %s: response of %d bytes", u.host, len(resp))
	}
	resp[0], resp[1] = msg[0], msg[1]
	if !matches(msg, resp) {
		return nil, fmt.Errorf("dns: https to %s: response does not answer the query", u.host)
	}
	return resp, nil
}

// Close closes idle connections.
func (u *HTTPSUpstream) Close() error { u.tr.CloseIdleConnections(); return nil }
