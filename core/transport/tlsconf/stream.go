package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"time"

	utls "github.com/refraction-networking/utls"

	"github.com/skiffvpn/skiff/core/node"
)

// Stream is the TLS layer of a stream outbound (VLESS, Trojan, VMess,
// AnyTLS): Go's crypto/tls, or uTLS when the node names a ClientHello
// fingerprint, or REALITY (which always sends a uTLS ClientHello). Both
// engines verify the server the same way (New's rules) and send the same
// ALPN, so a fingerprint changes how the ClientHello looks, nothing else.
// A Stream is safe for concurrent use.
type Stream struct {
	std     *tls.Config  // Go's configuration; also the source of the uTLS one
	fp      *Fingerprint // nil: crypto/tls
	ucfg    *utls.Config // fp != nil
	reality *realityKey  // nil: no REALITY
	ech     bool         // the config lists are set: the handshake must accept ECH
	grown   *Grown       // the connections' large record buffers (grow.go)
}

// NewStream returns the TLS layer for a server reached as server with
// settings t (nil: defaults); alpn is used when t names none (the
// transport's: http/1.1 for WebSocket, h2 for HTTP/2). An unknown
// fingerprint or a malformed REALITY key is an error.
func NewStream(t *node.TLS, server string, alpn ...string) (*Stream, error) {
	std, err := newConfig(t, server, alpn...)
	if err != nil {
		return nil, err
	}
	s := &Stream{std: std, grown: NewGrown(DefaultGrownBudget)}
	if t == nil {
		return s, nil
	}
	ech, err := echConfig(t)
	if err != nil {
		return nil, err
	}
	if ech != nil {
		if net.ParseIP(std.ServerName) != nil {
			return nil, errors.New("tls: ECH needs a server name to hide (sni is an IP address)")
		}
		std.EncryptedClientHelloConfigList = ech
		std.MinVersion = tls.VersionTLS13
		// On rejection the server answered the outer hello, for the public
		// name: its certificate is checked by the node's rules (not at all
		// when the user turned verification off), and the handshake then
		// fails with the rejection, whatever the check says.
		insecure, roots := std.InsecureSkipVerify, std.RootCAs
		std.EncryptedClientHelloRejectionVerify = func(cs tls.ConnectionState) error {
			if insecure {
				return nil
			}
			return verifyChain(cs.ServerName, cs.PeerCertificates, roots)
		}
		s.ech = true
	}
	fpName := t.Fingerprint
	if t.NoSNI && (fpName != "" || t.Reality != nil) {
		// A browser's ClientHello always names the site; REALITY needs it.
		return nil, errors.New("tls: disable_sni cannot go with a ClientHello fingerprint or REALITY")
	}
	if t.Reality != nil {
		if s.reality, err = newRealityKey(t.Reality); err != nil {
			return nil, err
		}
		if net.ParseIP(std.ServerName) != nil {
			// An IP literal goes without SNI, which REALITY servers need.
			return nil, errors.New("reality: sni: empty (REALITY needs the name of the site the server borrows its handshake from)")
		}
		if fpName == "" {
			fpName = "chrome" // REALITY needs uTLS; the field's clients default to Chrome
		}
	}
	if fpName == "" {
		return s, nil
	}
	if s.fp, err = ParseFingerprint(fpName); err != nil {
		return nil, err
	}
	if s.ech {
		// uTLS turns the browser's GREASE ECH extension into the real one;
		// a hello without it cannot carry ECH.
		_, spec, err := s.fp.hello(std.NextProtos)
		if err != nil {
			return nil, err
		}
		if !echSpecOK(spec) {
			return nil, node.Unsupportedf(node.FeatureOption, "ech+fp="+s.fp.name, "tls: ECH with the %s fingerprint is not supported (its ClientHello has no ECH extension); not dialled, to keep the server name hidden", s.fp.name)
		}
	}
	s.ucfg = &utls.Config{
		ServerName:         std.ServerName,
		NextProtos:         std.NextProtos,
		MinVersion:         std.MinVersion,
		InsecureSkipVerify: std.InsecureSkipVerify,
		ClientSessionCache: utls.NewLRUClientSessionCache(sessionCacheSize),
		// A spec without a session ticket or PSK extension resumes nothing,
		// as the browser it imitates would not.
		PreferSkipResumptionOnNilExtension: true,
	}
	if s.ech {
		s.ucfg.EncryptedClientHelloConfigList = std.EncryptedClientHelloConfigList
		s.ucfg.MinVersion = utls.VersionTLS13
		s.ucfg.EncryptedClientHelloRejectionVerify = func(cs utls.ConnectionState) error {
			return std.EncryptedClientHelloRejectionVerify(tls.ConnectionState{ServerName: cs.ServerName, PeerCertificates: cs.PeerCertificates})
		}
	}
	if t.PinSHA256 != "" {
		pin, _ := ParsePin(t.PinSHA256) // New checked it
		name := std.ServerName
		s.ucfg.VerifyConnection = func(cs utls.ConnectionState) error { return checkPin(name, cs.PeerCertificates, pin) }
	}
	if s.reality != nil {
		// The server's certificate is REALITY's own, checked against the
		// auth key (reality.go), and never resumed.
		s.ucfg.InsecureSkipVerify = true
		s.ucfg.VerifyConnection = nil
		s.ucfg.ClientSessionCache = nil
		s.ucfg.SessionTicketsDisabled = true
		s.ucfg.MinVersion = utls.VersionTLS13
	}
	return s, nil
}

