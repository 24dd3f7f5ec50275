package mixed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/guard"
)

// serveHTTP serves an HTTP proxy client: CONNECT tunnels, and plain
// requests with an absolute URI, forwarded with keep-alive on both sides.
// lim is the reader under br, which bounds the request's head.
func (s *Server) serveHTTP(c net.Conn, br *bufio.Reader, lim *io.LimitedReader, src netip.AddrPort) error {
	req, err := readRequest(br, lim)
	if err != nil {
		if errors.Is(err, errHeadTooLarge) {
			writeHTTPError(c, http.StatusRequestHeaderFieldsTooLarge, "request header too large")
		} else {
			writeHTTPError(c, http.StatusBadRequest, "malformed request")
		}
		return fmt.Errorf("http: request: %w", err)
	}
	if err := s.authorize(c, req); err != nil {
		return err
	}
	if req.Method == http.MethodConnect {
		return s.httpConnect(c, br, src, req)
	}
	return s.httpForward(c, br, lim, src, req)
}

// authorize answers 407 and returns an error unless the proxy needs no
// credentials or req carries the right ones. Every request on a
// connection carries them, as HTTP's proxy authentication is per request.
func (s *Server) authorize(c net.Conn, req *http.Request) error {
	if s.auth == nil {
		return nil
	}
	user, pass, ok := proxyBasic(req.Header)
	if ok && s.auth.match(user, pass) {
		return nil
	}
	writeProxyAuthRequired(c)
	if !ok {
		return errors.New("http: no proxy credentials")
	}
	return errors.New("http: wrong proxy username or password")
}

// maxRequestHead bounds a request's line and headers, as net/http's server
// bounds them by default (DefaultMaxHeaderBytes, 1 MiB). http.ReadRequest
// itself takes lines of any length and any number of header fields, so
// without a bound one client could fill the memory with a single endless
// header line within its handshake timeout.
const maxRequestHead = http.DefaultMaxHeaderBytes

var errHeadTooLarge = fmt.Errorf("request head longer than %d bytes", maxRequestHead)

// noLimit is a LimitedReader's N when it does not limit.
const noLimit = math.MaxInt64

// readRequest reads the next request's head from br, at most
// maxRequestHead bytes of it from the conn under lim, the LimitedReader
// between the conn and br (what br had buffered before comes on top, as
// with net/http's server).
func readRequest(br *bufio.Reader, lim *io.LimitedReader) (*http.Request, error) {
	lim.N = maxRequestHead
	req, err := http.ReadRequest(br)
	exhausted := lim.N <= 0
	lim.N = noLimit // the body, and a CONNECT tunnel's bytes, are not limited
	if err != nil && exhausted {
		return nil, errHeadTooLarge
	}
	return req, err
}

// httpConnect serves CONNECT: "200" is sent only once the handler has its
// upstream, "502" with the reason otherwise.
func (s *Server) httpConnect(c net.Conn, br *bufio.Reader, src netip.AddrPort, req *http.Request) error {
	dst, err := hostPortAddr(req.Host, "443")
	if err != nil {
		writeHTTPError(c, http.StatusBadRequest, err.Error())
		return fmt.Errorf("http: connect: %w", err)
	}
	m := flow.Metadata{Network: flow.TCP, Source: src, Destination: dst, Inbound: "http"}
	accepted := false
	err = s.h.HandleStream(s.ctx, m, func() (net.Conn, error) {
		accepted = true
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return nil, fmt.Errorf("http: reply: %w", err)
		}
		return clientConn(c, br), nil
	})
	if err != nil && !accepted {
		writeHTTPError(c, http.StatusBadGateway, err.Error())
	}
	if err != nil {
		return fmt.Errorf("http: connect %s: %w", dst, err)
	}
	return nil
}

