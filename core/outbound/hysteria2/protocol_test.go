package hysteria2

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/quic-go/quic-go/quicvarint"
)

func TestTCPRequestRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		addr    string
		pad     int
		wantErr error
	}{
		{"ipv4", "1.2.3.4:443", 64, nil},
		{"ipv6", "[2001:db8::1]:53", 0, nil},
		{"domain", "example.com:80", 511, nil},
		{"longest address", strings.Repeat("a", maxAddressLen-3) + ":80", 10, nil},
		{"longest padding", "a:1", maxPaddingLen, nil},
		{"address too long", strings.Repeat("a", maxAddressLen-2) + ":80", 10, errAddressTooLong},
		{"padding too long", "a:1", maxPaddingLen + 1, errPaddingTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := appendTCPRequest(nil, tt.addr, tt.pad)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("append: err %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			// The request ID is the two-byte varint 0x4401.
			if b[0] != 0x44 || b[1] != 0x01 {
				t.Fatalf("request starts % x, want 44 01", b[:2])
			}
			r := bytes.NewReader(append(b, "payload"...))
			got, err := readTCPRequest(r)
			if err != nil || got != tt.addr {
				t.Fatalf("read: %q, %v; want %q", got, err, tt.addr)
			}
			rest, _ := io.ReadAll(r)
			if string(rest) != "payload" {
				t.Fatalf("left %q after the request, want payload", rest)
			}
		})
	}
}