// ServerName returns the name sent as SNI and verified.
func (s *Stream) ServerName() string { return s.std.ServerName }

// NextProtos returns the ALPN protocols offered.
func (s *Stream) NextProtos() []string { return s.std.NextProtos }

// Fingerprint returns the ClientHello fingerprint, nil for Go's own.
func (s *Stream) Fingerprint() *Fingerprint { return s.fp }

// Reality reports whether the layer is REALITY.
func (s *Stream) Reality() bool { return s.reality != nil }

// Client runs the TLS handshake over raw, bounded by ctx, and returns the
// connection. On error the caller closes raw.
func (s *Stream) Client(ctx context.Context, raw net.Conn) (*Conn, error) {
	if s.fp == nil {
		c := Client(raw, s.std)
		c.grow = s.grown
		if err := c.HandshakeContext(ctx); err != nil {
			return nil, echError(err)
		}
		if err := s.checkECH(c); err != nil {
			return nil, err
		}
		return c, nil
	}
	sock := newSockConn(raw)
	cfg := s.ucfg.Clone()
	var r *realityConn
	if s.reality != nil {
		r = &realityConn{key: s.reality}
		cfg.VerifyPeerCertificate = r.verify
	}
	id, spec, err := s.fp.hello(cfg.NextProtos)
	if err != nil {
		return nil, err
	}
	uc, err := newUClient(sock, cfg, id, spec)
	if err != nil {
		return nil, fmt.Errorf("tls: fingerprint %s: %w", s.fp.name, err)
	}
	if r != nil {
		if err := r.seal(uc); err != nil {
			return nil, err
		}
	}
	c := &Conn{engine: (*uconn)(uc), rec: utlsRecords(uc.Conn), sock: sock, grow: s.grown}
	if err := uc.HandshakeContext(ctx); err != nil {
		if r != nil && r.refused != nil {
			return nil, r.refused
		}
		return nil, echError(err)
	}
	dropHandshake(uc)
	if err := s.checkECH(c); err != nil {
		return nil, err
	}
	return c, nil
}

// checkECH refuses a connection that was to use ECH and did not. Both
// engines already fail such a handshake; this holds if either ever stops.
func (s *Stream) checkECH(c *Conn) error {
	if s.ech && !c.ConnectionState().ECHAccepted {
		c.Close()
		return fmt.Errorf("tls: %w", ErrECHRejected)
	}
	return nil
}

// echError wraps a handshake error that is an ECH rejection in
// ErrECHRejected.
func echError(err error) error {
	var std *tls.ECHRejectionError
	var u *utls.ECHRejectionError
	if errors.As(err, &std) || errors.As(err, &u) {
		return fmt.Errorf("tls: %w: %v", ErrECHRejected, err)
	}
	return err
}

