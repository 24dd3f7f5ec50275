package sniff

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// clientHello returns the bytes a crypto/tls client writes first: its
// ClientHello, in one or more TLS records.
func clientHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	c, s := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tls.Client(c, cfg).Handshake() // fails once s is closed
	}()
	var out []byte
	hdr := make([]byte, 5)
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	// Read records until the handshake message they carry is complete.
	for {
		if _, err := io.ReadFull(s, hdr); err != nil {
			t.Fatalf("reading record header: %v", err)
		}
		body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
		if _, err := io.ReadFull(s, body); err != nil {
			t.Fatalf("reading record: %v", err)
		}
		out = append(out, hdr...)
		out = append(out, body...)
		if _, err := TLS(out); err != ErrNeedMore {
			break
		}
	}
	s.Close()
	c.Close()
	<-done
	return out
}

// reframe splits the handshake bytes of the records in b into records of at
// most n bytes of payload each.
func reframe(b []byte, n int) []byte {
	var payload []byte
	for len(b) >= 5 {
		l := int(b[3])<<8 | int(b[4])
		payload = append(payload, b[5:5+l]...)
		b = b[5+l:]
	}
	var out []byte
	for len(payload) > 0 {
		k := min(n, len(payload))
		out = append(out, 0x16, 3, 1, byte(k>>8), byte(k))
		out = append(out, payload[:k]...)
		payload = payload[k:]
	}
	return out
}

func TestTLS(t *testing.T) {
	plain := clientHello(t, &tls.Config{ServerName: "Example.COM"})
	var alpn []string
	for i := range 80 {
		alpn = append(alpn, strings.Repeat(string(rune('a'+i%26)), 250))
	}
	big := clientHello(t, &tls.Config{ServerName: "big.example.org", NextProtos: alpn})
	if l := int(big[3])<<8 | int(big[4]); l >= len(big)-5 {
		t.Fatalf("large ClientHello was not split over records (record %d of %d bytes)", l, len(big))
	}
	noSNI := clientHello(t, &tls.Config{InsecureSkipVerify: true})
	ipSNI := clientHello(t, &tls.Config{ServerName: "192.0.2.1"})
	tests := []struct {
		name string
		in   []byte
		host string
		err  error
	}{
		{"one record", plain, "example.com", nil},
		{"with trailing data", append(append([]byte{}, plain...), 0x17, 3, 3, 0, 1, 0), "example.com", nil},
		{"split by crypto/tls", big, "big.example.org", nil},
		{"records of 7 bytes", reframe(plain, 7), "example.com", nil},
		{"records of 1 byte", reframe(plain, 1), "example.com", nil},
		{"records of 200 bytes", reframe(plain, 200), "example.com", nil},
		{"no server name", noSNI, "", ErrNoHost},
		{"IP server name is not sent", ipSNI, "", ErrNoHost},
		{"empty", nil, "", ErrNeedMore},
		{"HTTP", []byte("GET / HTTP/1.1\r\n"), "", ErrNoMatch},
		{"bad version", []byte{0x16, 2, 0, 0, 5}, "", ErrNoMatch},
		{"zero-length record", []byte{0x16, 3, 1, 0, 0}, "", ErrNoMatch},
		{"not ClientHello", []byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, "", ErrNoMatch},
		{"huge handshake", []byte{0x16, 3, 1, 0, 4, 1, 0xff, 0xff, 0xff}, "", ErrNoMatch},
		{"truncated hello body", []byte{0x16, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3}, "", ErrNoMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, err := TLS(tt.in)
			if host != tt.host || err != tt.err {
				t.Fatalf("TLS() = %q, %v; want %q, %v", host, err, tt.host, tt.err)
			}
		})
	}
	// Every proper prefix of a ClientHello asks for more.
	for _, in := range [][]byte{plain, big, reframe(plain, 100)} {
		for n := range len(in) - 1 {
			if _, err := TLS(in[:n]); err != ErrNeedMore {
				t.Fatalf("TLS(prefix %d of %d) = %v; want ErrNeedMore", n, len(in), err)
			}
		}
	}
}

