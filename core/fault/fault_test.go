package fault

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
)

func TestOf(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("vless: dial 192.0.2.1:443: %w", err) }
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)}
	}
	for _, tt := range []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, ""},
		{"auth", wrap(fmt.Errorf("hysteria2: auth: %w (status 404)", outbound.ErrAuthRejected)), Auth},
		{"dns", wrap(&net.DNSError{Err: "no such host", Name: "example.invalid", IsNotFound: true}), DNS},
		{"dns timeout stays dns", wrap(&net.DNSError{Err: "i/o timeout", Name: "example.com", IsTimeout: true}), DNS},
		{"pin", wrap(tlsconf.ErrPinMismatch), TLS},
		{"reality", wrap(tlsconf.ErrNotReality), TLS},
		{"unknown authority", wrap(x509.UnknownAuthorityError{}), TLS},
		{"hostname", wrap(x509.HostnameError{Host: "example.com"}), TLS},
		{"quic crypto", wrap(&quic.TransportError{ErrorCode: quic.TransportErrorCode(0x100 + 42)}), TLS},
		{"quic closed", wrap(&quic.TransportError{ErrorCode: quic.ProtocolViolation}), Reset},
		{"refused", wrap(opErr(syscall.ECONNREFUSED)), Refused},
		{"unreachable", wrap(opErr(syscall.ENETUNREACH)), Unreachable},
		{"host unreachable", wrap(opErr(syscall.EHOSTUNREACH)), Unreachable},
		{"reset", wrap(opErr(syscall.ECONNRESET)), Reset},
		{"eof", wrap(io.ErrUnexpectedEOF), Reset},
		{"deadline", wrap(context.DeadlineExceeded), Timeout},
		{"io timeout", wrap(&net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), Timeout},
		{"quic handshake timeout", wrap(&quic.HandshakeTimeoutError{}), Timeout},
		{"plain text", errors.New("vmess: bad response header"), Other},
	} {
		if got := Of(tt.err); got != tt.want {
			t.Errorf("%s: Of(%v) = %q, want %q", tt.name, tt.err, got, tt.want)
		}
	}
}
