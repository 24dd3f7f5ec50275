package shadowtls

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"net"
	"testing"
	"time"
)

// The server side of the protocol, written from the specification
// (ihciah/shadow-tls docs/protocol-v3-en.md) and sing-shadowtls's server,
// independently of the client's code.

// record is a TLS record of type typ around body.
func record(typ byte, body []byte) []byte {
	return append([]byte{typ, 3, 3, byte(len(body) >> 8), byte(len(body))}, body...)
}

// tagged is a data record: tag | data, the tag m's sum over data, which
// m is then fed (feed, the data phase) or not (the handshake's rewriting).
func tagged(m hash.Hash, data []byte, feed bool) []byte {
	m.Write(data)
	tag := m.Sum(nil)[:tagSize]
	if feed {
		m.Write(tag)
	}
	return record(typeApplicationData, append(append([]byte(nil), tag...), data...))
}

// serverHello is a ServerHello record carrying random.
func serverHello(random []byte) []byte {
	body := append([]byte{handshakeServerHello, 0, 0, 70, 3, 3}, random...)
	return record(typeHandshake, append(body, make([]byte, 38)...))
}

// rewrite is what the server does to one of the site's ApplicationData
// records during the handshake.
func rewrite(password string, random []byte, m hash.Hash, rec []byte) []byte {
	key := sha256.Sum256(append([]byte(password), random...))
	data := append([]byte(nil), rec[recordHeader:]...)
	for i := range data {
		data[i] ^= key[i%len(key)]
	}
	return tagged(m, data, false)
}

func hmacSHA1(password string, seed ...string) hash.Hash {
	m := hmac.New(sha1.New, []byte(password))
	for _, s := range seed {
		m.Write([]byte(s))
	}
	return m
}

// readConn is a connection whose reads come from r; writes go to w.
type readConn struct {
	net.Conn
	r io.Reader
	w bytes.Buffer
}