func TestHTTP(t *testing.T) {
	tests := []struct {
		in   string
		host string
		err  error
	}{
		{"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", "example.com", nil},
		{"POST /x HTTP/1.0\r\nUser-Agent: a\r\nhOsT:   WWW.Example.com:8080 \r\n\r\n", "www.example.com", nil},
		{"GET / HTTP/1.1\nHost: a.b\n\n", "a.b", nil},
		{"HEAD / HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\n", "2001:db8::1", nil},
		{"OPTIONS * HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n", "192.0.2.1", nil},
		{"CONNECT example.net:443 HTTP/1.1\r\nHost: example.net:443\r\n\r\n", "example.net", nil},
		{"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", "", ErrNoHost},
		{"GET / HTTP/1.1\r\nHost: bad host\r\n\r\n", "", ErrNoMatch},
		{"GET / HTTP/1.1\r\nAccept: */*\r\n", "", ErrNeedMore},
		{"GET / HTTP/1.1\r\nHost: exam", "", ErrNeedMore},
		{"GET / HTTP/1.1", "", ErrNeedMore},
		{"GE", "", ErrNeedMore},
		{"GET", "", ErrNeedMore},
		{"", "", ErrNeedMore},
		{"GETX / HTTP/1.1\r\n", "", ErrNoMatch},
		{"get / HTTP/1.1\r\n", "", ErrNoMatch},
		{"GET / HTTP/2.0\r\n", "", ErrNoMatch},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "", ErrNoMatch},
		{"SSH-2.0-OpenSSH_9.6\r\n", "", ErrNoMatch},
		{"GET /" + strings.Repeat("a", maxHTTPHead), "", ErrNoMatch},
	}
	for _, tt := range tests {
		host, err := HTTP([]byte(tt.in))
		if host != tt.host || err != tt.err {
			t.Errorf("HTTP(%.40q) = %q, %v; want %q, %v", tt.in, host, err, tt.host, tt.err)
		}
	}
}

func TestSniff(t *testing.T) {
	hello := clientHello(t, &tls.Config{ServerName: "tls.example"})
	tests := []struct {
		in          []byte
		host, proto string
		err         error
	}{
		{hello, "tls.example", ProtoTLS, nil},
		{[]byte("GET / HTTP/1.1\r\nHost: h.example\r\n\r\n"), "h.example", ProtoHTTP, nil},
		{hello[:3], "", "", ErrNeedMore},
		{[]byte("PO"), "", "", ErrNeedMore},
		{[]byte("GET / HTTP/1.1\r\n\r\n"), "", ProtoHTTP, ErrNoHost},
		{[]byte{0x16}, "", "", ErrNeedMore},
		{[]byte("\x00\x01binary"), "", "", ErrNoMatch},
	}
	for _, tt := range tests {
		host, proto, err := Sniff(tt.in)
		if host != tt.host || proto != tt.proto || err != tt.err {
			t.Errorf("Sniff(%.20q) = %q, %q, %v; want %q, %q, %v", tt.in, host, proto, err, tt.host, tt.proto, tt.err)
		}
	}
}

