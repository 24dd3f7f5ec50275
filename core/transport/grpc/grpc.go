// Package grpc is V2Ray's gRPC transport ("gun"), as Xray, sing-box and
// mihomo speak it without a gRPC library: each proxy stream is one
// streaming call, POST /<service>/Tun (or /TunMulti), whose messages are
// protobuf Hunks carrying the bytes. The HTTP/2 underneath is core/transport/h2's
// client, so that many streams share a connection with its keepalive pings;
// this package adds the call's headers, the message framing and the
// grpc-status of the trailers.
package grpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/net/http2/hpack"

	"github.com/skiffvpn/skiff/core/transport/h2"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// Config is what each call says.
type Config struct {
	ServiceName string // "name", or Xray's custom path "/a/b/Stream"
	Multi       bool   // TunMulti (MultiHunk) instead of Tun (Hunk)
	Authority   string // the :authority (required)
	UserAgent   string // empty: defaultUserAgent
	Plain       bool   // h2c with prior knowledge, for a server without TLS
}

// defaultUserAgent is what sing-box's and mihomo's clients send, which
// servers and CDNs in front of them expect of a gRPC client.
const defaultUserAgent = "grpc-go/1.48.0"

// Path is the call's path: "/<service>/Tun" or "/<service>/TunMulti",
// the service path-escaped. A service that starts with "/" is Xray's
// custom path: "/a/b/c" calls service "a/b", method "c" in either mode.
func Path(service string, multi bool) string {
	if !strings.HasPrefix(service, "/") {
		method := "Tun"
		if multi {
			method = "TunMulti"
		}
		return "/" + url.PathEscape(service) + "/" + method
	}
	last := max(strings.LastIndexByte(service, '/'), 1)
	parts := strings.Split(service[1:last], "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	// The server's form "/a/b/Tun|Multi" names both methods.
	methods := strings.Split(service[strings.LastIndexByte(service, '/')+1:], "|")
	method := methods[0]
	if multi && len(methods) > 1 {
		method = methods[1]
	}
	return "/" + strings.Join(parts, "/") + "/" + url.PathEscape(method)
}

// StatusError is a call the server ended with a grpc-status other than 0.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	name := ""
	if e.Code >= 0 && e.Code < len(codeNames) {
		name = " (" + codeNames[e.Code] + ")"
	}
	if e.Message == "" {
		return fmt.Sprintf("grpc: server ended the call with status %d%s", e.Code, name)
	}
	return fmt.Sprintf("grpc: server ended the call with status %d%s: %s", e.Code, name, e.Message)
}

var codeNames = [...]string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"}

// check reads a response's headers or trailers: the content type must be
// gRPC's, and a grpc-status other than 0 ends the call with its message.
func check(fields []hpack.HeaderField, end bool) error {
	var ctype, status, msg string
	for _, f := range fields {
		switch f.Name {
		case "content-type":
			ctype = f.Value
		case "grpc-status":
			status = f.Value
		case "grpc-message":
			msg = f.Value
		}
	}
	if status != "" && status != "0" {
		code := -1
		fmt.Sscanf(status, "%d", &code)
		if m, err := url.PathUnescape(msg); err == nil {
			msg = m
		}
		return &StatusError{Code: code, Message: msg}
	}
	// Trailers have no content type; the response headers must.
	if !end && !strings.HasPrefix(ctype, "application/grpc") {
		return fmt.Errorf("grpc: response content-type %q, not application/grpc", ctype)
	}
	return nil
}

// Client opens calls on shared HTTP/2 connections.
type Client struct {
	h2 *h2.Client
}

// New returns a client whose connections come from dial: a TLS
// connection that negotiated h2, or with cfg.Plain a TCP connection.
func New(cfg Config, dial func(ctx context.Context) (net.Conn, error)) (*Client, error) {
	if cfg.Authority == "" {
		return nil, errors.New("grpc: no authority")
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = defaultUserAgent
	}
	scheme := "https"
	if cfg.Plain {
		scheme = "http"
	}
	c, err := h2.New(h2.Config{
		Host: cfg.Authority, Path: Path(cfg.ServiceName, cfg.Multi), Method: "POST", Scheme: scheme,
		// te: trailers is what the gRPC spec and CDNs ask for, though
		// grpc-go does not insist.
		Headers: map[string]string{"content-type": "application/grpc", "te": "trailers", "user-agent": ua},
		Check:   check,
		NoWait:  true,
	}, dial)
	if err != nil {
		return nil, fmt.Errorf("grpc: %w", err)
	}
	return &Client{h2: c}, nil
}

// Dial opens one call and returns it as a byte stream once the request
// is sent (bounded by ctx): the servers answer with their first bytes,
// after the client's. A refusal is Read's error.
func (c *Client) Dial(ctx context.Context) (net.Conn, error) {
	s, err := c.h2.Dial(ctx)
	if err != nil {
		var se *StatusError
		if errors.As(err, &se) {
			return nil, se
		}
		return nil, fmt.Errorf("grpc: %w", err)
	}
	return &conn{Conn: s, rd: reader{r: s}}, nil
}

// Close closes idle connections now and busy ones after their last call.
func (c *Client) Close() { c.h2.Close() }

// conn is one call: Write sends each chunk as a message, Read returns
// the data of the messages received.
type conn struct {
	net.Conn // the HTTP/2 stream
	rd       reader
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, prefixLen+4+maxChunk); return &b }}

func (c *conn) Read(p []byte) (int, error) { return c.rd.Read(p) }

func (c *conn) Write(p []byte) (int, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	total := 0
	for len(p) > 0 {
		n := min(len(p), maxChunk)
		b := append(appendHeader((*bp)[:0], n), p[:n]...)
		if _, err := c.Conn.Write(b); err != nil {
			return total, err
		}
		total += n
		p = p[n:]
	}
	return total, nil
}

// CloseWrite half-closes the call: the server reads EOF.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// WaitRead waits on the stream: the reader holds no bytes of its own.
func (c *conn) WaitRead() bool {
	if w, ok := c.Conn.(readwait.Waiter); ok {
		return w.WaitRead()
	}
	return false
}