func (c *readConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *readConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// TestSessionIDAsServerChecks: the ClientHello that goes on the wire
// carries the session id the way sing-shadowtls's server verifies it
// (HMAC-SHA1 over the hello, record header left out, with the tag's 4
// bytes zero), for each fingerprint; a server with another password
// would relay it to the site.
func TestSessionIDAsServerChecks(t *testing.T) {
	for _, fp := range []string{"", "chrome", "firefox", "safari", "edge", "ios"} {
		t.Run(fp, func(t *testing.T) {
			c, err := New(Config{Password: "pw", ServerName: "cloud.example.com", Fingerprint: fp})
			if err != nil {
				t.Fatal(err)
			}
			client, server := net.Pipe()
			defer server.Close()
			done := make(chan error, 1)
			go func() {
				_, err := c.Handshake(context.Background(), client)
				client.Close()
				done <- err
			}()
			server.SetDeadline(time.Now().Add(5 * time.Second))
			frame, err := readRecord(server, nil)
			if err != nil {
				t.Fatal(err)
			}
			server.Close()
			if err := <-done; err == nil {
				t.Fatal("a handshake without a server succeeded")
			}
			const idLenAt = recordHeader + sessionIDAt - 1
			const tagAt = idLenAt + 1 + sessionIDLen - tagSize
			if frame[0] != typeHandshake || frame[recordHeader] != 1 || frame[idLenAt] != sessionIDLen {
				t.Fatalf("not a ClientHello with a 32-byte session id: % x", frame[:idLenAt+1])
			}
			for _, tc := range []struct {
				password string
				want     bool
			}{{"pw", true}, {"pw2", false}} {
				m := hmacSHA1(tc.password)
				m.Write(frame[recordHeader:tagAt])
				m.Write(make([]byte, tagSize))
				m.Write(frame[tagAt+tagSize:])
				if got := hmac.Equal(m.Sum(nil)[:tagSize], frame[tagAt:tagAt+tagSize]); got != tc.want {
					t.Errorf("password %q: verified %v, want %v", tc.password, got, tc.want)
				}
			}
		})
	}
}

// TestHandshakeUnwraps: the site's records as the server rewrote them are
// handed to the TLS client as the site sent them, proving the server;
// a record not rewritten (the site itself answering) marks the
// handshake forged.
func TestHandshakeUnwraps(t *testing.T) {
	random := make([]byte, randomSize)
	rand.Read(random)
	site := [][]byte{record(typeApplicationData, bytes.Repeat([]byte{0xAA}, 100)), record(typeApplicationData, bytes.Repeat([]byte{0x55}, 3000))}
	m := hmacSHA1("pw", string(random))
	var wire bytes.Buffer
	hello := serverHello(random)
	wire.Write(hello)
	wire.Write(record(typeChangeCipherSpec, []byte{1}))
	for _, r := range site {
		wire.Write(rewrite("pw", random, m, r))
	}
	h := &handshakeConn{Conn: &readConn{r: &wire}, password: []byte("pw")}
	got, err := io.ReadAll(h)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Join(append([][]byte{hello, record(typeChangeCipherSpec, []byte{1})}, site...), nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("handed %d bytes, want the site's %d", len(got), len(want))
	}
	if !h.proven || h.forged || !bytes.Equal(h.random, random) {
		t.Fatalf("proven %v forged %v random ok %v", h.proven, h.forged, bytes.Equal(h.random, random))
	}

	for name, rec := range map[string][]byte{
		"not rewritten": site[0],
		"other password": func() []byte {
			return rewrite("other", random, hmacSHA1("other", string(random)), site[0])
		}(),
		"too short": record(typeApplicationData, []byte{1, 2, 3}),
	} {
		h := &handshakeConn{Conn: &readConn{r: io.MultiReader(bytes.NewReader(hello), bytes.NewReader(rec))}, password: []byte("pw")}
		if got, _ := io.ReadAll(h); !bytes.Equal(got[len(hello):], rec) {
			t.Errorf("%s: the record was changed", name)
		}
		if h.proven || !h.forged {
			t.Errorf("%s: proven %v forged %v", name, h.proven, h.forged)
		}
	}
}

// TestConnFraming: after the switch, writes go out as records the server
// verifies by the "C" MAC chain; reads drop the site's records still in
// flight, return the data of the server's "S" records and end at an
// alert; a tampered record, or one of the site's after the server's data
// began, is refused.
func TestConnFraming(t *testing.T) {
	random := make([]byte, randomSize)
	rand.Read(random)
	newStream := func() (*bytes.Buffer, hash.Hash, hash.Hash) {
		hs := hmacSHA1("pw", string(random))
		hs.Write([]byte("earlier records"))
		return &bytes.Buffer{}, hs, hmacSHA1("pw", string(random), "S")
	}
	clientHS := func() hash.Hash {
		m := hmacSHA1("pw", string(random))
		m.Write([]byte("earlier records"))
		return m
	}

	wire, hs, s := newStream()
	wire.Write(tagged(hs, []byte("session ticket"), false))
	big := make([]byte, 40000)
	rand.Read(big)
	wire.Write(tagged(s, []byte("hello"), true))
	wire.Write(tagged(s, big[:maxData], true))
	wire.Write(tagged(s, big[maxData:], true))
	wire.Write(record(typeAlert, []byte{1, 0}))
	raw := &readConn{r: wire}
	c := newConn(raw, []byte("pw"), random, clientHS())
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte("hello"), big...); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d", len(got), len(want))
	}

	// Writes: records of at most 2^14 bytes with the tag, the "C" chain.
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	cm := hmacSHA1("pw", string(random), "C")
	var sent []byte
	for out := raw.w.Bytes(); len(out) > 0; {
		rec, err := readRecord(bytes.NewReader(out), nil)
		if err != nil {
			t.Fatal(err)
		}
		out = out[len(rec):]
		if rec[0] != typeApplicationData || len(rec) > recordHeader+1<<14 {
			t.Fatalf("record type %d, %d bytes", rec[0], len(rec))
		}
		data := rec[recordHeader+tagSize:]
		cm.Write(data)
		tag := cm.Sum(nil)[:tagSize]
		cm.Write(tag)
		if !bytes.Equal(tag, rec[recordHeader:recordHeader+tagSize]) {
			t.Fatal("a written record's tag does not verify")
		}
		sent = append(sent, data...)
	}
	if !bytes.Equal(sent, big) {
		t.Fatal("the written records do not carry the data")
	}

	for name, build := range map[string]func(w *bytes.Buffer, hs, s hash.Hash){
		"tampered": func(w *bytes.Buffer, _, s hash.Hash) {
			r := tagged(s, []byte("data"), true)
			r[len(r)-1] ^= 1
			w.Write(r)
		},
		"site after data": func(w *bytes.Buffer, hs, s hash.Hash) {
			w.Write(tagged(s, []byte("data"), true))
			w.Write(tagged(hs, []byte("late ticket"), false))
		},
		"replayed": func(w *bytes.Buffer, _, s hash.Hash) {
			r := tagged(s, []byte("data"), true)
			w.Write(r)
			w.Write(r)
		},
		"handshake record": func(w *bytes.Buffer, _, _ hash.Hash) { w.Write(record(typeHandshake, []byte{4, 0, 0, 0})) },
		"cut":              func(w *bytes.Buffer, _, s hash.Hash) { w.Write(tagged(s, []byte("data"), true)[:8]) },
	} {
		wire, hs, s := newStream()
		build(wire, hs, s)
		_, err := io.ReadAll(newConn(&readConn{r: wire}, []byte("pw"), random, clientHS()))
		if err == nil {
			t.Errorf("%s: read without error", name)
		} else if name != "cut" && !errors.Is(err, errBadMAC) && !errors.Is(err, errRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzConnRead: whatever the server sends after the switch, Read returns
// no more data than came in, never panics, and ends in an error or EOF.
func FuzzConnRead(f *testing.F) {
	random := bytes.Repeat([]byte{7}, randomSize)
	hs := hmacSHA1("pw", string(random))
	s := hmacSHA1("pw", string(random), "S")
	f.Add(append(tagged(hs, []byte("ticket"), false), tagged(s, []byte("data"), true)...))
	f.Add(record(typeAlert, []byte{1, 0}))
	f.Add([]byte{23, 3, 3, 0xff, 0xff, 1})
	f.Add([]byte{23, 3, 3, 0, 2, 1, 2})
	f.Fuzz(func(t *testing.T, in []byte) {
		hs := hmacSHA1("pw", string(random))
		c := newConn(&readConn{r: bytes.NewReader(in)}, []byte("pw"), random, hs)
		got, err := io.ReadAll(c)
		if len(got) > len(in) {
			t.Fatalf("read %d bytes out of %d", len(got), len(in))
		}
		if err == nil && !wholeRecords(in) {
			t.Fatal("a cut record read without error")
		}
	})
}

// wholeRecords reports whether in is whole records up to its end or up to
// and with an alert: the only input io.ReadAll may end without an error.
func wholeRecords(in []byte) bool {
	for len(in) > 0 {
		if len(in) < recordHeader {
			return false
		}
		n := recordHeader + (int(in[3])<<8 | int(in[4]))
		if len(in) < n {
			return false
		}
		if in[0] == typeAlert {
			return true
		}
		in = in[n:]
	}
	return true
}

// FuzzHandshakeRead: whatever the server sends during the handshake, the
// records handed to the TLS client are as long as the wire's less their
// tags, and nothing panics.
func FuzzHandshakeRead(f *testing.F) {
	random := bytes.Repeat([]byte{9}, randomSize)
	f.Add(append(serverHello(random), rewrite("pw", random, hmacSHA1("pw", string(random)), record(typeApplicationData, []byte("finished")))...))
	f.Add(serverHello(random))
	f.Add([]byte{22, 3, 3, 0, 1, 2})
	f.Fuzz(func(t *testing.T, in []byte) {
		h := &handshakeConn{Conn: &readConn{r: bytes.NewReader(in)}, password: []byte("pw")}
		got, _ := io.ReadAll(h)
		if len(got) > len(in) {
			t.Fatalf("handed %d bytes out of %d", len(got), len(in))
		}
		if h.proven && h.random == nil {
			t.Fatal("proven without a ServerHello")
		}
	})
}

// TestV2Framing: v2's writes are ApplicationData records of at most 2^14
// bytes, the first led by the 8-byte HMAC of what the server sent during
// the handshake; reads return the records' data and end at an alert.
func TestV2Framing(t *testing.T) {
	m := hmacSHA1("pw")
	m.Write([]byte("the server's handshake bytes"))
	prefix := m.Sum(nil)[:v2PrefixSize]
	var wire bytes.Buffer
	wire.Write(record(typeApplicationData, []byte("hello ")))
	wire.Write(record(typeApplicationData, []byte("world")))
	wire.Write(record(typeAlert, []byte{1, 0}))
	raw := &readConn{r: &wire}
	c := &v2Conn{Conn: raw, prefix: prefix}
	if got, err := io.ReadAll(c); err != nil || string(got) != "hello world" {
		t.Fatalf("read %q, %v", got, err)
	}
	big := make([]byte, 20000)
	rand.Read(big)
	if n, err := c.Write(big); n != len(big) || err != nil {
		t.Fatalf("write %d, %v", n, err)
	}
	c.Write([]byte("more"))
	var data []byte
	out := raw.w.Bytes()
	for i := 0; len(out) > 0; i++ {
		rec, err := readRecord(bytes.NewReader(out), nil)
		if err != nil {
			t.Fatal(err)
		}
		out = out[len(rec):]
		if rec[0] != typeApplicationData || len(rec) > recordHeader+1<<14 {
			t.Fatalf("record %d: type %d, %d bytes", i, rec[0], len(rec))
		}
		body := rec[recordHeader:]
		if i == 0 {
			if !bytes.Equal(body[:v2PrefixSize], prefix) {
				t.Fatal("the first record does not lead with the HMAC")
			}
			body = body[v2PrefixSize:]
		}
		data = append(data, body...)
	}
	if !bytes.Equal(data, append(big, "more"...)) {
		t.Fatal("the records do not carry the data")
	}
	for name, in := range map[string][]byte{
		"handshake record": record(typeHandshake, []byte{4, 0, 0, 0}),
		"cut":              record(typeApplicationData, []byte("data"))[:7],
	} {
		if _, err := io.ReadAll(&v2Conn{Conn: &readConn{r: bytes.NewReader(in)}}); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

// FuzzV2Read: v2's reads return no more than came in and end in an error
// unless the input is whole records.
func FuzzV2Read(f *testing.F) {
	f.Add(append(record(typeApplicationData, []byte("data")), record(typeAlert, []byte{1, 0})...))
	f.Add([]byte{23, 3, 3, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := io.ReadAll(&v2Conn{Conn: &readConn{r: bytes.NewReader(in)}})
		if len(got) > len(in) {
			t.Fatalf("read %d bytes out of %d", len(got), len(in))
		}
		if err == nil && !wholeRecords(in) {
			t.Fatal("a cut record read without error")
		}
	})
}
