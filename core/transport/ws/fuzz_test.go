package ws

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
)

// acceptToken in a script stands for the Sec-WebSocket-Accept value that
// answers the key of the upgrade request the client wrote, so that the
// fuzzer can get past the handshake.
const acceptToken = "@ACCEPT@"

// scriptServer is a server conn that answers with a fixed script and
// swallows what the client writes (requests, pongs, close frames).
type scriptServer struct {
	script []byte
	r      *bytes.Reader // set on the first Read, once the request is written

	mu      sync.Mutex
	written bytes.Buffer
}

var keyRe = regexp.MustCompile(`(?i)sec-websocket-key: *([^\r\n]*)`)

func (c *scriptServer) Read(p []byte) (int, error) {
	if c.r == nil {
		c.mu.Lock()
		m := keyRe.FindSubmatch(c.written.Bytes())
		c.mu.Unlock()
		script := c.script
		if m != nil {
			h := sha1.Sum(append(m[1], "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"...))
			script = bytes.ReplaceAll(script, []byte(acceptToken), []byte(base64.StdEncoding.EncodeToString(h[:])))
		}
		c.r = bytes.NewReader(script)
	}
	return c.r.Read(p)
}

func (c *scriptServer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written.Write(p)
}
func (c *scriptServer) Close() error                     { return nil }
func (c *scriptServer) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptServer) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptServer) SetDeadline(time.Time) error      { return nil }
func (c *scriptServer) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptServer) SetWriteDeadline(time.Time) error { return nil }

// tryScriptServer can TryRead, as tlsconf.Conn can: Read then takes the
// frame path without a bufio.Reader.
type tryScriptServer struct{ *scriptServer }

func (c tryScriptServer) TryRead(p []byte) (int, error) { return c.Read(p) }

const answer101 = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acceptToken + "\r\n"

// dataFrames decodes frames with gobwas as the reference: the payload of
// the data frames up to a close frame or the first header gobwas refuses,
// including what there is of a last, truncated frame.
func dataFrames(b []byte) []byte {
	r := bytes.NewReader(b)
	var out []byte
	for {
		h, err := ws.ReadHeader(r)
		if err != nil {
			return out
		}
		p := make([]byte, min(h.Length, int64(r.Len())))
		r.Read(p)
		if h.Masked {
			ws.Cipher(p, h.Mask, 0)
		}
		switch {
		case h.OpCode == ws.OpClose:
			return out
		case !h.OpCode.IsControl():
			out = append(out, p...)
		}
		if int64(len(p)) < h.Length {
			return out
		}
	}
}

