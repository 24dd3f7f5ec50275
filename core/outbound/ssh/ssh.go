// Package ssh is the SSH outbound (Clash type: ssh, sing-box ssh): each
// stream is a direct-tcpip channel (RFC 4254 §7.2) of one SSH connection
// that all the outbound's flows share, dialled on first use and again once
// it dies. The destination's name goes to the server unresolved.
//
// The server's host key must be pinned (SSHOptions.HostKeys): sing-box and
// mihomo accept any key when none is given, which lets anyone on the path
// read the flows and, with password login, take the password. Skiff
// refuses such a node instead, and says how to pin the key.
//
// SSH carries no UDP: ListenPacket fails with errors.ErrUnsupported.
package ssh

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
)

// DefaultClientVersion is the identification string sent when the node
// names none: an OpenSSH client's, as sing-box and mihomo send, rather
// than x/crypto's "SSH-2.0-Go", which marks the client.
const DefaultClientVersion = "SSH-2.0-OpenSSH_9.6p1"

// Keepalive timing: a keepalive@openssh.com request every
// KeepaliveInterval; no reply within KeepaliveTimeout closes the
// connection, so that the next flow dials a fresh one instead of waiting
// on a dead one (a NAT that forgot the mapping, a server that restarted).
const (
	KeepaliveInterval = 15 * time.Second
	KeepaliveTimeout  = 10 * time.Second
)

// handshakeTimeout bounds the SSH handshake and login when the flow's
// context has no deadline.
const handshakeTimeout = 15 * time.Second

// ErrHostKeyMismatch is returned (wrapped) when the server presents a key
// that is not pinned.
var ErrHostKeyMismatch = errors.New("the server's host key is not the pinned one")

// ErrNoUDP is returned (wrapped) by ListenPacket.
var ErrNoUDP = fmt.Errorf("SSH carries TCP only (direct-tcpip channels), no UDP: %w", errors.ErrUnsupported)

// Client is an SSH outbound through one server.
type Client struct {
	addr   string // server:port
	cfg    *ssh.ClientConfig
	dialer outbound.Dialer

	sem chan struct{} // one dial of the connection at a time

	mu     sync.Mutex
	conn   *ssh.Client // current connection; nil: none yet or it died
	closed bool
	stop   chan struct{} // closed by Close
	wg     sync.WaitGroup

	flows outbound.Flows // the streams handed out
}

// New returns a client for n, which must be an SSH node. d opens the
// socket to the server; nil means a zero outbound.SystemDialer. It opens
// nothing itself. Errors never quote the password or the key.
func New(n *node.Node, d outbound.Dialer) (*Client, error) {
	addr, err := outbound.NodeAddress(n, n != nil && n.SSH != nil, "ssh", "SSH")
	if err != nil {
		return nil, err
	}
	cfg, err := clientConfig(n.SSH)
	if err != nil {
		return nil, fmt.Errorf("ssh: %s: %w", addr, err)
	}
	if d == nil {
		d = &outbound.SystemDialer{}
	}
	return &Client{addr: addr, cfg: cfg, dialer: d, sem: make(chan struct{}, 1), stop: make(chan struct{})}, nil
}

