package quicconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/skiffvpn/skiff/core/relay/relaytest"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// streamPair is a StreamConn on a loopback QUIC connection whose server
// side runs serve on the stream the client opened.
func streamPair(t *testing.T, serve func(st *quic.Stream)) *StreamConn {
	t.Helper()
	cert, _ := nettest.SelfSigned(t, "quicconn.test")
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"t"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		qc, err := ln.Accept(context.Background())
		if err != nil {
			return
		}
		st, err := qc.AcceptStream(context.Background())
		if err != nil {
			return
		}
		io.ReadFull(st, make([]byte, 1))
		serve(st)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"t"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qc.CloseWithError(0, "") })
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := NewStreamConn(st, qc)
	if _, err := c.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStreamConnGathers: a transfer written in small pieces reads back
// intact through the gathering Read, and ends with EOF.
func TestStreamConnGathers(t *testing.T) {
	want := make([]byte, 4<<20)
	for i := range want {
		want[i] = byte(i * 31 / 7)
	}
	c := streamPair(t, func(st *quic.Stream) {
		for b := want; len(b) > 0; b = b[min(len(b), 1000):] {
			if _, err := st.Write(b[:min(len(b), 1000)]); err != nil {
				return
			}
		}
		st.Close()
	})
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var got bytes.Buffer
	buf := make([]byte, 60<<10)
	for {
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", got.Len(), err)
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, not what was sent (%d)", got.Len(), len(want))
	}
}

// TestStreamConnDeadline: the caller's read deadline holds through the
// gathering (a Read waiting past it fails with a timeout) and a cleared
// deadline lets the next data through.
func TestStreamConnDeadline(t *testing.T) {
	more := make(chan []byte)
	c := streamPair(t, func(st *quic.Stream) {
		for b := range more {
			st.Write(b)
		}
	})
	defer close(more)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 10))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) && !(errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	more <- []byte("hello")
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
		t.Fatalf("read after clearing the deadline: %q, %v", b, err)
	}
}

// TestIdleStreamHoldsNoBuffer: a relayed stream that goes quiet after a
// bulk echo holds no relay buffer (WaitRead), and the next bytes still
// come through.
func TestIdleStreamHoldsNoBuffer(t *testing.T) {
	c := streamPair(t, func(st *quic.Stream) {
		io.Copy(st, st)
		st.Close()
	})
	relaytest.IdleHoldsNoBuffer(t, relaytest.Relay(t, c), nil)
}

// TestWaitRead: WaitRead waits for data without consuming it, returns at
// the stream's end, and when the read deadline passes.
func TestWaitRead(t *testing.T) {
	more := make(chan []byte)
	c := streamPair(t, func(st *quic.Stream) {
		for b := range more {
			st.Write(b)
		}
		st.Close()
	})
	w := nettest.StartWait(t, c.WaitRead)
	w.Blocked("no data")
	more <- []byte("hi")
	w.Ends("data came")
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hi" {
		t.Fatalf("read after the wait: %q, %v", b, err)
	}

	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	w = nettest.StartWait(t, c.WaitRead)
	w.Ends("the deadline passed")
	if _, err := c.Read(b); !errors.Is(err, os.ErrDeadlineExceeded) {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read after the deadline: %v, want a timeout", err)
		}
	}
	c.SetReadDeadline(time.Time{})

	w = nettest.StartWait(t, c.WaitRead)
	w.Blocked("no data again")
	close(more)
	w.Ends("the stream ended")
	if _, err := c.Read(b); err != io.EOF {
		t.Fatalf("read at the end: %v, want EOF", err)
	}
}
