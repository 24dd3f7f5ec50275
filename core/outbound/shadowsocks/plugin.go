package shadowsocks

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/transport/readwait"
)

// pluginOpt is one key=value (or bare flag) of a SIP003 option string.
type pluginOpt struct{ key, val string }

// parsePluginOpts splits a SIP003 option string ("k=v;flag;k2=v2", with
// '\' escaping ';', '=' and '\') in order.
func parsePluginOpts(s string) ([]pluginOpt, error) {
	var out []pluginOpt
	var cur strings.Builder
	var key string
	inVal := false
	flush := func() {
		if inVal {
			out = append(out, pluginOpt{key: key, val: cur.String()})
		} else if cur.Len() > 0 {
			out = append(out, pluginOpt{key: cur.String()})
		}
		cur.Reset()
		key, inVal = "", false
	}
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\\':
			if i+1 == len(s) {
				return nil, errors.New("option string ends in '\\'")
			}
			i++
			cur.WriteByte(s[i])
		case ch == ';':
			flush()
		case ch == '=' && !inVal:
			key, inVal = cur.String(), true
			cur.Reset()
		default:
			cur.WriteByte(ch)
		}
	}
	flush()
	for i := range out {
		out[i].key = strings.TrimSpace(out[i].key)
		if out[i].key == "" {
			return nil, errors.New("option without a name")
		}
	}
	return out, nil
}

// obfsConfig is obfs-local's settings. In http mode the stream starts as
// an HTTP WebSocket upgrade request whose body is the first payload, and
// the server's first bytes are an HTTP response to skip; tls mode is
// obfsTLSConn.
type obfsConfig struct {
	tls  bool   // obfs=tls: the TLS disguise (obfsTLSConn) instead of HTTP
	sni  string // obfs=tls: the ClientHello's server name
	host string // Host header, with the port unless it is 80
	uri  string
}

func newObfsConfig(kv []pluginOpt, n *node.Node) (*obfsConfig, error) {
	mode, host, uri := "", "", "/"
	for _, o := range kv {
		switch o.key {
		case "obfs":
			mode = o.val
		case "obfs-host":
			host = o.val
		case "obfs-uri":
			uri = o.val
		case "fast-open":
		default:
			return nil, fmt.Errorf("option %q is not supported", o.key)
		}
	}
	switch mode {
	case "http":
	case "tls":
	case "":
		return nil, errors.New("option obfs missing (http or tls)")
	default:
		return nil, fmt.Errorf("obfs=%q is not a mode (http or tls)", mode)
	}
	if host == "" {
		host = "bing.com" // mihomo's default; obfs-local needs one given
	}
	if mode == "tls" {
		return &obfsConfig{tls: true, sni: host}, nil
	}
	if n.Port != 80 {
		host = net.JoinHostPort(host, strconv.Itoa(int(n.Port)))
	}
	if uri == "" || uri[0] != '/' {
		uri = "/" + uri
	}
	return &obfsConfig{host: host, uri: uri}, nil
}

// obfsHTTPConn wraps a TCP connection in simple-obfs's HTTP disguise.
type obfsHTTPConn struct {
	net.Conn
	cfg *obfsConfig

	wmu     sync.Mutex
	reqSent bool

	rmu      sync.Mutex
	respDone bool
	br       *bufio.Reader // while the response header is read; nil after
	waiters                // c's
}

func newObfsHTTPConn(c net.Conn, cfg *obfsConfig) *obfsHTTPConn {
	o := &obfsHTTPConn{Conn: c, cfg: cfg}
	o.waiters = waitersOf(c)
	return o
}

// Write sends the upgrade request with p as its body the first time, p
// alone after that.
func (o *obfsHTTPConn) Write(p []byte) (int, error) {
	o.wmu.Lock()
	if o.reqSent {
		o.wmu.Unlock()
		return o.Conn.Write(p)
	}
	defer o.wmu.Unlock()
	var key [16]byte
	rand.Read(key[:])
	var b bytes.Buffer
	b.Grow(256 + len(p))
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: curl/7.%d.%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nContent-Length: %d\r\n\r\n",
		o.cfg.uri, o.cfg.host, 50+randInt(30), randInt(3), base64.StdEncoding.EncodeToString(key[:]), len(p))
	b.Write(p)
	o.reqSent = true
	if _, err := o.Conn.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Read skips the server's HTTP response header before the first data.