// httpForward forwards plain requests, one after another on the client's
// connection, through an http.Transport whose connections are flows of
// the handler. The Transport is the client's own, so upstream connections
// are reused for this client only, and are closed with it.
func (s *Server) httpForward(c net.Conn, br *bufio.Reader, lim *io.LimitedReader, src netip.AddrPort, req *http.Request) error {
	tr := &http.Transport{
		Proxy:                 nil, // never the environment's proxy: we are the proxy
		DialContext:           s.dialFlow(src),
		DisableCompression:    true, // pass the body as the server sent it
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
	defer tr.CloseIdleConnections()
	bw := bufio.NewWriterSize(c, 4096)
	for {
		if !req.URL.IsAbs() || req.URL.Host == "" {
			writeHTTPError(c, http.StatusBadRequest, "this is a proxy: requests need an absolute URI")
			return fmt.Errorf("http: request for %q without absolute URI", req.URL.Path)
		}
		c.SetDeadline(time.Time{})
		removeHopHeaders(req.Header)
		req.RequestURI = ""
		req = req.WithContext(s.ctx)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			writeHTTPError(c, http.StatusBadGateway, err.Error())
			return fmt.Errorf("http: %s %s: %w", req.Method, req.URL.Host, err)
		}
		removeHopHeaders(resp.Header)
		keep := !req.Close && !resp.Close &&
			(resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 || req.Method == http.MethodHead)
		resp.Close = !keep
		err = resp.Write(bw)
		resp.Body.Close()
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return fmt.Errorf("http: response to client: %w", err)
		}
		if !keep {
			return nil
		}
		c.SetDeadline(time.Now().Add(idleClientTimeout))
		req, err = readRequest(br, lim)
		if errors.Is(err, errHeadTooLarge) {
			writeHTTPError(c, http.StatusRequestHeaderFieldsTooLarge, "request header too large")
			return fmt.Errorf("http: request: %w", err)
		}
		if err != nil {
			return nil // the client closed or went idle
		}
		if err := s.authorize(c, req); err != nil {
			return err
		}
		if req.Method == http.MethodConnect {
			return s.httpConnect(c, br, src, req)
		}
	}
}

// idleClientTimeout is how long a keep-alive client connection may wait
// for its next request.
const idleClientTimeout = 2 * time.Minute

// dialFlow returns a DialContext for http.Transport that opens each
// upstream connection as a flow of the handler: the handler dials, then
// accepts one end of an in-memory pipe whose other end the Transport uses.
func (s *Server) dialFlow(src netip.AddrPort) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, addr string) (net.Conn, error) {
		dst, err := flow.ParseAddr(addr)
		if err != nil {
			return nil, err
		}
		m := flow.Metadata{Network: flow.TCP, Source: src, Destination: dst, Inbound: "http"}
		pipeApp, ours := net.Pipe()
		appSide := halfClosePipe{pipeApp}
		accepted := make(chan struct{})
		done := make(chan error, 1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			err := guard.Do(s.ctx, "http flow", func() error {
				return s.h.HandleStream(s.ctx, m, func() (net.Conn, error) {
					close(accepted)
					return appSide, nil
				})
			})
			appSide.Close()
			done <- err
		}()
		select {
		case <-accepted:
			return ours, nil
		case err := <-done:
			ours.Close()
			if err == nil {
				err = errors.New("flow ended before it was accepted")
			}
			return nil, err
		case <-ctx.Done():
			ours.Close()
			return nil, ctx.Err()
		}
	}
}

// halfClosePipe is the relay's end of the pipe to the Transport. A pipe
// cannot half-close, and the Transport needs the EOF when a server ends a
// response by closing, so CloseWrite closes the pipe: the request has been
// written by then.
type halfClosePipe struct{ net.Conn }

// CloseWrite closes the pipe.
func (p halfClosePipe) CloseWrite() error { return p.Conn.Close() }

// hostPortAddr parses a CONNECT target or Host header, adding defPort when
// the port is missing.
func hostPortAddr(hostport, defPort string) (flow.Addr, error) {
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		hostport = net.JoinHostPort(strings.Trim(hostport, "[]"), defPort)
	}
	return flow.ParseAddr(hostport)
}

// hopHeaders are the headers of one hop, not passed on (RFC 9110 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// writeHTTPError writes a short plain-text error response and asks the
// client to close.
func writeHTTPError(w io.Writer, code int, msg string) {
	body := "skiff: " + msg + "\n"
	io.WriteString(w, "HTTP/1.1 "+strconv.Itoa(code)+" "+http.StatusText(code)+"\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\n"+
		"Connection: close\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
}