// clientConfig checks o and turns it into x/crypto's configuration.
func clientConfig(o *node.SSHOptions) (*ssh.ClientConfig, error) {
	if o.User == "" {
		return nil, errors.New("user: empty")
	}
	cfg := &ssh.ClientConfig{User: o.User, ClientVersion: DefaultClientVersion, Timeout: handshakeTimeout}
	if v := o.ClientVersion; v != "" {
		if !strings.HasPrefix(v, "SSH-2.0-") {
			v = "SSH-2.0-" + v
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x21 && v[i] != ' ' || v[i] > 0x7e {
				return nil, errors.New("client-version: not printable ASCII")
			}
		}
		if len(v) > 253 { // RFC 4253 §4.2: 255 with CR LF
			return nil, errors.New("client-version: longer than 253 bytes")
		}
		cfg.ClientVersion = v
	}
	if o.PrivateKey != "" {
		signer, err := parseKey(o.PrivateKey, o.PrivateKeyPassphrase)
		if err != nil {
			return nil, err
		}
		cfg.Auth = append(cfg.Auth, ssh.PublicKeys(signer))
	}
	if o.Password != "" {
		pw := o.Password
		cfg.Auth = append(cfg.Auth, ssh.Password(pw), ssh.KeyboardInteractive(func(_, _ string, qs []string, _ []bool) ([]string, error) {
			// A server that asks for the password by keyboard-interactive
			// (PAM) asks one question.
			answers := make([]string, len(qs))
			for i := range answers {
				answers[i] = pw
			}
			return answers, nil
		}))
	}
	if len(cfg.Auth) == 0 {
		return nil, errors.New("no password and no private key")
	}
	pins, algos, err := parseHostKeys(o.HostKeys)
	if err != nil {
		return nil, err
	}
	cfg.HostKeyCallback = func(_ string, _ net.Addr, key ssh.PublicKey) error {
		got := key.Marshal()
		for _, p := range pins {
			if bytes.Equal(p, got) {
				return nil
			}
		}
		return fmt.Errorf("%w (it presented %s %s)", ErrHostKeyMismatch, key.Type(), ssh.FingerprintSHA256(key))
	}
	cfg.HostKeyAlgorithms = algos
	if len(o.HostKeyAlgorithms) > 0 {
		cfg.HostKeyAlgorithms = o.HostKeyAlgorithms
	}
	return cfg, nil
}

// parseKey reads a PEM private key, decrypting it with passphrase when it
// is encrypted.
func parseKey(pem, passphrase string) (ssh.Signer, error) {
	if !strings.Contains(pem, "-----BEGIN") {
		// mihomo reads a path here; a subscription must not make Skiff
		// read local files.
		return nil, errors.New("private-key: not a PEM key (a file path is not read)")
	}
	signer, err := ssh.ParsePrivateKey([]byte(pem))
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == "" {
			return nil, errors.New("private-key: encrypted, and no passphrase given")
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase([]byte(pem), []byte(passphrase))
	}
	if err != nil {
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, errors.New("private-key: wrong passphrase")
		}
		return nil, fmt.Errorf("private-key: %w", err)
	}
	return signer, nil
}