// dropHandshake lets go of what uTLS keeps of a finished handshake in
// public fields, which nothing reads again once it is complete (the
// connection never renegotiates: Config.Renegotiation stays
// RenegotiateNever, and TLS 1.3 session tickets use the connection's own
// resumption secret): the ClientHello and ServerHello messages, the
// extensions of the hello, and the key-schedule state. The key shares'
// private keys and the secrets go for forward secrecy, and all of it for
// memory: about 9 KiB per connection (the ML-KEM share alone about 10 KiB
// before the key shares were dropped here), 4.5 of the 36 MiB that 500
// REALITY-Vision connections held open.
func dropHandshake(uc *utls.UConn) {
	hs := &uc.HandshakeState
	hs.Hello, hs.ServerHello = nil, nil
	hs.MasterSecret, hs.Session = nil, nil
	hs.State12, hs.State13 = utls.TLS12OnlyState{}, utls.TLS13OnlyState{}
	uc.Extensions = nil
}

// uconn is a uTLS connection that reports its state in crypto/tls's terms.
type uconn utls.UConn

func (u *uconn) u() *utls.UConn                             { return (*utls.UConn)(u) }
func (u *uconn) Read(p []byte) (int, error)                 { return u.u().Read(p) }
func (u *uconn) Write(p []byte) (int, error)                { return u.u().Write(p) }
func (u *uconn) Close() error                               { return u.u().Close() }
func (u *uconn) CloseWrite() error                          { return u.u().CloseWrite() }
func (u *uconn) LocalAddr() net.Addr                        { return u.u().LocalAddr() }
func (u *uconn) RemoteAddr() net.Addr                       { return u.u().RemoteAddr() }
func (u *uconn) Handshake() error                           { return u.u().Handshake() }
func (u *uconn) HandshakeContext(ctx context.Context) error { return u.u().HandshakeContext(ctx) }
func (u *uconn) SetDeadline(t time.Time) error              { return u.u().SetDeadline(t) }
func (u *uconn) SetReadDeadline(t time.Time) error          { return u.u().SetReadDeadline(t) }
func (u *uconn) SetWriteDeadline(t time.Time) error         { return u.u().SetWriteDeadline(t) }

func (u *uconn) stdState() tls.ConnectionState {
	s := u.u().ConnectionState()
	return tls.ConnectionState{
		Version:            s.Version,
		HandshakeComplete:  s.HandshakeComplete,
		DidResume:          s.DidResume,
		CipherSuite:        s.CipherSuite,
		NegotiatedProtocol: s.NegotiatedProtocol,
		ServerName:         s.ServerName,
		PeerCertificates:   s.PeerCertificates,
		VerifiedChains:     s.VerifiedChains,
		ECHAccepted:        s.ECHAccepted,
	}
}

// newUClient is the uTLS client for hello id (or spec, when it is set).
//
// A randomized hello is rolled again until it needs no HelloRetryRequest
// from a server that prefers X25519, as Go's and so sing-box's do: uTLS
// generates random sets of groups and key shares, and a hello that lists
// X25519 without a key share for it draws a retry request, which failed
// or hung some handshakes at random (about 1 in 40 against sing-box). The
// hybrid X25519MLKEM768 group, which uTLS cannot answer a retry for, is
// dropped from a hello that sent no key share for it.
func newUClient(sock net.Conn, cfg *utls.Config, id utls.ClientHelloID, spec *utls.ClientHelloSpec) (*utls.UConn, error) {
	if spec != nil {
		uc := utls.UClient(sock, cfg, id)
		return uc, uc.ApplyPreset(spec)
	}
	for try := 0; ; try++ {
		uc := utls.UClient(sock, cfg, id)
		ok, err := fixRandomized(uc)
		if err != nil || ok || try == maxHelloRolls {
			return uc, err
		}
	}
}

// maxHelloRolls bounds how often a randomized hello is rolled again; a
// hello that lists X25519 with its key share comes up about half the time.
const maxHelloRolls = 32

// fixRandomized builds a randomized ClientHello, drops X25519MLKEM768 when
// it sent no key share for it, and reports whether the hello needs no
// retry request from a server with Go's preference of groups: it sends a
// key share for the first group in serverGroups that it lists.
func fixRandomized(uc *utls.UConn) (bool, error) {
	if err := uc.BuildHandshakeState(); err != nil {
		return false, err
	}
	shares := map[utls.CurveID]bool{}
	var curves *utls.SupportedCurvesExtension
	for _, e := range uc.Extensions {
		switch e := e.(type) {
		case *utls.KeyShareExtension:
			for _, ks := range e.KeyShares {
				shares[ks.Group] = true
			}
		case *utls.SupportedCurvesExtension:
			curves = e
		}
	}
	if curves == nil {
		return true, nil
	}
	if !shares[utls.X25519MLKEM768] && slices.Contains(curves.Curves, utls.X25519MLKEM768) {
		curves.Curves = slices.DeleteFunc(slices.Clone(curves.Curves), func(c utls.CurveID) bool { return c == utls.X25519MLKEM768 })
		if err := uc.BuildHandshakeState(); err != nil {
			return false, err
		}
	}
	for _, g := range serverGroups {
		if slices.Contains(curves.Curves, g) {
			return shares[g], nil
		}
	}
	return true, nil
}

