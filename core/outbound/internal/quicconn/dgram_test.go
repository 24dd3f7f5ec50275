package quicconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// TestMaxDatagramFrameSize dials a quic-go server on loopback and checks
// that the server sees the client's max_datagram_frame_size as
// MaxDatagramFrameSize: its largest datagram is that less the frame's
// type byte and two-byte length. It fails if quic-go stops reading the
// variable the linkname sets.
func TestMaxDatagramFrameSize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := quic.ListenAddr("127.0.0.1:0", testTLS(t), &quic.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			got <- err
			return
		}
		defer c.CloseWithError(0, "")
		got <- c.SendDatagram(make([]byte, 1300))
	}()
	c, err := quic.DialAddr(ctx, ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"test"}}, &quic.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	err = <-got
	var tooLarge *quic.DatagramTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("server's SendDatagram of 1300 bytes: %v, want a DatagramTooLargeError", err)
	}
	if want := int64(MaxDatagramFrameSize - 3); tooLarge.MaxDatagramPayloadSize != want {
		t.Fatalf("server may send datagrams of %d bytes, want %d (max_datagram_frame_size %d)", tooLarge.MaxDatagramPayloadSize, want, MaxDatagramFrameSize)
	}
}

func testTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{"test"},
	}
}