// headEnd returns where the answer's head ends: after the first blank
// line, lines ending in "\n" or "\r\n" (gobwas takes both); -1 without one.
func headEnd(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// FuzzClient runs the client over a server that answers with arbitrary
// bytes: the upgrade answer and then frames. The client must never panic
// or hang, and what Read returns is a prefix of the data frames' payload as
// gobwas decodes it (all of it when Read ends with io.EOF).
func FuzzClient(f *testing.F) {
	head := answer101 + "\r\n"
	for _, seed := range []struct {
		script string
		mode   byte
	}{
		{head + string(mustFrame(ws.NewBinaryFrame([]byte("hello")))), 0},
		{head + string(mustFrame(ws.NewBinaryFrame([]byte("hello")))), 1},
		{head + string(mustFrame(ws.NewPingFrame([]byte("p")))) + string(mustFrame(ws.NewTextFrame([]byte("x")))) + string(mustFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(1000, "")))), 2},
		{head + string(mustFrame(ws.MaskFrame(ws.NewBinaryFrame(bytes.Repeat([]byte("m"), 300))))), 3},
		{head + "\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00abc", 0},
		{head + "\x89\x7e\x00\x80", 1},
		{head + "\xc2\x01a", 0},
		{answer101 + "Sec-WebSocket-Protocol: other\r\n\r\n", 2},
		{"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 0},
		{"HTTP/1.0 101 Switching Protocols\r\n\r\n", 0},
		{answer101, 1},
	} {
		f.Add([]byte(seed.script), seed.mode)
	}
	f.Fuzz(func(t *testing.T, script []byte, mode byte) {
		srv := &scriptServer{script: script}
		var raw net.Conn = srv
		if mode&1 != 0 {
			raw = tryScriptServer{srv}
		}
		cfg := Config{Host: "cdn.example", Path: "/ws"}
		if mode&2 != 0 {
			cfg.MaxEarlyData = 8
		}
		done := make(chan struct{})
		var got []byte
		var rerr error
		go func() {
			defer close(done)
			c, err := Client(context.Background(), raw, cfg)
			if err != nil {
				return
			}
			if cfg.MaxEarlyData > 0 {
				if _, err := c.Write([]byte("early")); err != nil {
					return
				}
			}
			buf := make([]byte, 1+int(mode>>2)*97) // reads of several sizes
			for {
				n, err := c.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					rerr = err
					return
				}
				if n == 0 {
					rerr = errors.New("Read returned 0, nil")
					return
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the client hangs on %q", script)
		}
		if rerr == nil {
			return // the upgrade failed
		}
		if len(got) > len(script) {
			t.Fatalf("read %d payload bytes from a %d-byte script", len(got), len(script))
		}
		end := headEnd(script)
		if end < 0 {
			t.Fatalf("upgraded without a whole answer: %q", script)
		}
		want := dataFrames(script[end:])
		if !bytes.HasPrefix(want, got) || rerr == io.EOF && !bytes.Equal(got, want) {
			t.Fatalf("read %q (%v); the frames carry %q", got, rerr, want)
		}
	})
}

// TestUpgradeAnswerLimit answers the upgrade with heads around
// maxResponseHead: up to it the upgrade succeeds, beyond it (or with an
// endless line) it fails with an error that says so.
func TestUpgradeAnswerLimit(t *testing.T) {
	answer := func(n int) string {
		const pad = "X-Pad: "
		fixed := len(answer101) - len(acceptToken) + 28 + len(pad) + 4 // the accept value is 28 characters
		if n < fixed {
			t.Fatalf("answer of %d bytes cannot be built", n)
		}
		return answer101 + pad + strings.Repeat("p", n-fixed) + "\r\n\r\n"
	}
	for _, tc := range []struct {
		name   string
		script string
		ok     bool
	}{
		{"plain", answer101 + "\r\n", true},
		{"max-1", answer(maxResponseHead - 1), true},
		{"max", answer(maxResponseHead), true},
		{"max+1", answer(maxResponseHead + 1), false},
		{"endless line", answer101 + "X-Pad: " + strings.Repeat("p", 1<<20), false},
		{"truncated", answer101, false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Client(context.Background(), &scriptServer{script: []byte(tc.script)}, Config{Host: "h"})
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v; want success %v", err, tc.ok)
			}
			if strings.HasPrefix(tc.name, "max+1") || strings.HasPrefix(tc.name, "endless") {
				if !strings.Contains(err.Error(), "answer longer than 65536 bytes") {
					t.Errorf("err = %v; want one that names the limit", err)
				}
			}
		})
	}
}

// TestCloseEcho answers close frames of 0, 1, 2 and 125 bytes (the longest
// control frame): the client echoes the status code and nothing else, and
// no status at all for a body too short to hold one.
func TestCloseEcho(t *testing.T) {
	for _, tc := range []struct {
		body, echo []byte
	}{
		{nil, nil},
		{[]byte{3}, nil},
		{[]byte{3, 232}, []byte{3, 232}},
		{append([]byte{3, 233}, bytes.Repeat([]byte("r"), maxControl-2)...), []byte{3, 233}},
	} {
		closeFrame := mustFrame(ws.NewFrame(ws.OpClose, true, tc.body))
		srv := &scriptServer{script: append([]byte(answer101+"\r\n"), closeFrame...)}
		c, err := Client(context.Background(), srv, Config{Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 10)); err != io.EOF {
			t.Fatalf("%d-byte close: Read err = %v, want EOF", len(tc.body), err)
		}
		w := srv.written.Bytes()
		w = w[bytes.Index(w, []byte("\r\n\r\n"))+4:]
		f, err := ws.ReadFrame(bytes.NewReader(w))
		if err != nil || f.Header.OpCode != ws.OpClose {
			t.Fatalf("%d-byte close: client wrote %x (%v)", len(tc.body), w, err)
		}
		ws.Cipher(f.Payload, f.Header.Mask, 0)
		if !bytes.Equal(f.Payload, tc.echo) {
			t.Errorf("%d-byte close echoed as %x, want %x", len(tc.body), f.Payload, tc.echo)
		}
	}
}