func TestReadTCPRequestMalformed(t *testing.T) {
	vi := func(v uint64) []byte { return quicvarint.Append(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"wrong id", cat(vi(0x402), vi(3), []byte("a:1"), vi(0)), errBadRequestID},
		{"address length over limit", cat(vi(tcpRequestID), vi(maxAddressLen+1)), errAddressTooLong},
		{"truncated address", cat(vi(tcpRequestID), vi(10), []byte("a:1")), io.ErrUnexpectedEOF},
		{"missing padding length", cat(vi(tcpRequestID), vi(3), []byte("a:1")), io.ErrUnexpectedEOF},
		{"padding over limit", cat(vi(tcpRequestID), vi(3), []byte("a:1"), vi(maxPaddingLen+1)), errPaddingTooLong},
		{"truncated padding", cat(vi(tcpRequestID), vi(3), []byte("a:1"), vi(5), []byte("xx")), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readTCPRequest(bytes.NewReader(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTCPResponseRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		ok      bool
		msg     string
		pad     int
		wantErr error
	}{
		{"ok", true, "", 0, nil},
		{"ok padded", true, "", 100, nil},
		{"error with message", false, "connection refused", 7, nil},
		{"longest message", false, strings.Repeat("m", maxMessageLen), maxPaddingLen, nil},
		{"message too long", false, strings.Repeat("m", maxMessageLen+1), 0, errMessageTooLong},
		{"padding too long", true, "", maxPaddingLen + 1, errPaddingTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := appendTCPResponse(nil, tt.ok, tt.msg, tt.pad)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("append: err %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			r := bytes.NewReader(append(b, "data"...))
			ok, msg, err := readTCPResponse(r)
			if err != nil || ok != tt.ok || msg != tt.msg {
				t.Fatalf("read: %v %q %v; want %v %q", ok, msg, err, tt.ok, tt.msg)
			}
			// The reader must stop at the end of the response: what
			// follows is the stream's data.
			rest, _ := io.ReadAll(r)
			if string(rest) != "data" {
				t.Fatalf("left %q after the response, want data", rest)
			}
		})
	}
}

func TestReadTCPResponseMalformed(t *testing.T) {
	vi := func(v uint64) []byte { return quicvarint.Append(nil, v) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, io.EOF},
		{"status only", []byte{0}, io.EOF},
		{"message over limit", cat([]byte{1}, vi(maxMessageLen+1)), errMessageTooLong},
		{"truncated message", cat([]byte{1}, vi(5), []byte("ab")), io.ErrUnexpectedEOF},
		{"padding over limit", cat([]byte{0}, vi(0), vi(maxPaddingLen+1)), errPaddingTooLong},
		{"no padding length", cat([]byte{0}, vi(0)), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readTCPResponse(bytes.NewReader(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

func TestUDPMessageRoundTrip(t *testing.T) {
	tests := []udpMessage{
		{SessionID: 1, FragCount: 1, Addr: []byte("1.2.3.4:53"), Payload: []byte("query")},
		{SessionID: 0xdeadbeef, PacketID: 0xbeef, FragID: 3, FragCount: 4, Addr: []byte("[::1]:443"), Payload: bytes.Repeat([]byte{7}, 1500)},
		{SessionID: 2, FragCount: 1, Addr: []byte("example.com:123"), Payload: nil},
		{SessionID: 3, FragCount: 1, Addr: bytes.Repeat([]byte("a"), maxAddressLen), Payload: []byte{1}},
	}
	for _, m := range tests {
		b := appendUDPMessage(nil, &m)
		if len(b) != m.headerLen()+len(m.Payload) {
			t.Errorf("encoded %d bytes, headerLen+payload = %d", len(b), m.headerLen()+len(m.Payload))
		}
		var got udpMessage
		if err := parseUDPMessage(b, &got); err != nil {
			t.Fatalf("parse %+v: %v", m, err)
		}
		if got.SessionID != m.SessionID || got.PacketID != m.PacketID || got.FragID != m.FragID ||
			got.FragCount != m.FragCount || !bytes.Equal(got.Addr, m.Addr) || !bytes.Equal(got.Payload, m.Payload) {
			t.Fatalf("round trip: got %+v, want %+v", got, m)
		}
	}
}

func TestUDPMessageWire(t *testing.T) {
	m := udpMessage{SessionID: 0x01020304, PacketID: 0x0506, FragID: 1, FragCount: 2, Addr: []byte("a:1"), Payload: []byte("xy")}
	want := []byte{1, 2, 3, 4, 5, 6, 1, 2, 3, 'a', ':', '1', 'x', 'y'}
	if got := appendUDPMessage(nil, &m); !bytes.Equal(got, want) {
		t.Fatalf("encoded % x, want % x", got, want)
	}
}

func TestParseUDPMessageMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, errShortMessage},
		{"header only", []byte{0, 0, 0, 1, 0, 0, 0, 1}, errShortMessage},
		{"fragment ID not below count", []byte{0, 0, 0, 1, 0, 0, 2, 2, 0}, errBadFragment},
		{"zero fragment count", []byte{0, 0, 0, 1, 0, 0, 0, 0, 0}, errBadFragment},
		{"address past the end", []byte{0, 0, 0, 1, 0, 0, 0, 1, 5, 'a', ':'}, errShortMessage},
		{"address over limit", append([]byte{0, 0, 0, 1, 0, 0, 0, 1}, quicvarint.Append(nil, maxAddressLen+1)...), errAddressTooLong},
		{"truncated varint", []byte{0, 0, 0, 1, 0, 0, 0, 1, 0x40}, errShortMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m udpMessage
			if err := parseUDPMessage(tt.in, &m); !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

func TestAuthHeaders(t *testing.T) {
	h := make(http.Header)
	authHeader(h, "pw", 12_500_000)
	if h.Get("Hysteria-Auth") != "pw" || h.Get("Hysteria-CC-RX") != "12500000" {
		t.Fatalf("headers %v", h)
	}
	if n := len(h.Get("Hysteria-Padding")); n < 256 || n > 2047 {
		t.Fatalf("padding of %d characters, want 256-2047", n)
	}

	tests := []struct {
		udp, ccrx string
		want      authResult
		wantErr   bool
	}{
		{"true", "auto", authResult{UDP: true, RxAuto: true}, false},
		{"false", "0", authResult{}, false},
		{"true", "1000000", authResult{UDP: true, Rx: 1000000}, false},
		{"", "", authResult{}, false},
		{"true", "fast", authResult{}, true},
	}
	for _, tt := range tests {
		h := make(http.Header)
		h.Set("Hysteria-UDP", tt.udp)
		h.Set("Hysteria-CC-RX", tt.ccrx)
		got, err := parseAuthResponse(h)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("UDP %q CC-RX %q: %+v, %v; want %+v", tt.udp, tt.ccrx, got, err, tt.want)
		}
	}
}

func FuzzReadTCPRequest(f *testing.F) {
	b, _ := appendTCPRequest(nil, "example.com:443", 3)
	f.Add(b)
	f.Add([]byte{0x44, 0x01, 0x80, 0, 0, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		addr, err := readTCPRequest(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(addr) > maxAddressLen {
			t.Fatalf("accepted a %d-byte address", len(addr))
		}
		re, err := appendTCPRequest(nil, addr, 0)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := readTCPRequest(bytes.NewReader(re)); err != nil || again != addr {
			t.Fatalf("re-encoded request reads %q, %v", again, err)
		}
	})
}

func FuzzReadTCPResponse(f *testing.F) {
	b, _ := appendTCPResponse(nil, false, "refused", 5)
	f.Add(b)
	b, _ = appendTCPResponse(nil, true, "", 0)
	f.Add(b)
	f.Add([]byte{0, 0x48, 0x01})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		ok, msg, err := readTCPResponse(r)
		if err != nil {
			return
		}
		if len(msg) > maxMessageLen {
			t.Fatalf("accepted a %d-byte message", len(msg))
		}
		if ok != (in[0] == 0) {
			t.Fatalf("status %d read as ok=%v", in[0], ok)
		}
	})
}

func FuzzParseUDPMessage(f *testing.F) {
	f.Add(appendUDPMessage(nil, &udpMessage{SessionID: 1, FragCount: 1, Addr: []byte("1.1.1.1:53"), Payload: []byte("q")}))
	f.Add(appendUDPMessage(nil, &udpMessage{SessionID: 9, PacketID: 4, FragID: 1, FragCount: 3, Addr: []byte("[::1]:5"), Payload: []byte("frag")}))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 1, 0x7f})
	f.Fuzz(func(t *testing.T, in []byte) {
		var m udpMessage
		if err := parseUDPMessage(in, &m); err != nil {
			return
		}
		if m.FragID >= m.FragCount || len(m.Addr) > maxAddressLen {
			t.Fatalf("accepted %+v", m)
		}
		// A parsed message encodes to a canonical form that parses back
		// to the same fields.
		out := appendUDPMessage(nil, &m)
		var m2 udpMessage
		if err := parseUDPMessage(out, &m2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m2.Addr, m.Addr) || !bytes.Equal(m2.Payload, m.Payload) || m2.SessionID != m.SessionID {
			t.Fatalf("re-parse %+v != %+v", m2, m)
		}
		// And the defragmenter takes anything the parser accepts.
		var d defragger
		d.feed(&m)
	})
}