func readHex(t testing.TB, file string) []byte {
	t.Helper()
	s, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(s)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInitialKeys checks key derivation against RFC 9001 Appendix A.1 and
// RFC 9369 Appendix A.1 (Destination Connection ID 0x8394c8f03e515708), and
// the header protection mask against their Appendix A.2.
func TestInitialKeys(t *testing.T) {
	dcid, _ := hex.DecodeString("8394c8f03e515708")
	for _, tt := range []struct {
		version       uint32
		secret        string
		key, iv       string
		sample, mask4 string
		maskLow       byte
	}{
		{quicV1, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea",
			"1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c",
			"d1b1c98dd7689fb8ec11d242b123dc9b", "7b9aec36", 0x3},
		{quicV2, "14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b",
			"8b1a0bc121284290a29e0971b5cd045d", "91f73e2351d8fa91660e909f",
			"ffe67b6abcdb4298b485dd04de806071", "a0c95e80", 0x4},
	} {
		salt, keyLabel := saltV1, "quic key"
		if tt.version == quicV2 {
			salt, keyLabel = saltV2, "quicv2 key"
		}
		initial, _ := hkdf.Extract(sha256.New, dcid, salt)
		client, _ := expandLabel(initial, "client in", 32)
		if got := hex.EncodeToString(client); got != tt.secret {
			t.Errorf("v%x client secret = %s; want %s", tt.version, got, tt.secret)
		}
		key, _ := expandLabel(client, keyLabel, 16)
		if got := hex.EncodeToString(key); got != tt.key {
			t.Errorf("v%x key = %s; want %s", tt.version, got, tt.key)
		}
		k, err := deriveInitialKeys(tt.version, dcid)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(k.iv[:]); got != tt.iv {
			t.Errorf("v%x iv = %s; want %s", tt.version, got, tt.iv)
		}
		sample, _ := hex.DecodeString(tt.sample)
		var mask [16]byte
		k.hp.Encrypt(mask[:], sample)
		if got := hex.EncodeToString(mask[1:5]); got != tt.mask4 || mask[0]&0x0f != tt.maskLow {
			t.Errorf("v%x mask = %x; want ?%x%s", tt.version, mask[:5], tt.maskLow, tt.mask4)
		}
	}
}

func TestQUICVectors(t *testing.T) {
	for _, file := range []string{"testdata/rfc9001-client-initial.hex", "testdata/rfc9369-client-initial.hex"} {
		pkt := readHex(t, file)
		orig := append([]byte(nil), pkt...)
		host, err := QUIC(pkt)
		if host != "example.com" || err != nil {
			t.Errorf("%s: QUIC() = %q, %v; want example.com", file, host, err)
		}
		if string(orig) != string(pkt) {
			t.Errorf("%s: QUIC modified its input", file)
		}
		// Damaged packets are refused, never a panic.
		for _, n := range []int{0, 1, 5, 6, 20, 22, 40, 100, len(pkt) - 1} {
			if _, err := QUIC(pkt[:n]); err != ErrNoMatch {
				t.Errorf("%s: QUIC(first %d bytes) = %v; want ErrNoMatch", file, n, err)
			}
		}
		bad := append([]byte(nil), pkt...)
		bad[len(bad)-1] ^= 1
		if _, err := QUIC(bad); err != ErrNoMatch {
			t.Errorf("%s: QUIC(bad tag) = %v; want ErrNoMatch", file, err)
		}
		// A coalesced short-header packet after the Initial is ignored.
		withShort := append(append([]byte(nil), pkt...), 0x40, 1, 2, 3)
		if host, err := QUIC(withShort); host != "example.com" || err != nil {
			t.Errorf("%s: QUIC(coalesced) = %q, %v", file, host, err)
		}
	}
	if _, err := QUIC([]byte("GET / HTTP/1.1\r\n")); err != ErrNoMatch {
		t.Errorf("QUIC(HTTP) = %v; want ErrNoMatch", err)
	}
}

// TestQUICReassembly feeds CRYPTO fragments out of order, as Chrome sends
// them, and checks that the ClientHello is found only once complete.
func TestQUICReassembly(t *testing.T) {
	hello := clientHello(t, &tls.Config{ServerName: "frag.example"})
	msg := hello[5:] // one record: the handshake message
	var s QUICSniffer
	frags := []struct{ off, end int }{{300, len(msg)}, {100, 200}, {150, 320}, {0, 50}}
	for _, f := range frags {
		if err := s.addCrypto(f.off, msg[f.off:f.end]); err != nil {
			t.Fatal(err)
		}
		if host, err := s.clientHello(); err != ErrNeedMore {
			t.Fatalf("after [%d,%d): %q, %v; want ErrNeedMore", f.off, f.end, host, err)
		}
	}
	if err := s.addCrypto(50, msg[50:100]); err != nil {
		t.Fatal(err)
	}
	if host, err := s.clientHello(); host != "frag.example" || err != nil {
		t.Fatalf("complete: %q, %v", host, err)
	}
	if s.nspans != 1 {
		t.Fatalf("spans not merged: %v", s.spans[:s.nspans])
	}
}

// TestQUICGoClient captures the Initial datagrams of a real quic-go client,
// whose post-quantum key share makes the ClientHello span two packets.
func TestQUICGoClient(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		datagrams := captureQUICInitials(t, "quic.example", v2)
		var s QUICSniffer
		var host string
		var err error
		for i, d := range datagrams {
			host, err = s.Feed(d)
			if err != ErrNeedMore {
				t.Logf("v2=%v: SNI found after %d datagram(s)", v2, i+1)
				break
			}
		}
		if host != "quic.example" || err != nil {
			t.Fatalf("v2=%v: Feed = %q, %v", v2, host, err)
		}
		if len(datagrams) > 1 {
			if _, err := QUIC(datagrams[0]); err != ErrNeedMore {
				t.Errorf("v2=%v: first datagram alone: %v; want ErrNeedMore", v2, err)
			}
		}
	}
}

