package udpgro

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// TestQUIC runs quic-go on Conns at both ends of a loopback connection and
// moves data both ways. Loopback has no GRO of its own: a coalesced
// datagram at one end means the other end sent it with GSO, so the counts
// show that quic-go kept GSO on through the wrapper, and that the
// wrapper's splitting delivers what quic-go can use.
func TestQUIC(t *testing.T) {
	cert, _ := nettest.SelfSigned(t, "udpgro.test")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	srvConn := listen(t)
	srvTr := &quic.Transport{Conn: srvConn}
	defer srvTr.Close()
	ln, err := srvTr.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"udpgro"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const size = 8 << 20
	echoed := make(chan error, 1)
	go func() { // ends when the connection does: the test closes both transports
		qc, err := ln.Accept(ctx)
		if err != nil {
			echoed <- err
			return
		}
		s, err := qc.AcceptStream(ctx)
		if err != nil {
			echoed <- err
			return
		}
		_, err = io.Copy(s, s)
		s.Close()
		echoed <- err
	}()

	cliConn := listen(t)
	cliTr := &quic.Transport{Conn: cliConn}
	defer cliTr.Close()
	qc, err := cliTr.Dial(ctx, srvConn.LocalAddr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"udpgro"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	s, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	rand.Read(data)
	go func() { // ends with the stream
		s.Write(data)
		s.Close()
	}()
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("echoed %d bytes, not the %d sent", len(got), len(data))
	}
	if err := <-echoed; err != nil {
		t.Fatal(err)
	}
	for _, end := range []struct {
		name string
		c    *Conn
	}{{"client", cliConn}, {"server", srvConn}} {
		st := end.c.Stats()
		t.Logf("%s: %d reads, %d datagrams, %d packets", end.name, st.Reads, st.Datagrams, st.Segments)
		if st.Segments < 2*st.Datagrams {
			t.Errorf("%s received %d packets in %d datagrams: the other end did not send with GSO", end.name, st.Segments, st.Datagrams)
		}
	}
}