// serverGroups is Go's TLS server's order of preference (and so
// sing-box's): the group it picks is the first of these the client lists,
// and it asks again when the client sent no key share for it.
var serverGroups = []utls.CurveID{utls.X25519MLKEM768, utls.X25519, utls.CurveP256, utls.CurveP384, utls.CurveP521}

// checkPin checks the leaf certificate against a pinned SHA-256.
func checkPin(name string, certs []*x509.Certificate, pin []byte) error {
	if len(certs) == 0 {
		return fmt.Errorf("tls: %s: no certificate: %w", name, ErrPinMismatch)
	}
	if !pinMatches(certs[0].Raw, pin) {
		return fmt.Errorf("tls: %s: %w", name, ErrPinMismatch)
	}
	return nil
}

// Fingerprint is a browser's ClientHello that uTLS imitates.
type Fingerprint struct {
	name string
	id   utls.ClientHelloID
}

// Fingerprint names, as share links and subscriptions spell them (Xray's,
// sing-box's and Clash's names).
var fingerprints = map[string]utls.ClientHelloID{
	"chrome":     utls.HelloChrome_Auto,
	"firefox":    utls.HelloFirefox_Auto,
	"safari":     utls.HelloSafari_Auto,
	"ios":        utls.HelloIOS_Auto,
	"edge":       utls.HelloEdge_Auto,
	"android":    utls.HelloAndroid_11_OkHttp,
	"360":        utls.Hello360_Auto,
	"qq":         utls.HelloQQ_Auto,
	"randomized": utls.HelloRandomized,
}

// random is what fp=random picks from: the browsers themselves, once per
// outbound, as the field's clients do.
var random = []string{"chrome", "firefox", "safari", "ios", "edge"}

// ErrUnknownFingerprint is returned (wrapped) for an fp that names no
// known ClientHello.
var ErrUnknownFingerprint = errors.New("unknown TLS fingerprint (want chrome, firefox, safari, ios, edge, android, 360, qq, random or randomized)")

// ParseFingerprint returns the fingerprint named name (any case).
// "random" picks one browser now.
func ParseFingerprint(name string) (*Fingerprint, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "random" {
		n = random[rand.IntN(len(random))]
	}
	id, ok := fingerprints[n]
	if !ok {
		return nil, fmt.Errorf("tls: fp %q: %w", name, ErrUnknownFingerprint)
	}
	return &Fingerprint{name: n, id: id}, nil
}

// Name returns the fingerprint's name ("chrome", …; what "random" chose).
func (f *Fingerprint) Name() string { return f.name }

// hello returns the uTLS ClientHello to send offering alpn: a fresh spec
// for a browser (uTLS shares an applied spec's slices with the connection,
// so one per connection), or the randomized ID, which uTLS generates from
// the configuration's ALPN. A browser's own ALPN list is replaced by alpn,
// so that the server sees the protocols the transport speaks (http/1.1 for
// WebSocket, h2 for HTTP/2); with none, the browser's stays, as a browser
// sends it.
func (f *Fingerprint) hello(alpn []string) (utls.ClientHelloID, *utls.ClientHelloSpec, error) {
	if f.id == utls.HelloRandomized {
		if len(alpn) > 0 {
			return utls.HelloRandomizedALPN, nil, nil
		}
		return utls.HelloRandomizedNoALPN, nil, nil
	}
	spec, err := utls.UTLSIdToSpec(f.id)
	if err != nil {
		return f.id, nil, fmt.Errorf("tls: fingerprint %s: %w", f.name, err)
	}
	if len(alpn) > 0 {
		for _, e := range spec.Extensions {
			if a, ok := e.(*utls.ALPNExtension); ok {
				a.AlpnProtocols = append([]string(nil), alpn...)
			}
		}
	}
	return utls.HelloCustom, &spec, nil
}