func (o *obfsHTTPConn) Read(p []byte) (int, error) {
	o.rmu.Lock()
	defer o.rmu.Unlock()
	if !o.respDone {
		o.br = bufio.NewReaderSize(o.Conn, 1024)
		line, err := o.br.ReadSlice('\n')
		if err != nil {
			return 0, fmt.Errorf("obfs-local: response: %w", err)
		}
		if !bytes.HasPrefix(line, []byte("HTTP/1.1 101")) && !bytes.HasPrefix(line, []byte("HTTP/1.0 101")) {
			return 0, fmt.Errorf("obfs-local: response %q, want 101 Switching Protocols", bytes.TrimSpace(line[:min(len(line), 40)]))
		}
		for {
			line, err = o.br.ReadSlice('\n')
			if err != nil {
				return 0, fmt.Errorf("obfs-local: response header: %w", err)
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
		}
		o.respDone = true
	}
	if o.br != nil {
		if o.br.Buffered() > 0 {
			return o.br.Read(p)
		}
		o.br = nil
	}
	return o.Conn.Read(p)
}

// ReadWaiters offers WaitRead and TryRead where the connection underneath
// has them (readwait.Wrapper).
func (o *obfsHTTPConn) ReadWaiters() (readwait.Waiter, readwait.TryReader) {
	return o.waiters.offer(o, o)
}

// WaitRead waits for the server's next bytes once the response header is
// in (readwait.Waiter); before that it cannot wait.
func (o *obfsHTTPConn) WaitRead() bool {
	o.rmu.Lock()
	if !o.respDone {
		o.rmu.Unlock()
		return false
	}
	ready := o.br != nil && o.br.Buffered() > 0
	o.rmu.Unlock()
	return ready || o.waiters.wait()
}

// TryRead reads what has arrived, without waiting (readwait.TryReader);
// before the response header it reads nothing.
func (o *obfsHTTPConn) TryRead(p []byte) (int, error) {
	o.rmu.Lock()
	defer o.rmu.Unlock()
	if !o.respDone {
		return 0, nil
	}
	if o.br != nil && o.br.Buffered() > 0 {
		return o.br.Read(p) // from its buffer only
	}
	return o.waiters.try(p)
}

// CloseWrite ends the sending half of the TCP connection underneath.
func (o *obfsHTTPConn) CloseWrite() error {
	if cw, ok := o.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("obfs-local: transport cannot half-close")
}

// certPool reads v2ray-plugin's certRaw: a PEM certificate, or the base64
// body of one without its BEGIN/END lines.
func certPool(raw string) (*x509.CertPool, error) {
	data := []byte(raw)
	if !strings.Contains(raw, "-----BEGIN") {
		data = []byte("-----BEGIN CERTIFICATE-----\n" + raw + "\n-----END CERTIFICATE-----\n")
	}
	pool := x509.NewCertPool()
	found := false
	for {
		var blk *pem.Block
		blk, data = pem.Decode(data)
		if blk == nil {
			break
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		pool.AddCert(cert)
		found = true
	}
	if !found {
		return nil, errors.New("no certificate in it")
	}
	return pool, nil
}

// waiters are the readwait.Waiter and TryReader of the conn a plugin's
// layer wraps, each nil when it lacks one. A layer that frames the bytes
// waits on the conn below (any byte of a frame ends the wait: a Read may
// then still wait for the rest, holding its buffer) and tries it for what
// it knows is payload.
type waiters struct {
	w readwait.Waiter
	t readwait.TryReader
}

func waitersOf(c net.Conn) waiters {
	w, t := readwait.For(c)
	return waiters{w, t}
}

// offer returns w and t where the conn below has each (readwait.Wrapper).
func (ws waiters) offer(w readwait.Waiter, t readwait.TryReader) (readwait.Waiter, readwait.TryReader) {
	if ws.w == nil {
		w = nil
	}
	if ws.t == nil {
		t = nil
	}
	return w, t
}

// wait waits on the conn below; false when it cannot wait.
func (ws waiters) wait() bool { return ws.w != nil && ws.w.WaitRead() }

// framed is the read side of a plugin layer that frames its payload
// (obfs-local's TLS records, v2ray-plugin's Mux.Cool frames): rem bytes of
// the current frame's payload are still to come from the conn below. The
// layer's Read reads the headers under rmu; framed reads the payload.
type framed struct {
	rmu sync.Mutex
	rem int
	waiters
}

func framedOn(c net.Conn) framed { return framed{waiters: waitersOf(c)} }

// WaitRead waits for the conn below's next bytes, a frame's header or its
// payload (readwait.Waiter).
func (f *framed) WaitRead() bool { return f.waiters.wait() }

// TryRead reads what has arrived of the current frame's payload, without
// waiting (readwait.TryReader); the next frame's header is left to Read.
func (f *framed) TryRead(p []byte) (int, error) {
	f.rmu.Lock()
	defer f.rmu.Unlock()
	n, err := f.waiters.try(p[:min(len(p), f.rem)])
	f.rem -= n
	return n, err
}

// readPayload reads from c what fits in p of the current frame's payload
// (rmu held, rem > 0); an EOF inside it is io.ErrUnexpectedEOF.
func (f *framed) readPayload(c io.Reader, p []byte) (int, error) {
	n, err := c.Read(p[:min(len(p), f.rem)])
	f.rem -= n
	if err == io.EOF && f.rem > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// try reads what the conn below has at once; (0, nil) when it cannot.
func (ws waiters) try(p []byte) (int, error) {
	if ws.t == nil || len(p) == 0 {
		return 0, nil
	}
	return ws.t.TryRead(p)
}
