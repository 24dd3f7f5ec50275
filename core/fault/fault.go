// Package fault sorts the errors of dials and probes into a few kinds that
// a front end can say in its own words and language ("the server did not
// answer", "the certificate is not trusted"). The decision is made here,
// once, from the error's types; the error's text stays the whole story for
// logs and the CLI.
package fault

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

// Kind is what went wrong, as far as the error's types tell.
type Kind string

// Kinds of failure. Their values cross the API and name translation keys
// (fault.timeout, …): do not rename them.
const (
	Timeout     Kind = "timeout"     // nothing answered in time
	Refused     Kind = "refused"     // the server's port refused the connection
	Reset       Kind = "reset"       // the connection was reset or closed early
	Unreachable Kind = "unreachable" // no route to the server
	DNS         Kind = "dns"         // the server's name did not resolve
	TLS         Kind = "tls"         // the TLS handshake or the certificate failed
	Auth        Kind = "auth"        // the server rejected the credentials
	Throttled   Kind = "throttled"   // it delivered far less than another server
	Other       Kind = "other"       // anything else: the text says what
)

// Of classifies err; nil is "".
func Of(err error) Kind {
	if err == nil {
		return ""
	}
	var (
		dnsErr   *net.DNSError
		netErr   net.Error
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
		header   tls.RecordHeaderError
		alert    tls.AlertError
		quicErr  *quic.TransportError
	)
	switch {
	case errors.Is(err, outbound.ErrAuthRejected):
		return Auth
	case errors.As(err, &dnsErr):
		return DNS
	case errors.Is(err, tlsconf.ErrPinMismatch), errors.Is(err, tlsconf.ErrNotReality),
		errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &hostname),
		errors.As(err, &verify), errors.As(err, &header), errors.As(err, &alert),
		errors.As(err, &quicErr) && quicErr.ErrorCode.IsCryptoError():
		return TLS
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return Unreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return Timeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return Reset
	}
	return Other
}