// parseHostKeys reads pinned keys, authorized_keys lines (a known_hosts
// line's host names are skipped), and returns their wire form and the
// host key algorithms that make a server present one of them.
func parseHostKeys(lines []string) (pins [][]byte, algos []string, err error) {
	if len(lines) == 0 {
		return nil, nil, errors.New(`host-key: none pinned; Skiff does not accept an SSH server's key unverified. Add the server's key (ssh-keyscan, or /etc/ssh/ssh_host_ed25519_key.pub on it) as host-key: ["ssh-ed25519 AAAA…"]`)
	}
	seen := map[string]bool{}
	for i, l := range lines {
		l = strings.TrimSpace(l)
		key, _, _, _, perr := ssh.ParseAuthorizedKey([]byte(l))
		if perr != nil {
			// A known_hosts line: "host[,host…] type base64".
			if _, _, k, _, _, kerr := ssh.ParseKnownHosts([]byte(l)); kerr == nil {
				key, perr = k, nil
			}
		}
		if perr != nil {
			return nil, nil, fmt.Errorf("host-key %d: not an authorized_keys or known_hosts line", i+1)
		}
		pins = append(pins, key.Marshal())
		for _, a := range algorithmsFor(key.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return pins, algos, nil
}

// algorithmsFor returns the host key algorithms that sign with a key of
// type t: an RSA key signs with SHA-2 as well as SHA-1.
func algorithmsFor(t string) []string {
	if t == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{t}
}

// DialContext opens a direct-tcpip channel to dst through the server,
// dialling the SSH connection first if there is none. It returns once the
// server opened the channel (it has connected to dst).
func (c *Client) DialContext(ctx context.Context, network string, dst flow.Addr) (net.Conn, error) {
	if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("ssh: %s: network %q, want tcp", c.addr, network)
	}
	if !dst.IsValid() {
		return nil, fmt.Errorf("ssh: %s: no destination address", c.addr)
	}
	for attempt := 0; ; attempt++ {
		sc, fresh, err := c.connection(ctx)
		if err != nil {
			return nil, err
		}
		ch, err := sc.DialContext(ctx, "tcp", dst.String())
		if err == nil {
			cc := &chanConn{Conn: ch, c: c, dst: dst}
			if err := c.flows.Keep(cc, "ssh", c.addr); err != nil {
				return nil, err
			}
			return cc, nil
		}
		var open *ssh.OpenChannelError
		if errors.As(err, &open) && open.Reason == ssh.ConnectionFailed {
			// The server is up but could not connect to dst.
			return nil, fmt.Errorf("ssh: %s: to %s: %w (%w)", c.addr, dst, err, outbound.ErrTargetRefused)
		}
		if open != nil || ctx.Err() != nil || fresh || attempt > 0 {
			// The server refused the channel (forwarding is off), or this
			// connection is new: not a dead connection to replace.
			return nil, fmt.Errorf("ssh: %s: to %s: %w", c.addr, dst, err)
		}
		// The connection died under us: drop it and dial once more.
		c.drop(sc)
	}
}

// connection returns the live SSH connection, dialling one if needed;
// fresh reports that it was dialled for this call.
func (c *Client) connection(ctx context.Context) (*ssh.Client, bool, error) {
	if sc, err := c.current(); sc != nil || err != nil {
		return sc, false, err
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, false, fmt.Errorf("ssh: %s: %w", c.addr, ctx.Err())
	}
	defer func() { <-c.sem }()
	if sc, err := c.current(); sc != nil || err != nil {
		return sc, false, err // dialled while this call waited
	}
	sc, err := c.dial(ctx)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		sc.Close()
		return nil, false, fmt.Errorf("ssh: %s: client closed", c.addr)
	}
	c.conn = sc
	c.wg.Add(1)
	c.mu.Unlock()
	go c.watch(sc)
	return sc, true, nil
}

func (c *Client) current() (*ssh.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("ssh: %s: client closed", c.addr)
	}
	return c.conn, nil
}

// dial opens the TCP connection and runs the SSH handshake and login on
// it, bounded by ctx (or handshakeTimeout when ctx has no deadline).
func (c *Client) dial(ctx context.Context) (*ssh.Client, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, handshakeTimeout)
		defer cancel()
	}
	raw, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("ssh: dial %s: %w", c.addr, err)
	}
	// x/crypto's handshake takes no context: a deadline on the socket,
	// and closing it when ctx ends, bound it.
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	conn, chans, reqs, err := ssh.NewClientConn(raw, c.addr, c.cfg)
	if !stop() {
		if err == nil {
			conn.Close()
		}
		return nil, fmt.Errorf("ssh: %s: handshake: %w", c.addr, ctx.Err())
	}
	if err != nil {
		raw.Close()
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("ssh: %s: login as %q: %w", c.addr, c.cfg.User, outbound.ErrAuthRejected)
		}
		return nil, fmt.Errorf("ssh: %s: handshake: %w", c.addr, err)
	}
	raw.SetDeadline(time.Time{})
	return ssh.NewClient(conn, chans, reqs), nil
}

// watch keeps sc alive until it dies or the client closes: a keepalive
// request every KeepaliveInterval, and sc closed when one goes
// unanswered; then it forgets sc, so that the next flow dials again.
func (c *Client) watch(sc *ssh.Client) {
	defer c.wg.Done()
	dead := make(chan struct{})
	go func() { sc.Wait(); close(dead) }() // ends when sc is closed, below at the latest
	t := time.NewTicker(KeepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-dead:
			c.drop(sc)
			return
		case <-c.stop:
			sc.Close()
			<-dead
			return
		case <-t.C:
			if !ping(sc, dead) {
				sc.Close()
			}
		}
	}
}