// captureQUICInitials returns the first datagrams a quic-go client sends
// to a silent UDP socket.
func captureQUICInitials(t *testing.T, sni string, v2 bool) [][]byte {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		dialQUIC(ctx, pc.LocalAddr().String(), sni, v2)
	}()
	defer func() { cancel(); <-done }()
	var out [][]byte
	buf := make([]byte, 2048)
	for len(out) < 3 {
		_ = pc.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && len(out) > 0 {
				break
			}
			t.Fatalf("capturing QUIC datagrams: %v", err)
		}
		out = append(out, append([]byte(nil), buf[:n]...))
	}
	return out
}

func FuzzSniff(f *testing.F) {
	f.Add(clientHello(f, &tls.Config{ServerName: "example.com"}))
	f.Add(reframe(clientHello(f, &tls.Config{ServerName: "example.com"}), 50))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"))
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		host, proto, err := Sniff(b)
		if err == nil && (host == "" || proto == "") {
			t.Fatalf("success without a host: %q %q", host, proto)
		}
		if h, err := HTTP(b); err == nil && h == "" {
			t.Fatal("HTTP success without a host")
		}
	})
}

func FuzzQUIC(f *testing.F) {
	f.Add(readHex(f, "testdata/rfc9001-client-initial.hex"), []byte(nil))
	f.Add(readHex(f, "testdata/rfc9369-client-initial.hex"), []byte{0xc0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var s QUICSniffer
		if _, err := s.Feed(a); err == ErrNeedMore {
			_, _ = s.Feed(b)
		}
		_, _ = QUIC(b)
	})
}

// TestAllocs checks that a successful sniff allocates only the returned
// host name (and, for a split ClientHello, nothing once the pool is warm).
func TestAllocs(t *testing.T) {
	hello := clientHello(t, &tls.Config{ServerName: "example.com"})
	split := reframe(hello, 100)
	req := []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"TLS one record", func() { _, _ = TLS(hello) }},
		{"TLS split", func() { _, _ = TLS(split) }},
		{"HTTP", func() { _, _ = HTTP(req) }},
		{"Sniff need more", func() { _, _, _ = Sniff(hello[:50]) }},
	} {
		if n := testing.AllocsPerRun(100, tt.f); n > 1 {
			t.Errorf("%s: %v allocations per call; want at most 1", tt.name, n)
		}
	}
}

func BenchmarkTLS(b *testing.B) {
	hello := clientHello(b, &tls.Config{ServerName: "example.com"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TLS(hello); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQUIC(b *testing.B) {
	pkt := readHex(b, "testdata/rfc9001-client-initial.hex")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := QUIC(pkt); err != nil {
			b.Fatal(err)
		}
	}
}