// ping sends one keepalive request and waits KeepaliveTimeout for its
// reply (OpenSSH answers keepalive@openssh.com with a failure, which is
// a reply all the same).
func ping(sc *ssh.Client, dead <-chan struct{}) bool {
	done := make(chan error, 1)
	go func() { _, _, err := sc.SendRequest("keepalive@openssh.com", true, nil); done <- err }()
	t := time.NewTimer(KeepaliveTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err == nil
	case <-dead:
		return false
	case <-t.C:
		return false // the request's goroutine ends when sc is closed
	}
}

// drop closes sc and forgets it if it is still the current connection.
func (c *Client) drop(sc *ssh.Client) {
	c.mu.Lock()
	if c.conn == sc {
		c.conn = nil
	}
	c.mu.Unlock()
	sc.Close()
}

// ListenPacket fails: SSH has no UDP.
func (c *Client) ListenPacket(ctx context.Context, dst flow.Addr) (net.PacketConn, error) {
	return nil, fmt.Errorf("ssh: %s: UDP to %s: %w", c.addr, dst, ErrNoUDP)
}

// Close closes the SSH connection and every stream handed out, and waits
// for the keepalive goroutine.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stop)
	c.mu.Unlock()
	c.flows.Close()
	c.wg.Wait()
	return nil
}

// chanConn is one stream: a direct-tcpip channel. x/crypto's channel conn
// has no deadlines; here a deadline that passes closes the channel, which
// is all the relay asks of one (an idle limit after a half-close), and the
// blocked call then reports os.ErrDeadlineExceeded.
type chanConn struct {
	net.Conn // x/crypto's channel conn: Read, Write, Close, CloseWrite
	c        *Client
	dst      flow.Addr

	once  sync.Once
	dmu   sync.Mutex
	timer *time.Timer
	fired bool
}

func (cc *chanConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	return n, cc.mapErr(err)
}

func (cc *chanConn) Write(p []byte) (int, error) {
	n, err := cc.Conn.Write(p)
	return n, cc.mapErr(err)
}

func (cc *chanConn) mapErr(err error) error {
	if err == nil {
		return nil
	}
	cc.dmu.Lock()
	fired := cc.fired
	cc.dmu.Unlock()
	if fired {
		return errDeadline
	}
	return err
}

// CloseWrite sends EOF on the channel: the server half-closes its
// connection to the destination.
func (cc *chanConn) CloseWrite() error {
	if cw, ok := cc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (cc *chanConn) Close() error {
	var err error
	cc.once.Do(func() {
		cc.dmu.Lock()
		if cc.timer != nil {
			cc.timer.Stop()
		}
		cc.dmu.Unlock()
		err = cc.Conn.Close()
		cc.c.flows.Remove(cc)
	})
	return err
}

func (cc *chanConn) SetDeadline(t time.Time) error      { return cc.setDeadline(t) }
func (cc *chanConn) SetReadDeadline(t time.Time) error  { return cc.setDeadline(t) }
func (cc *chanConn) SetWriteDeadline(t time.Time) error { return cc.setDeadline(t) }

// setDeadline arms (or, for a zero t, disarms) the one timer: read and
// write deadlines share it, as closing the channel ends both.
func (cc *chanConn) setDeadline(t time.Time) error {
	cc.dmu.Lock()
	defer cc.dmu.Unlock()
	if cc.fired {
		return errDeadline
	}
	if cc.timer != nil {
		cc.timer.Stop()
		cc.timer = nil
	}
	if t.IsZero() {
		return nil
	}
	cc.timer = time.AfterFunc(time.Until(t), func() {
		cc.dmu.Lock()
		cc.fired = true
		cc.dmu.Unlock()
		cc.Conn.Close()
	})
	return nil
}

// errDeadline is what a call blocked when the deadline passed returns,
// as net.Conn's contract asks.
var errDeadline = os.ErrDeadlineExceeded
